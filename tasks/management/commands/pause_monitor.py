from django.core.management.base import BaseCommand, CommandError

from tasks.models import Monitor
from tasks.monitors.definition import monitor_pause


class Command(BaseCommand):
    help = (
        "Pause a monitor (its schedule starts nothing; runs by hand still work), or resume "
        "it with --resume."
    )

    def add_arguments(self, parser):
        parser.add_argument("monitor", help="monitor slug")
        parser.add_argument("--resume", action="store_true", help="resume its schedule")

    def handle(self, *args, **options):
        monitor = Monitor.objects.filter(slug=options["monitor"], archived_at=None).first()
        if monitor is None:
            raise CommandError(f"no monitor {options['monitor']!r}")
        monitor_pause(monitor=monitor, paused=not options["resume"])
        state = "resumed" if options["resume"] else "paused"
        schedule = f"schedule {monitor.schedule!r}" if monitor.schedule else "no schedule"
        self.stdout.write(f"Monitor {monitor.slug} {state} ({schedule}).")
