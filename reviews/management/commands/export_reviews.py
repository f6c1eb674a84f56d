import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

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
                _write_whole(Path(output), chunks)
            except OSError as exc:  # no such directory, a directory, no permission, disk full
                raise CommandError(f"cannot write {output}: {exc.strerror}") from None
        else:
            try:
                for chunk in chunks:
                    self.stdout.write(chunk, ending="")
            except BrokenPipeError:  # e.g. piped into `head`: the reader has what it wanted
                pass


def _write_whole(path: Path, chunks: Iterable[str]) -> None:
    """Write to a temporary file beside `path` and rename it into place, so a failure (a full
    disk, a database error mid-export) leaves no half-written export, nor spoils an old one.
    Not a regular file (/dev/stdout, a pipe): written directly, there is nothing to rename."""
    if path.exists() and not path.is_file() and not path.is_dir():
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(chunks)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        # newline="" keeps the CSV's CRLF row endings exactly as written.
        with open(fd, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(chunks)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the export from the group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
