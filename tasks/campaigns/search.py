"""Text search of a campaign's tasks and outputs, for its leads and admins.

PostgreSQL: full-text search (websearch syntax: words, "a phrase", -not, or) over each
task's prompt, messages, turns and reference and each output's text and transcript, with the
'simple' configuration (no stemming: ids, code and model output are not English prose), best
match first. Elsewhere (SQLite): a plain case-insensitive scan for the whole text.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast

from tasks.models import Campaign, Generation, Task

SEARCH_LIMIT = 50
SNIPPET_CHARS = 220
MAX_QUERY_CHARS = 200
TEXT_FIELDS = frozenset({"prompt", "reference", "output"})  # the others are JSON


@dataclass(frozen=True)
class SearchResults:
    query: str
    tasks: list[dict]
    outputs: list[dict]
    full_text: bool  # PostgreSQL's full-text search, else a plain scan
    more_tasks: bool
    more_outputs: bool


def campaign_search(*, campaign: Campaign, query: str) -> SearchResults:
    """Tasks of the campaign's test set and its done outputs that match `query`, up to
    SEARCH_LIMIT of each (with whether there were more)."""
    query = " ".join((query or "").split())[:MAX_QUERY_CHARS]
    full_text = connection.vendor == "postgresql"
    if not query:
        return SearchResults("", [], [], full_text, False, False)
    tasks = Task.objects.filter(testset_id=campaign.testset_id)
    outputs = Generation.objects.filter(
        campaign=campaign, status=Generation.Status.DONE
    ).select_related("contender", "task")
    task_fields = ("prompt", "reference", "messages", "turns")
    output_fields = ("output", "transcript")
    if full_text:
        tasks = _full_text(tasks, task_fields, query)
        outputs = _full_text(outputs, output_fields, query)
    else:
        tasks = _scan(tasks, task_fields, query).order_by("position")
        outputs = _scan(outputs, output_fields, query).order_by("task__position", "pk")
    found_tasks = list(tasks[: SEARCH_LIMIT + 1])
    found_outputs = list(outputs[: SEARCH_LIMIT + 1])
    return SearchResults(
        query=query,
        tasks=[_task_row(t, query) for t in found_tasks[:SEARCH_LIMIT]],
        outputs=[_output_row(g, query) for g in found_outputs[:SEARCH_LIMIT]],
        full_text=full_text,
        more_tasks=len(found_tasks) > SEARCH_LIMIT,
        more_outputs=len(found_outputs) > SEARCH_LIMIT,
    )


def _text(field: str):
    # JSON fields (messages, turns, transcripts) are searched as their JSON text.
    return Cast(field, TextField())


def _full_text(qs: QuerySet, fields: tuple[str, ...], query: str) -> QuerySet:
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    vector = SearchVector(*(_text(f) for f in fields), config="simple")
    search = SearchQuery(query, search_type="websearch", config="simple")
    return (
        qs.annotate(search=vector, rank=SearchRank(vector, search))
        .filter(search=search)
        .order_by("-rank", "pk")
    )


def _scan(qs: QuerySet, fields: tuple[str, ...], query: str) -> QuerySet:
    json_fields = [f for f in fields if f not in TEXT_FIELDS]
    qs = qs.annotate(**{f"{f}_text": _text(f) for f in json_fields})
    condition = Q()
    for f in fields:
        name = f if f in TEXT_FIELDS else f"{f}_text"
        condition |= Q(**{f"{name}__icontains": query})
    return qs.filter(condition)


def _snippet(text: str, query: str) -> str:
    """The text around the first word of the query that it contains."""
    flat = " ".join(str(text or "").split())
    lower = flat.lower()
    at = -1
    for word in [query, *query.replace('"', " ").split()]:
        word = word.strip("-").lower()
        if word and (at := lower.find(word)) >= 0:
            break
    if at < 0 or len(flat) <= SNIPPET_CHARS:
        return flat[:SNIPPET_CHARS] + ("…" if len(flat) > SNIPPET_CHARS else "")
    start = max(0, at - SNIPPET_CHARS // 3)
    return ("…" if start else "") + flat[start : start + SNIPPET_CHARS] + "…"


def _task_text(task: Task) -> str:
    parts = [task.prompt or ""]
    parts += [str(m.get("content") or "") for m in task.messages or [] if isinstance(m, dict)]
    parts += [t for t in task.turns or [] if isinstance(t, str)]
    parts.append(task.reference or "")
    return " ".join(p for p in parts if p)


def _task_row(task: Task, query: str) -> dict:
    return {
        "id": task.external_id,
        "category": task.category,
        "snippet": _snippet(_task_text(task), query),
    }


def _output_row(generation: Generation, query: str) -> dict:
    return {
        "task": generation.task.external_id,
        "contender": generation.contender.name,
        "sample": generation.sample_index,
        "snippet": _snippet(generation.output or str(generation.transcript or ""), query),
    }
