from pathlib import Path

from django.core.management.base import BaseCommand

from evalsite.files import definition_problems, definition_text
from tasks.campaigns.definition import DefinitionError, campaign_create, campaign_definition_load


class Command(BaseCommand):
    help = "Create a campaign from a definition file (JSON or YAML)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="campaign definition, .json or .yaml")

    def handle(self, *args, **options):
        path = Path(options["file"])
        text = definition_text(path)
        try:
            definition = campaign_definition_load(text, filename=path.name)
            campaign, warnings = campaign_create(definition=definition)
        except DefinitionError as exc:
            raise definition_problems(path, exc.errors) from None
        for warning in warnings:
            self.stderr.write(f"warning: {warning}")
        contenders = campaign.contenders.count()
        tasks = campaign.testset.tasks.count()
        self.stdout.write(
            f"Created campaign {campaign.slug} on {campaign.testset}: {tasks} tasks x {contenders} contenders x "
            f"{campaign.samples_per_task} samples = {campaign.generations.count()} generations"
        )
