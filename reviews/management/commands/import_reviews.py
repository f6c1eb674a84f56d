from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from reviews.records import FORMATS, RecordImportError, reviews_import
from tasks.models import Campaign


class Command(BaseCommand):
    help = "Import review records (JSONL or CSV) into a campaign; all or nothing, idempotent."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument(
            "--format", choices=FORMATS, help="default: from the file name or content"
        )

    def handle(self, *, file, campaign, format, **options):
        try:
            campaign_obj = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"no campaign {campaign!r}") from None
        path = Path(file)
        try:
            data = path.read_bytes()
        except OSError as exc:  # missing, a directory, no permission, ...
            raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        try:
            summary = reviews_import(
                campaign=campaign_obj, data=data, fmt=format, filename=path.name
            )
        except RecordImportError as exc:
            for message in exc.messages():
                self.stderr.write(message)
            shown = (
                f" (the first {len(exc.errors)} are listed)" if exc.count > len(exc.errors) else ""
            )
            raise CommandError(
                f"nothing imported: {counted(exc.count, 'problem')} in {path.name}{shown}"
            ) from None
        self.stdout.write(
            f"Imported {counted(summary.reviews_created, 'review')} on "
            f"{counted(summary.items_settled, 'item')} ({summary.items_created} new, "
            f"{counted(summary.reviews_unchanged, 'review')} already present, "
            f"{counted(len(summary.judges_created), 'new judge account')}); "
            f"{counted(summary.arbitrations_created, 'arbitration')} replayed, "
            f"{summary.arbitrations_unchanged} already present."
        )
