"""The raw SQL of generation (docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md):
the generation semaphore (the test-set import's bulk insert is tasks/intake/sql.py).

A contender's `max_concurrency` is a semaphore made of the generation rows themselves: a row
is claimed only while fewer than that many rows of the contender hold a live lease. The count
and the claim are one conditional UPDATE; on PostgreSQL claims of one contender serialize on
a lock of the contender row taken in the same round trip, so the lock is never held while a
client waits (docs/architecture.md, "Flow of a generation"). The ORM cannot send the lock and
the UPDATE as one message.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction

from tasks.models import Contender, Generation

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
