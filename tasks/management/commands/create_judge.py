from pathlib import Path

from django.core.management.base import BaseCommand

from evalsite.files import definition_problems, definition_text
from evalsite.text import counted
from tasks.campaigns.definition import DefinitionError
from tasks.judges.definition import judge_create, judge_definition_load


class Command(BaseCommand):
    help = "Create a judge from a definition file (JSON or YAML); nothing is created on an error."

    def add_arguments(self, parser):
        parser.add_argument("file", help="judge definition, .json or .yaml")

    def handle(self, *args, **options):
        path = Path(options["file"])
        text = definition_text(path)
        try:
            judge = judge_create(definition=judge_definition_load(text, filename=path.name))
        except DefinitionError as exc:
            raise definition_problems(path, exc.errors) from None
        swap = ", and again in reverse order" if judge.position_swap else ""
        self.stdout.write(
            f"Created judge {judge.name} ({judge.provider} {judge.model}): "
            f"{counted(judge.samples, 'sample')} per item{swap}, "
            f"at most {judge.max_concurrency} calls at once"
        )
