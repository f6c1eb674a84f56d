"""The review page's columns of each model, read by raw queries and turned into instances.

Shared by the page's query (selectors) and the claim's item read (services), which reads the
same task and outputs under its item lock so the API's answer needs no query of its own.
"""

from __future__ import annotations

from functools import cache

from django.db.models import Model

from evalsite import rawrows
from tasks.models import Campaign, Generation, Task

from .models import Assignment, ItemOutput, ReviewItem

# Only the columns the page uses; the others are deferred (loaded on access, never on the page).
PAGE_FIELDS = {
    Assignment: None,  # all
    Campaign: frozenset(
        {
            "id",
            "slug",
            "name",
            "status",
            "mode",
            "rubric",
            "redact",
            "show_reference",
            "lease_minutes",
            "instructions",
        }
    ),
    Task: frozenset({"id", "category", "prompt", "messages", "reference"}),
    Generation: frozenset({"id", "output", "identity_leak"}),
}


def fields(model: type[Model]) -> tuple:
    return rawrows.fields_of(model, PAGE_FIELDS[model])


def columns(alias: str, model: type[Model]) -> str:
    return rawrows.columns(alias, model, PAGE_FIELDS[model])


def instance(model: type[Model], values) -> Model:
    """A model instance (the page's fields) from raw column values, converted as the ORM does."""
    return rawrows.instance(model, values, PAGE_FIELDS[model])


def generations(rows: list[tuple], start: int) -> dict[int, Generation]:
    """{ItemOutput pk: Generation} from the rows' columns `start` (o.id) onwards."""
    end = start + 1 + len(fields(Generation))
    return {
        row[start]: instance(Generation, row[start + 1 : end])
        for row in rows
        if row[start] is not None
    }


def task_and_generations(rows: list[tuple], start: int) -> tuple[Task, dict[int, Generation]]:
    """The task (on every row from column `start`) and the outputs after it."""
    width = len(fields(Task))
    return instance(Task, rows[0][start : start + width]), generations(rows, start + width)


def _task_outputs(join: str, item: str = "%s") -> str:
    """The task's and outputs' page columns (from column 0: task, o.id, output) and the FROM
    clause of an item's rows, one per output; `join` is the outputs' JOIN ("JOIN" or "LEFT
    JOIN": an item without outputs still gives its task); `item` the item's id in SQL."""
    i, t, o, g = (rawrows.table(m) for m in (ReviewItem, Task, ItemOutput, Generation))
    return (
        f"{columns('t', Task)}, o.id, {columns('g', Generation)} FROM {i} i "
        f"JOIN {t} t ON t.id = i.task_id {join} {o} o ON o.item_id = i.id "
        f"{join} {g} g ON g.id = o.generation_id WHERE i.id = {item}"
    )


def task_outputs_of(item: str) -> str:
    """A subquery of the task and outputs (one row per output, as `task_and_generations`
    reads them) of the item whose id is the SQL expression `item`."""
    return f"SELECT {_task_outputs('JOIN', item)}"


@cache
def item_outputs_sql() -> str:
    """An item's task on every row, one row per output (review_page_data's, for an item)."""
    return f"SELECT {_task_outputs('LEFT JOIN')}"


@cache
def claim_item_sql() -> str:
    """An item's assignments (kind 'a': id, reviewer, state, slot) and outputs (kind 'o': id,
    contender, then from column 5 the task and the output as the page reads them), in one
    query: the claim reads both under its item lock, and its answer needs no query of its own."""
    blanks = ", ".join(["NULL"] * (len(fields(Task)) + 1 + len(fields(Generation))))
    return (
        f"SELECT 'a', a.id, a.reviewer_id, a.state, a.slot, {blanks} "
        f"FROM {rawrows.table(Assignment)} a WHERE a.item_id = %s UNION ALL "
        f"SELECT 'o', o.id, g.contender_id, '', 0, {_task_outputs('JOIN')}"
    )
