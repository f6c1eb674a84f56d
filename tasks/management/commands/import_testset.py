import getpass
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from tasks.intake.parse import oversize_result
from tasks.intake.pii import PII_CHOICES
from tasks.intake.services import PiiChoice, TestSetImportError, TestSetPiiFound, testset_import


class Command(BaseCommand):
    help = "Import a JSONL or CSV test set as a new version of NAME (all-or-nothing)."
    # System checks import the whole URLconf (and with it every view module and its scientific
    # stack); a data import needs none of it, and skipping them saves seconds per run.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to a .jsonl or .csv file")
        parser.add_argument("--name", required=True, help="test-set name, e.g. support-v3")
        parser.add_argument(
            "--format", choices=["jsonl", "csv"], help="override detection by file extension"
        )
        parser.add_argument(
            "--pii",
            choices=PII_CHOICES,
            default="refuse",
            help="personal data in the file (emails, phone numbers, card numbers, IBANs, "
            "national ids, postal addresses): refuse the file and list it (default), mask it "
            "with placeholders (the same value, the same placeholder), or keep it as it is",
        )

    def handle(self, *args, file: str, name: str, format: str | None = None, pii: str, **options):
        path = Path(file)
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        # Size first: never read a file we are going to refuse.
        too_big = oversize_result(size, filename=path.name)
        if too_big is not None:
            self._fail(path, too_big.error_report(), too_big.error_count)
        try:
            data = path.read_bytes()
        except OSError as exc:  # a directory, no permission, ...
            raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        # Who chose to mask or keep is recorded: the command has no account, so its OS user.
        choice = PiiChoice(action=pii, via=f"import_testset --pii {pii} (user {_os_user()})")
        try:
            result = testset_import(
                name=name, data=data, filename=path.name, format=format, pii=choice
            )
        except TestSetPiiFound as exc:
            for line in exc.errors:
                self.stderr.write(line)
            raise CommandError(
                f"{path.name}: personal data in {counted(exc.scan.count, 'place')}; nothing was "
                "imported. Remove it, or run again with --pii mask (placeholders) or --pii keep."
            ) from None
        except TestSetImportError as exc:
            self._fail(path, exc.errors, exc.parsed.error_count)
        ts = result.testset
        if not result.created:
            self.stdout.write(
                f"{path.name} is identical to {ts.name} v{ts.version}; nothing was imported."
            )
            return
        counts = result.parsed.counts()
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {ts.name} v{ts.version}: {counted(ts.task_count, 'task')}, "
                f"{counted(len(counts['category']), 'category', 'categories')}, "
                f"checksum {ts.checksum[:12]}"
            )
        )
        for key in ("tier", "case_type", "category"):
            parts = ", ".join(f"{k} {v}" for k, v in sorted(counts[key].items()))
            self.stdout.write(f"  {key + ':':<10} {parts}")
        if ts.pii_count:
            done = (
                "masked" if ts.pii_action == "mask" else "kept as it was (your choice is recorded)"
            )
            self.stdout.write(f"  personal data: {counted(ts.pii_count, 'piece')} {done}")

    def _fail(self, path: Path, errors: list[str], count: int) -> None:
        for line in errors:
            self.stderr.write(line)
        raise CommandError(f"{path.name}: {counted(count, 'problem')}; nothing was imported.")


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in a bare container
        return "unknown"
