"""Reads shaped for the test-set screens and API."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import CharField, Count, Q, QuerySet
from django.db.models.functions import Cast
from django.http import Http404
from django.shortcuts import get_object_or_404

from tasks.intake.conversation import conversation_values
from tasks.intake.parse import FIELDS, JSON_COLUMNS
from tasks.models import CaseType, Task, TestSet, Tier

TASKS_PER_PAGE = 50
EXPORT_FIELDS = FIELDS


def testset_list() -> QuerySet[TestSet]:
    return (
        TestSet.objects.select_related("created_by", "pii_decided_by")
        .annotate(
            category_count=Count("tasks__category", distinct=True),
            campaign_count=Count("campaigns", distinct=True),
        )
        .order_by("name", "-version")
    )


def testset_get(*, name: str, version: int | None = None) -> TestSet:
    """A version of a test set (the latest when version is None), or 404."""
    qs = TestSet.objects.select_related("created_by", "pii_decided_by").filter(name=name)
    if version is None:
        testset = qs.order_by("-version").first()
        if testset is None:
            raise Http404(f"no test set named {name!r}")
        return testset
    return get_object_or_404(qs, version=version)


def testset_versions(*, name: str) -> QuerySet[TestSet]:
    return TestSet.objects.filter(name=name).order_by("-version")


def testset_counts(*, testset: TestSet) -> dict[str, list[tuple[str, int]]]:
    """Task counts by category (most first), tier and case type (in their natural order)."""
    tasks = Task.objects.filter(testset=testset)
    by = {
        key: dict(tasks.values_list(key).annotate(n=Count("id")).order_by())
        for key in ("category", "tier", "case_type")
    }
    return {
        "category": sorted(by["category"].items(), key=lambda kv: (-kv[1], kv[0])),
        "tier": [(t, by["tier"].get(t, 0)) for t in Tier.values],
        "case_type": [(c, by["case_type"].get(c, 0)) for c in CaseType.values],
    }


@dataclass(frozen=True)
class TaskFilters:
    """The test-set page's filters of its tasks (blank: not filtered)."""

    category: str = ""
    tier: str = ""
    case_type: str = ""
    q: str = ""


def testset_tasks_page(
    *, testset: TestSet, filters: TaskFilters = TaskFilters(), page: int | str = 1
) -> Page:
    category, tier, case_type, q = filters.category, filters.tier, filters.case_type, filters.q
    tasks = Task.objects.filter(testset=testset).order_by("position")
    if category:
        tasks = tasks.filter(category=category)
    if tier:
        tasks = tasks.filter(tier=tier)
    if case_type:
        tasks = tasks.filter(case_type=case_type)
    if q:
        # Multi-turn tasks keep their text in the messages JSON: search its text form too.
        tasks = tasks.annotate(messages_text=Cast("messages", CharField())).filter(
            Q(external_id__icontains=q)
            | Q(prompt__icontains=q)
            | Q(reference__icontains=q)
            | Q(messages_text__icontains=q)
        )
    return Paginator(tasks, TASKS_PER_PAGE).get_page(page)


def testset_export_rows(*, testset: TestSet) -> Iterator[dict]:
    """The tasks as intake-format dicts (re-importable), in file order, streamed."""
    for task in Task.objects.filter(testset=testset).order_by("position").iterator(chunk_size=2000):
        row = {
            "external_id": task.external_id,
            "category": task.category,
            "tier": task.tier,
            "case_type": task.case_type,
        }
        if task.messages:
            row["messages"] = task.messages
        elif task.prompt or not task.turns:
            row["prompt"] = task.prompt
        if task.reference:
            row["reference"] = task.reference
        if task.checks:
            row["checks"] = task.checks
        if task.metadata:
            row["metadata"] = task.metadata
        row.update(conversation_values(task))
        yield row


def rows_as_jsonl(rows: Iterable[dict]) -> Iterator[str]:
    """Intake-format dicts as JSONL lines."""
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def rows_as_csv_cells(rows: Iterable[dict]) -> Iterator[list]:
    """Intake-format dicts as CSV cells in EXPORT_FIELDS order (JSON columns as JSON text)."""
    for row in rows:
        yield [
            json.dumps(row[f], ensure_ascii=False)
            if f in JSON_COLUMNS and f in row
            else row.get(f, "")
            for f in EXPORT_FIELDS
        ]


def testset_as_dict(testset: TestSet, *, counts: bool = False) -> dict:
    """The API shape of a test set."""
    data = {
        "name": testset.name,
        "version": testset.version,
        "checksum": testset.checksum,
        "tasks": testset.task_count,
        "frozen": testset.frozen,
        "source_filename": testset.source_filename,
        "created_at": testset.created_at.isoformat(),
        "created_by": testset.created_by.get_username() if testset.created_by else None,
        "personal_data": testset.pii_decision(),
    }
    if counts:
        data["counts"] = {k: dict(v) for k, v in testset_counts(testset=testset).items()}
    return data
