from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from tasks.campaigns import DefinitionError, campaign_create, campaign_definition_load


class Command(BaseCommand):
    help = "Create a campaign from a definition file (JSON or YAML)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="campaign definition, .json or .yaml")

    def handle(self, *args, **options):
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:  # missing, a directory, no permission, ...
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise CommandError(
                f"cannot read {path}: not UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
        try:
            definition = campaign_definition_load(text, filename=path.name)
            campaign, warnings = campaign_create(definition=definition)
        except DefinitionError as exc:
            raise CommandError(
                f"{path}: {counted(len(exc.errors), 'problem')}:\n"
                + "\n".join(f"  {e}" for e in exc.errors)
            ) from None
        for warning in warnings:
            self.stderr.write(f"warning: {warning}")
        contenders = campaign.contenders.count()
        tasks = campaign.testset.tasks.count()
        self.stdout.write(
            f"Created campaign {campaign.slug} on {campaign.testset}: {tasks} tasks x {contenders} contenders x "
            f"{campaign.samples_per_task} samples = {campaign.generations.count()} generations"
        )
