from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from tasks.generation.outputs_import import outputs_import
from tasks.generation.providers.imported import ImportErrors
from tasks.models import Campaign


class Command(BaseCommand):
    help = "Import outputs (JSONL) for an 'imported' contender of a campaign. All or nothing."

    def add_arguments(self, parser):
        parser.add_argument(
            "file", help='JSONL: {"task_id": "T-1", "sample": 0, "output": "..."} per line'
        )
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--contender", required=True, help="contender name")

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"no campaign {options['campaign']!r}")
        path = Path(options["file"])
        try:
            raw = path.read_bytes()
        except OSError as exc:  # missing, a directory, no permission, ...
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        try:
            result = outputs_import(campaign=campaign, contender_name=options["contender"], raw=raw)
        except ImportErrors as exc:
            raise CommandError(
                f"{path}: nothing imported, {counted(exc.count, 'problem')}:\n"
                + "\n".join(f"  {e}" for e in exc.errors)
            ) from None
        self.stdout.write(
            f"Imported {counted(result['stored'], 'output')} for {options['contender']} "
            f"({result['unchanged']} unchanged, {result['missing']} still missing); "
            f"{counted(result['items_ready'], 'review item')} became ready."
        )
