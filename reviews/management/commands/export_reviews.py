from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.files import write_whole
from reviews.records import FORMATS, records_export
from tasks.models import Campaign


class Command(BaseCommand):
    help = "Export a campaign's review records as JSONL or CSV (blind unless --unblind)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--format", choices=FORMATS, default="jsonl")
        parser.add_argument(
            "--unblind", action="store_true", help="include the model behind each label"
        )
        parser.add_argument("--output", "-o", help="write to this file instead of standard output")

    def handle(self, *, campaign, format, unblind, output, **options):
        try:
            campaign_obj = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"no campaign {campaign!r}") from None
        chunks = records_export(campaign=campaign_obj, fmt=format, unblind=unblind)
        if output:
            try:
                write_whole(Path(output), chunks)
            except OSError as exc:  # no such directory, a directory, no permission, disk full
                raise CommandError(f"cannot write {output}: {exc.strerror}") from None
        else:
            try:
                for chunk in chunks:
                    self.stdout.write(chunk, ending="")
            except BrokenPipeError:  # e.g. piped into `head`: the reader has what it wanted
                pass
