from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from tasks.models import Monitor
from tasks.monitors.definition import monitor_archive


class Command(BaseCommand):
    help = (
        "Delete a monitor: it leaves the pages, the API and the schedule; its runs, their "
        "outputs and alerts are kept (compare SLUG#N still reads them)."
    )

    def add_arguments(self, parser):
        parser.add_argument("monitor", help="monitor slug")

    def handle(self, *args, **options):
        monitor = Monitor.objects.filter(slug=options["monitor"], archived_at=None).first()
        if monitor is None:
            raise CommandError(f"no monitor {options['monitor']!r}")
        monitor_archive(monitor=monitor)
        runs = monitor.runs.count()
        self.stdout.write(f"Deleted monitor {monitor.slug} ({counted(runs, 'run')} kept).")
