"""Writes for the tasks app. Test sets: import (all-or-nothing, versioned) and delete."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Max

from .images.store import images_store
from .intake import ParsedTestSet, parse_testset, testset_name_problem
from .models import TestSet
from .sql import tasks_insert


class TestSetImportError(Exception):
    """The file (or the name) has problems; nothing was written."""

    __test__ = False

    def __init__(self, parsed: ParsedTestSet):
        self.parsed = parsed
        self.errors = parsed.error_report()
        noun = "problem" if parsed.error_count == 1 else "problems"
        super().__init__(f"{parsed.error_count} {noun} found; nothing was imported")


class TestSetFrozen(Exception):
    __test__ = False


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
        return (
            f"imported {ts.name} v{ts.version}: {ts.task_count} tasks in {categories} "
            f"{'category' if categories == 1 else 'categories'}"
        )


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


def testset_import(
    *, name: str, data: bytes, filename: str = "", user=None, format: str | None = None
) -> ImportResult:
    """Import a JSONL/CSV test set as a new version of `name`, all-or-nothing.

    Identical content (same checksum as any existing version of `name`) writes nothing.
    Raises TestSetImportError listing every problem.
    """
    parsed = testset_validate(name=name, data=data, filename=filename, format=format)
    if not parsed.ok:
        raise TestSetImportError(parsed)
    checksum = parsed.checksum
    # Two concurrent imports of one name race for the next version number; the unique
    # (name, version) constraint decides and the loser retries with a fresh read.
    for attempt in range(5):
        try:
            with transaction.atomic():
                return _write(
                    name=name, parsed=parsed, checksum=checksum, filename=filename, user=user
                )
        except IntegrityError:
            if attempt == 4 or not TestSet.objects.filter(name=name).exists():
                raise
    raise AssertionError("unreachable")


def _write(*, name: str, parsed: ParsedTestSet, checksum: str, filename: str, user) -> ImportResult:
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


@transaction.atomic
def testset_delete(*, testset: TestSet) -> None:
    """Delete a test set that no campaign uses. Frozen sets are history: refuse."""
    locked = TestSet.objects.select_for_update().filter(pk=testset.pk).first()
    if locked is None:
        return
    if locked.frozen or locked.campaigns.exists():
        raise TestSetFrozen(f"{locked} is frozen (a campaign uses it) and cannot be deleted")
    locked.delete()
