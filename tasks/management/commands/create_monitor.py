from pathlib import Path

from django.core.management.base import BaseCommand

from evalsite.files import definition_problems, definition_text
from evalsite.text import counted
from tasks.campaigns.definition import DefinitionError
from tasks.monitors.definition import monitor_create, monitor_definition_load


class Command(BaseCommand):
    help = "Create a monitor from a definition file (JSON or YAML); nothing is created on an error."

    def add_arguments(self, parser):
        parser.add_argument("file", help="monitor definition, .json or .yaml")

    def handle(self, *args, **options):
        path = Path(options["file"])
        text = definition_text(path)
        try:
            monitor = monitor_create(definition=monitor_definition_load(text, filename=path.name))
        except DefinitionError as exc:
            raise definition_problems(path, exc.errors) from None
        schedule = f"schedule {monitor.schedule!r} (UTC)" if monitor.schedule else "on demand"
        self.stdout.write(
            f"Created monitor {monitor.slug} on {monitor.testset}: "
            f"{counted(monitor.contenders.count(), 'contender')} x "
            f"{monitor.samples_per_task} samples, {schedule}"
        )
