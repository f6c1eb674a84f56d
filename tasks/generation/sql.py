"""The raw SQL of the tasks app (docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md):
the generation semaphore, and the test-set import's bulk insert.

A contender's `max_concurrency` is a semaphore made of the generation rows themselves: a row
is claimed only while fewer than that many rows of the contender hold a live lease. The count
and the claim are one conditional UPDATE; on PostgreSQL claims of one contender serialize on
a lock of the contender row taken in the same round trip, so the lock is never held while a
client waits (docs/architecture.md, "Flow of a generation"). The ORM cannot send the lock and
the UPDATE as one message.

`tasks_insert` writes a test set's tasks with COPY (PostgreSQL) or one executemany (SQLite):
bulk_create builds and compiles a model instance per task, which costs twice the CPU of the
whole import and puts a 10,000-task import over its one-second budget (the ADR has the
figures). tests/tasks/test_sql.py holds both to their ORM twins.
"""

from __future__ import annotations

import json
from datetime import datetime

from django.db import connection, transaction
from django.db.models import JSONField

from tasks.models import Contender, Generation, Task, TestSet

INSERT_BATCH = 2000

S = Generation.Status


def _claim_sql() -> str:
    table = Generation._meta.db_table
    # It matches only while the row is as read, holds no live lease itself (a call of an
    # earlier, cancelled claim still in flight) and fewer than max_concurrency rows of the
    # contender hold a live lease (in flight, any status).
    return (
        f"UPDATE {table} SET status = %s, claim_token = %s, attempts = attempts + 1, "
        f"started_at = %s, lease_expires_at = %s "
        f"WHERE id = %s AND status = %s AND attempts = %s "
        f"AND (lease_expires_at IS NULL OR lease_expires_at <= %s) AND ("
        f"SELECT COUNT(*) FROM {table} AS live WHERE live.contender_id = %s "
        f"AND live.lease_expires_at > %s) < %s"
    )


def generation_claim(
    *,
    generation: Generation,
    max_concurrency: int,
    token: str,
    now: datetime,
    lease_until: datetime,
) -> bool:
    """Claim `generation` (as read: its status and attempts) under `token` until
    `lease_until`, if its contender has a free slot at `now`. True if claimed."""
    at = connection.ops.adapt_datetimefield_value
    params = [
        S.RUNNING,
        token,
        at(now),
        at(lease_until),
        generation.pk,
        generation.status,
        generation.attempts,
        at(now),
        generation.contender_id,
        at(now),
        max_concurrency,
    ]
    if connection.vendor == "postgresql":
        return _claim_postgresql(generation.contender_id, _claim_sql(), params) == 1
    # SQLite: one writer at a time, and the count runs inside the UPDATE.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_claim_sql(), params)
        return cursor.rowcount == 1


def _claim_postgresql(contender_id: int, update: str, params: list) -> int:
    """The semaphore on PostgreSQL: lock the contender row, then count and claim.

    Claims for one contender serialize on that row lock, so it is held for as short as
    possible: lock and UPDATE go to the server as one simple query (two statements, one
    implicit transaction, one round trip), so the lock is never held while waiting on a
    client. The UPDATE is a later statement than the lock, so under READ COMMITTED its
    snapshot sees every claim committed before the lock was granted. The claim commits
    without waiting for the WAL flush (set_config(..., true) = SET LOCAL): a claim lost in a
    database crash is harmless (the row is still pending, or its lease lapses, and a late
    store no longer matches the token). Inside an outer transaction both statements simply
    join it.
    """
    lock = (
        f"SELECT set_config('synchronous_commit', 'off', true) FROM "
        f"{Contender._meta.db_table} WHERE id = %s FOR NO KEY UPDATE"
    )
    import psycopg  # PostgreSQL only

    connection.ensure_connection()
    with connection.wrap_database_errors:
        # A client-side-binding cursor whatever the connection's default: the simple query
        # protocol (several statements in one message) needs the parameters merged in.
        with psycopg.ClientCursor(connection.connection) as cursor:
            cursor.execute(f"{lock}; {update}", [contender_id, *params])
            if not cursor.nextset():
                raise RuntimeError("the claim UPDATE returned no result")
            return cursor.rowcount


def tasks_insert(*, testset: TestSet, tasks: list[dict]) -> None:
    """Insert a test set's validated `tasks` (in file order) fast: COPY on PostgreSQL,
    executemany on SQLite, bulk_create elsewhere (its ORM twin). Columns come from the model;
    fields the intake does not know get their model default."""
    fields = [f for f in Task._meta.concrete_fields if not f.primary_key]
    columns = [connection.ops.quote_name(f.column) for f in fields]
    dumps = json.dumps

    def value(f, i: int, task: dict):
        if f.name == "testset":
            return testset.pk
        if f.name == "position":
            return i
        v = task[f.name] if f.name in task else f.get_default()
        if isinstance(f, JSONField):
            return None if v is None else dumps(v)
        return v

    rows = [tuple(value(f, i, task) for f in fields) for i, task in enumerate(tasks)]
    table = connection.ops.quote_name(Task._meta.db_table)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # The Django wrapper's .cursor is psycopg's own cursor, in the same transaction.
            with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
    elif connection.vendor == "sqlite":
        placeholders = ", ".join(["%s"] * len(columns))
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})", rows
            )
    else:
        Task.objects.bulk_create(
            (Task(testset=testset, position=i, **task) for i, task in enumerate(tasks)),
            batch_size=INSERT_BATCH,
        )
