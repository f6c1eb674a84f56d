"""Writes for the tasks app. Test sets: import (all-or-nothing, versioned) and delete."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Max

from evalsite.text import counted
from tasks.images.store import images_store
from tasks.intake.parse import ParsedTestSet, parse_testset, testset_name_problem
from tasks.intake.pii import PII_CHOICES, PiiScan, testset_pii_scan
from tasks.intake.sql import tasks_insert
from tasks.models import TestSet


class TestSetImportError(Exception):
    """The file (or the name) has problems; nothing was written."""

    __test__ = False

    def __init__(self, parsed: ParsedTestSet):
        self.parsed = parsed
        self.errors = parsed.error_report()
        noun = "problem" if parsed.error_count == 1 else "problems"
        super().__init__(f"{parsed.error_count} {noun} found; nothing was imported")


class TestSetPiiFound(TestSetImportError):
    """The file holds personal data and nobody chose to mask or keep it; nothing was written."""

    def __init__(self, parsed: ParsedTestSet, scan: PiiScan):
        self.scan = scan
        super().__init__(parsed)
        self.args = (
            f"personal data found in {scan.count} "
            f"{'place' if scan.count == 1 else 'places'}; nothing was imported "
            "(mask it or keep it, or remove it from the file)",
        )


class TestSetFrozen(Exception):
    __test__ = False


@dataclass(frozen=True)
class PiiChoice:
    """What an import does with personal data it finds, and where that was chosen."""

    action: str = "refuse"  # one of PII_CHOICES
    via: str = ""  # upload page, API, import_testset command (who ran it)

    def __post_init__(self) -> None:
        if self.action not in PII_CHOICES:
            raise ValueError(f"pii must be one of {', '.join(PII_CHOICES)}")


@dataclass
class ImportResult:
    testset: TestSet
    created: bool  # False: identical to an existing version, nothing written
    parsed: ParsedTestSet

    @property
    def message(self) -> str:
        ts = self.testset
        if not self.created:
            return f"identical to {ts.name} v{ts.version}; nothing was imported"
        categories = len(self.parsed.counts()["category"])
        message = (
            f"imported {ts.name} v{ts.version}: {ts.task_count} tasks in {categories} "
            f"{'category' if categories == 1 else 'categories'}"
        )
        if ts.pii_count:
            done = "masked" if ts.pii_action == "mask" else "kept as uploaded"
            message += f"; {counted(ts.pii_count, 'piece')} of personal data {done}"
        return message


def testset_validate(
    *, name: str, data: bytes, filename: str = "", format: str | None = None
) -> ParsedTestSet:
    """Parse and validate without writing; name problems are reported like row problems."""
    parsed = parse_testset(data, filename=filename, format=format)
    problem = testset_name_problem(name)
    if problem:
        parsed.errors.insert(0, f"name: {problem}")
        parsed.error_count += 1
    return parsed


def testset_pii(parsed: ParsedTestSet) -> PiiScan:
    """The personal data in a file that validated, by line and field."""
    return testset_pii_scan(parsed.tasks, parsed.lines)


def testset_import(
    *,
    name: str,
    data: bytes,
    filename: str = "",
    user: User | None = None,
    format: str | None = None,
    pii: PiiChoice | None = None,
) -> ImportResult:
    """Import a JSONL/CSV test set as a new version of `name`, all-or-nothing.

    Identical content (same checksum as any existing version of `name`) writes nothing.
    Raises TestSetImportError listing every problem; TestSetPiiFound when the file holds
    personal data and `pii` says refuse. Masking stores each value's placeholder instead
    (the checksum is the masked set's).
    """
    parsed = testset_validate(name=name, data=data, filename=filename, format=format)
    if not parsed.ok:
        raise TestSetImportError(parsed)
    pii = pii or PiiChoice()
    scan = testset_pii(parsed)
    if scan.count and pii.action == "refuse":
        for finding in scan.findings:
            parsed.add(finding.line, finding.field, finding.problem())
        raise TestSetPiiFound(parsed, scan)
    if scan.count and pii.action == "mask":
        parsed.tasks = scan.masked(parsed.tasks)
    checksum = parsed.checksum
    # Two concurrent imports of one name race for the next version number; the unique
    # (name, version) constraint decides and the loser retries with a fresh read.
    for attempt in range(5):
        try:
            with transaction.atomic():
                result = _write(
                    name=name, parsed=parsed, checksum=checksum, filename=filename, user=user
                )
                if result.created and scan.count:
                    _record_pii(result.testset, scan=scan, pii=pii, user=user)
                return result
        except IntegrityError:
            if attempt == 4 or not TestSet.objects.filter(name=name).exists():
                raise
    raise AssertionError("unreachable")


def _write(
    *, name: str, parsed: ParsedTestSet, checksum: str, filename: str, user: User | None
) -> ImportResult:
    same = TestSet.objects.filter(name=name, checksum=checksum).order_by("version").first()
    if same is not None:
        return ImportResult(testset=same, created=False, parsed=parsed)
    latest = TestSet.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0
    testset = TestSet.objects.create(
        name=name,
        version=latest + 1,
        checksum=checksum,
        source_filename=filename[:255],
        task_count=len(parsed.tasks),
        created_by=user,
    )
    # Written before the rows commit: an image whose rows roll back is an orphan file under
    # a content hash, harmless and reused by the next import holding it.
    images_store(parsed.images)
    tasks_insert(testset=testset, tasks=parsed.tasks)
    return ImportResult(testset=testset, created=True, parsed=parsed)


def _record_pii(testset: TestSet, *, scan: PiiScan, pii: PiiChoice, user: User | None) -> None:
    testset.pii_action = pii.action
    testset.pii_count = scan.count
    testset.pii_decided_by = user
    testset.pii_decided_via = pii.via[:200]
    testset.save(update_fields=["pii_action", "pii_count", "pii_decided_by", "pii_decided_via"])


@transaction.atomic
def testset_delete(*, testset: TestSet) -> None:
    """Delete a test set that no campaign uses. Frozen sets are history: refuse."""
    locked = TestSet.objects.select_for_update().filter(pk=testset.pk).first()
    if locked is None:
        return
    if locked.frozen or locked.campaigns.exists():
        raise TestSetFrozen(f"{locked} is frozen (a campaign uses it) and cannot be deleted")
    locked.delete()
