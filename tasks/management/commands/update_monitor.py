import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.files import definition_problems
from tasks.campaigns.definition import DefinitionError
from tasks.models import Monitor
from tasks.monitors.definition import monitor_definition, monitor_definition_load, monitor_update


class Command(BaseCommand):
    help = (
        "Change a monitor from a file (JSON or YAML) holding the fields to change: name, "
        "contenders, samples_per_task, schedule, baseline, thresholds, alerts, paused (a whole "
        "definition is accepted when its slug and test set are the monitor's). Every problem "
        "is listed and nothing changes then (exit 1). Prints the definition as changed."
    )

    def add_arguments(self, parser):
        parser.add_argument("monitor", help="monitor slug")
        parser.add_argument("file", help="the fields to change, .json or .yaml")

    def handle(self, *args, **options):
        monitor = Monitor.objects.filter(slug=options["monitor"], archived_at=None).first()
        if monitor is None:
            raise CommandError(f"no monitor {options['monitor']!r}")
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        try:
            changes = monitor_definition_load(text, filename=path.name)
            monitor = monitor_update(monitor=monitor, changes=changes)
        except DefinitionError as exc:
            raise definition_problems(path, exc.errors) from None
        self.stdout.write(
            json.dumps({**monitor_definition(monitor), "paused": monitor.paused}, indent=2)
        )
        self.stderr.write(f"Updated monitor {monitor.slug}.")
