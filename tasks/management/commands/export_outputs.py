from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.files import write_whole
from tasks.generation.outputs_export import outputs_jsonl
from tasks.models import Campaign


class Command(BaseCommand):
    help = (
        "Export a campaign's finished outputs with their text as JSONL, in the format "
        "import_outputs takes (names the contender of every output: for admins and leads)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--contender", help="only this contender's outputs")
        parser.add_argument("--output", "-o", help="write to this file instead of standard output")

    def handle(self, *, campaign, contender, output, **options):
        campaign_obj = Campaign.objects.filter(slug=campaign).first()
        if campaign_obj is None:
            raise CommandError(f"no campaign {campaign!r}")
        if contender is not None and not campaign_obj.contenders.filter(name=contender).exists():
            raise CommandError(f"contender {contender!r} is not part of campaign {campaign}")
        chunks = outputs_jsonl(campaign=campaign_obj, contender=contender)
        if output:
            try:
                write_whole(Path(output), chunks)
            except OSError as exc:  # no such directory, a directory, no permission, disk full
                raise CommandError(f"cannot write {output}: {exc.strerror}") from None
            return
        try:
            for chunk in chunks:
                self.stdout.write(chunk, ending="")
        except BrokenPipeError:  # e.g. piped into `head`: the reader has what it wanted
            pass
