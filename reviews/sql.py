"""The raw SQL of the reviews app, each statement where correctness needs SQL
(docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md), each with a test that
compares it with its ORM twin on the same data (tests/reviews/test_sql.py):

- `db_now`: the database's clock (the ORM compares with it, `Now()`, but cannot read it);
- `claim_candidate`: the claim's SELECT ... FOR NO KEY UPDATE SKIP LOCKED, with a planner
  fence the ORM cannot write (its twin: `services.claim.candidates`);
- `review_store_fenced` (PostgreSQL): the submit's fence and, only if it matched, the review,
  its scores and the item's count, all or nothing in one statement (its twin, and SQLite's
  path, is the ORM sequence in `services.submit`).

Everything else in the app goes through the ORM.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import cache

from django.db import connection
from django.utils import timezone

from .models import Assignment, Review, ReviewItem, Score

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
