"""The judge's semaphore as one statement (docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md).

A judgement is claimed only while fewer than the judge's `max_concurrency` judgements hold a
live lease. The count and the claim are one conditional UPDATE; on PostgreSQL, claims of one
judge serialize on a lock of the judge row taken in the same round trip (the lock and the
UPDATE go to the server as one simple query, two statements in one implicit transaction), so
each claim's count sees every claim committed before it and the lock is never held while a
client waits. On SQLite the single writer serializes the UPDATE itself. The ORM would need a
transaction of four round trips for the same: on the bench's loaded machine that cost a
third of the judging rate.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction

from reviews.judges.models import Judgement
from tasks.models import Judge

S = Judgement.Status


def _claim_sql() -> str:
    table = Judgement._meta.db_table
    return (
        f"UPDATE {table} SET status = %s, claim_token = %s, attempts = attempts + 1, "
        f"started_at = %s, lease_expires_at = %s "
        f"WHERE id = %s AND status = %s AND attempts = %s "
        f"AND (lease_expires_at IS NULL OR lease_expires_at <= %s) AND ("
        f"SELECT COUNT(*) FROM {table} AS live WHERE live.judge_id = %s "
        f"AND live.status = %s AND live.lease_expires_at > %s) < %s"
    )


def judgement_claim(*, row: Judgement, token: str, now: datetime, lease_until: datetime) -> bool:
    """Claim `row` (as read: its status and attempts) under `token` until `lease_until`, if
    its judge has a free slot at `now`. True if claimed."""
    at = connection.ops.adapt_datetimefield_value
    params = [
        S.RUNNING,
        token,
        at(now),
        at(lease_until),
        row.pk,
        row.status,
        row.attempts,
        at(now),
        row.judge_id,
        S.RUNNING,
        at(now),
        row.judge.max_concurrency,
    ]
    if connection.vendor != "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_claim_sql(), params)
            return cursor.rowcount == 1
    import psycopg  # PostgreSQL only

    lock = f"SELECT 1 FROM {Judge._meta.db_table} WHERE id = %s FOR NO KEY UPDATE"
    connection.ensure_connection()
    with connection.wrap_database_errors:
        # Client-side binding: the simple query protocol (two statements in one message).
        with psycopg.ClientCursor(connection.connection) as cursor:
            cursor.execute(f"{lock}; {_claim_sql()}", [row.judge_id, *params])
            if not cursor.nextset():
                raise RuntimeError("the claim UPDATE returned no result")
            return cursor.rowcount == 1
