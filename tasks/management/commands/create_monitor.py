from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from tasks.campaigns import DefinitionError
from tasks.monitors.definition import monitor_create, monitor_definition_load


class Command(BaseCommand):
    help = "Create a monitor from a definition file (JSON or YAML); nothing is created on an error."

    def add_arguments(self, parser):
        parser.add_argument("file", help="monitor definition, .json or .yaml")

    def handle(self, *args, **options):
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise CommandError(
                f"cannot read {path}: not UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
        try:
            monitor = monitor_create(definition=monitor_definition_load(text, filename=path.name))
        except DefinitionError as exc:
            raise CommandError(
                f"{path}: {counted(len(exc.errors), 'problem')}:\n"
                + "\n".join(f"  {e}" for e in exc.errors)
            ) from None
        schedule = f"schedule {monitor.schedule!r} (UTC)" if monitor.schedule else "on demand"
        self.stdout.write(
            f"Created monitor {monitor.slug} on {monitor.testset}: "
            f"{counted(monitor.contenders.count(), 'contender')} x "
            f"{monitor.samples_per_task} samples, {schedule}"
        )
