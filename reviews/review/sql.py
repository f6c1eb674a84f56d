"""The raw SQL of the reviews app (docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md),
each statement with a test that
compares it with its ORM twin on the same data (tests/reviews/test_sql.py).

Kept because correctness needs SQL:

- `db_now`: the database's clock (the ORM compares with it, `Now()`, but cannot read it);
- `claim_candidate`: the claim's SELECT ... FOR NO KEY UPDATE SKIP LOCKED, with a planner
  fence the ORM cannot write (its twin: `services.claim.candidates`);
- `review_store_fenced` (PostgreSQL): the submit's fence and, only if it matched, the review,
  its scores and the item's count, all or nothing in one statement (its twin, and SQLite's
  path, is the ORM sequence in `services.submit`).

Kept because the review loop's budget needs them (every claim, page and submit runs them; the
ORM's query building costs several times what the database spends): `claim_context`,
`item_slots`, `item_outputs`, `review_page`, `submit_assignment` (and the settle's
`item_reviews`, reviews/disputes/sql.py). Written with the ORM they cost more Django CPU per
review than as SQL each time they were measured side by side (docs/decisions/0004 has the
figures). Their rows become model instances as the ORM makes them (`_instance`: the fields'
own converters). Everything else in the app goes through the ORM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from functools import cache, lru_cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Field, Model
from django.utils import timezone

from reviews.models import Assignment, ItemOutput, Review, ReviewerRemoval, ReviewItem, Score
from tasks.models import Campaign, Generation, Task

_WORD = re.compile(r"[a-z_]+")


def literal(*values: str) -> str:
    """Code constants (a model's states) written into the SQL text, comma-separated, instead
    of sent as parameters: PostgreSQL then plans a prepared statement once for them, where a
    state given as a parameter was re-planned whenever the statistics favoured one state.
    Never for values from outside."""
    for value in values:
        if not _WORD.fullmatch(value):
            raise ValueError(f"not a code constant: {value!r}")
    return ", ".join(f"'{value}'" for value in values)


@cache
def _fields(model: type[Model]) -> tuple[Field, ...]:
    """The concrete fields of `model` in model order (Model.from_db expects that order)."""
    return tuple(model._meta.concrete_fields)


def _columns(alias: str, model: type[Model]) -> str:
    qn = connection.ops.quote_name
    return ", ".join(f"{alias}.{qn(f.column)}" for f in _fields(model))


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@lru_cache(maxsize=64)
def _converters(model: type[Model], conn) -> tuple[list[str], list]:
    """(attnames, [(column, converters)]) of `model` on `conn` (Django keeps one connection
    object per thread)."""
    converted = []
    for field in _fields(model):
        col = field.get_col(model._meta.db_table)
        converted.append((col, (*conn.ops.get_db_converters(col), *col.get_db_converters(conn))))
    return [f.attname for f in _fields(model)], converted


def _instance(model: type[Model], values: Sequence) -> Model:
    """A `model` instance from raw column values (as `_columns` listed them), converted as the
    ORM converts them."""
    db = connections[DEFAULT_DB_ALIAS]
    attnames, cols = _converters(model, db)
    converted = []
    for (col, converters), value in zip(cols, values, strict=True):
        for convert in converters:
            value = convert(value, col, db)
        converted.append(value)
    return model.from_db(db.alias, attnames, converted)


def _fetch(statement: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall()


def db_now() -> datetime:
    """The database's clock: several web processes must agree on when a lease ends."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement_timestamp()")
            return cursor.fetchone()[0]
    # Embedded mode: SQLite has no server; it and the web process share this machine's clock.
    return timezone.now()


# The claim's offer order, pass by pass (services.claim.candidates is the same in the ORM):
# items already in review (so pairs complete), then fresh items from the reviewer's offset to
# the end, then wrapping round. (WHERE, ORDER BY); {offset} stands for the reviewer's offset.
PASSES = (
    (
        "i.live_count > 0",
        "i.live_count DESC, CASE WHEN i.shuffle_key >= {offset} THEN 0 ELSE 1 END, i.shuffle_key",
    ),
    ("i.live_count = 0 AND i.shuffle_key >= {offset}", "i.shuffle_key"),
    ("i.live_count = 0 AND i.shuffle_key < {offset}", "i.shuffle_key"),
    ("1 = 1", "i.id"),  # any candidate at all (unlocked: is anything left?)
)


@cache
def _candidate_sql(where: str, order: str, vendor: str, locked: bool) -> str:
    postgresql = vendor == "postgresql"
    where, order = where.replace("{offset}", "%s"), order.replace("{offset}", "%s")
    # "Not yet this reviewer's" is a probe per candidate of the item's own rows (at most a
    # few). OFFSET 0 keeps the planner from turning it into an anti-join and `+ 0` from using
    # the index on the reviewer: either made the plan follow the reviewer's row estimate, and
    # for a reviewer newer than the statistics it read all their assignments once per
    # candidate (the ORM cannot write OFFSET 0: one reason this statement is SQL).
    probe_only = " OFFSET 0" if postgresql else ""
    # SKIP LOCKED: concurrent claims take different items instead of queueing on one.
    lock = " FOR NO KEY UPDATE OF i SKIP LOCKED" if postgresql and locked else ""
    clock = "STATEMENT_TIMESTAMP()" if postgresql else "%s"
    return (
        f"SELECT i.id, i.overlap, i.live_count, i.rotation, {clock} "
        f"FROM {ReviewItem._meta.db_table} i "
        f"WHERE i.campaign_id = %s AND i.ready AND i.state = {literal(ReviewItem.State.OPEN)} "
        f"AND i.live_count < i.overlap AND {where} "
        f"AND NOT EXISTS (SELECT 1 FROM {Assignment._meta.db_table} a WHERE a.item_id = i.id "
        f"AND a.reviewer_id + 0 = %s AND a.state IN ({literal(*Assignment.BLOCKING)}){probe_only}) "
        f"ORDER BY {order}, i.id LIMIT 1{lock}"
    )


def claim_candidate(
    *, campaign_id: int, reviewer_id: int, offset: int, pass_index: int, locked: bool = True
) -> tuple[int, int, int, int, datetime] | None:
    """The first item of pass `pass_index` of PASSES that the reviewer may take, locked on
    PostgreSQL (unless `locked` is False), skipping items another transaction holds:
    (id, overlap, live_count, rotation, the database clock), or None."""
    where, order = PASSES[pass_index]
    params = [] if connection.vendor == "postgresql" else [timezone.now()]
    params += [campaign_id, *[offset] * where.count("{offset}"), reviewer_id]
    params += [offset] * order.count("{offset}")
    with connection.cursor() as cursor:
        cursor.execute(_candidate_sql(where, order, connection.vendor, locked), params)
        row = cursor.fetchone()
    if row is None:
        return None
    *found, clock = row
    if not isinstance(clock, datetime):
        clock = timezone.now()  # SQLite: the clock parameter comes back as text
    return (*found, clock)


@cache
def _claim_context_sql(key: str, vendor: str) -> str:
    now = "STATEMENT_TIMESTAMP()" if vendor == "postgresql" else "%s"
    active = literal(Assignment.State.ACTIVE)
    in_campaign = f"FROM {_table(Assignment)} a WHERE a.campaign_id = c.id"
    named = _table(Campaign.reviewers.through)
    return (
        f"SELECT {_columns('c', Campaign)}, "
        f"EXISTS (SELECT 1 FROM {named} n WHERE n.campaign_id = c.id AND n.user_id = %s), "
        f"EXISTS (SELECT 1 FROM {_table(ReviewerRemoval)} r "
        "WHERE r.campaign_id = c.id AND r.reviewer_id = %s), "
        f"EXISTS (SELECT 1 {in_campaign} AND a.state = {active} AND a.lease_expires_at <= {now}), "
        f"(SELECT a.id {in_campaign} AND a.reviewer_id = %s AND a.state = {active} "
        f"AND a.lease_expires_at > {now} ORDER BY a.created_at, a.id LIMIT 1) "
        f"FROM {_table(Campaign)} c WHERE c.{key} = %s"
    )


def claim_context(
    *, reviewer_id: int, campaign_id: int | None = None, slug: str | None = None
) -> tuple[Campaign | None, bool, bool, bool, int | None]:
    """(the campaign, does its reviewer roster name the reviewer?, reviewer removed?, any
    lapsed lease in the campaign?, the live lease the reviewer already holds or None): what
    every claim asks first, read by the campaign's pk or its slug. Its ORM twin is in
    tests/reviews/test_sql.py."""
    now = [] if connection.vendor == "postgresql" else [timezone.now()]
    key, value = ("slug", slug) if campaign_id is None else ("id", campaign_id)
    params = [reviewer_id, reviewer_id, *now, reviewer_id, *now, value]
    rows = _fetch(_claim_context_sql(key, connection.vendor), params)
    if not rows:
        return None, False, False, False, None
    *values, named, removed, stale, held = rows[0]
    return _instance(Campaign, values), bool(named), bool(removed), bool(stale), held


def item_slots(item_id: int) -> list[tuple[int, int, str, int]]:
    """(id, reviewer, state, slot) of each assignment of an item: the claim's fresh read under
    the item's lock. The ORM twin: Assignment.objects.filter(item_id=...).values_list(...)."""
    return _fetch(
        f"SELECT id, reviewer_id, state, slot FROM {_table(Assignment)} WHERE item_id = %s",
        [item_id],
    )


@cache
def _item_outputs_sql() -> str:
    i, t, o, g = (_table(m) for m in (ReviewItem, Task, ItemOutput, Generation))
    # One row per output (LEFT JOIN: an item without outputs still gives its task).
    return (
        f"SELECT {_columns('t', Task)}, o.id, {_columns('g', Generation)} FROM {i} i "
        f"JOIN {t} t ON t.id = i.task_id LEFT JOIN {o} o ON o.item_id = i.id "
        f"LEFT JOIN {g} g ON g.id = o.generation_id WHERE i.id = %s ORDER BY o.id"
    )


def item_outputs(item_id: int) -> tuple[Task, dict[int, Generation]]:
    """An item's task and {ItemOutput pk: its Generation}: what a reviewer's screen shows of
    an item (the review page, the API's claim). Its ORM twin: ItemOutput.objects.shown."""
    rows = _fetch(_item_outputs_sql(), [item_id])
    width = len(_fields(Task))
    task = _instance(Task, rows[0][:width])
    return task, {
        row[width]: _instance(Generation, row[width + 1 :])
        for row in rows
        if row[width] is not None
    }


@cache
def _review_page_sql(vendor: str) -> str:
    a, r = _table(Assignment), _table(ReviewerRemoval)
    # The removal and the progress count refer to the assignment's own reviewer and campaign
    # columns, not to parameters: the planner's estimate is then the same for every reviewer,
    # so PostgreSQL keeps the statement's generic plan (given the reviewer as a parameter, it
    # planned it again on every page for a reviewer newer than the statistics).
    return (
        f"SELECT {_columns('a', Assignment)}, {_columns('c', Campaign)}, "
        f"EXISTS (SELECT 1 FROM {r} rr "
        "WHERE rr.reviewer_id = a.reviewer_id AND rr.campaign_id = a.campaign_id), "
        f"(SELECT COUNT(*) FROM {a} da WHERE da.reviewer_id = a.reviewer_id "
        f"AND da.campaign_id = a.campaign_id AND da.state = {literal(Assignment.State.SUBMITTED)}) "
        f"FROM {a} a JOIN {_table(Campaign)} c ON c.id = a.campaign_id "
        # The token alone picks the row (its unique index); whose it is is checked after.
        "WHERE a.token = %s AND c.slug = %s"
    )


def review_page(*, token: str, slug: str) -> tuple[Assignment, Campaign, bool, int] | None:
    """The assignment `token` in campaign `slug` with its campaign, whether its reviewer was
    removed from the campaign and how many reviews they submitted there, or None."""
    rows = _fetch(_review_page_sql(connection.vendor), [token, slug])
    if not rows:
        return None
    width = len(_fields(Assignment))
    *values, removed, done = rows[0]
    return (
        _instance(Assignment, values[:width]),
        _instance(Campaign, values[width:]),
        bool(removed),
        done,
    )


@cache
def _submit_assignment_sql() -> str:
    return (
        f"SELECT {_columns('a', Assignment)}, {_columns('i', ReviewItem)}, "
        f"{_columns('c', Campaign)}, "
        f"EXISTS (SELECT 1 FROM {_table(ReviewerRemoval)} rr "
        "WHERE rr.reviewer_id = a.reviewer_id AND rr.campaign_id = a.campaign_id) "
        f"FROM {_table(Assignment)} a "
        f"JOIN {_table(ReviewItem)} i ON i.id = a.item_id "
        f"JOIN {_table(Campaign)} c ON c.id = i.campaign_id "
        # The token alone picks the row (its unique index); whose it is is checked after.
        "WHERE a.token = %s"
    )


def submit_assignment(*, token: str) -> tuple[Assignment, bool] | None:
    """The assignment `token` with its item and its item's campaign, and whether its reviewer
    was removed from the campaign (what every submit reads before its fence), or None. The
    ORM twin: select_related("item__campaign") and the removal's exists()."""
    rows = _fetch(_submit_assignment_sql(), [token])
    if not rows:
        return None
    a, i = len(_fields(Assignment)), len(_fields(ReviewItem))
    *values, removed = rows[0]
    assignment = _instance(Assignment, values[:a])
    assignment.item = _instance(ReviewItem, values[a : a + i])
    assignment.item.campaign = _instance(Campaign, values[a + i :])
    return assignment, bool(removed)


@cache
def _review_store_sql() -> str:
    a, i = Assignment._meta.db_table, ReviewItem._meta.db_table
    r, s = Review._meta.db_table, Score._meta.db_table
    return (
        f"WITH fence AS (UPDATE {a} SET state = {literal(Assignment.State.SUBMITTED)}, "
        "submit_key = %s, submitted_at = STATEMENT_TIMESTAMP() "
        f"WHERE id = %s AND state = {literal(Assignment.State.ACTIVE)} RETURNING id), "
        f"review AS (INSERT INTO {r} (item_id, assignment_id, reviewer_id, preference, "
        "preferred_output_id, flags, comment, seconds_spent, submitted_at, presented_order) "
        "SELECT %s, fence.id, %s, %s, %s, %s::jsonb, %s, %s, STATEMENT_TIMESTAMP(), %s::jsonb "
        "FROM fence RETURNING id, submitted_at), "
        f"scores AS (INSERT INTO {s} (review_id, output_id, dimension, value) "
        "SELECT review.id, v.output_id, v.dimension, v.value FROM review, "
        "unnest(%s::bigint[], %s::varchar[], %s::float8[]) AS v(output_id, dimension, value)), "
        # Counting the review returns the item's fresh state: the item row stays locked by this
        # UPDATE until commit, so two last reviews cannot both miss the settle.
        f"counted AS (UPDATE {i} SET submitted_count = submitted_count + 1 "
        f"WHERE id = %s AND EXISTS (SELECT 1 FROM review) "
        "RETURNING submitted_count, overlap, state) "
        "SELECT review.id, review.submitted_at, counted.submitted_count, counted.overlap, "
        "counted.state FROM review, counted"
    )


def review_store_fenced(
    *, assignment: Assignment, reviewer_id: int, key: str, review: dict, scores: list[tuple]
) -> tuple[int, datetime, int, int, str] | None:
    """PostgreSQL: the fence (the assignment still active becomes submitted under `key`) and,
    only when it matched, the review, its `scores` ((output id, dimension, value)) and the
    item's count, all or nothing in one statement. (review id, submitted_at, the item's
    submitted_count, overlap and state), or None when the fence matched nothing."""
    output_ids, dimensions, values = (
        (list(column) for column in zip(*scores, strict=True)) if scores else ([], [], [])
    )
    params = [
        key,
        assignment.pk,
        assignment.item_id,
        reviewer_id,
        review["preference"],
        review["preferred_output_id"],
        json.dumps(review["flags"]),
        review["comment"],
        review["seconds_spent"],
        json.dumps(list(assignment.order)),
        output_ids,
        dimensions,
        values,
        assignment.item_id,
    ]
    with connection.cursor() as cursor:
        cursor.execute(_review_store_sql(), params)
        return cursor.fetchone()
