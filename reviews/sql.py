"""The raw SQL of the reviews app: only where correctness needs it (docs/decisions/0004).

Everything else in the app goes through the ORM. Each statement here has a test that compares
it with its ORM twin (tests/reviews/test_sql.py).
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection
from django.utils import timezone

from .models import Assignment, ReviewerRemoval, ReviewItem


def db_now() -> datetime:
    """The database's clock: several web processes must agree on when a lease ends."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement_timestamp()")
            return cursor.fetchone()[0]
    # Embedded mode: SQLite has no server; it and the web process share this machine's clock.
    return timezone.now()


def now_sql() -> tuple[str, list]:
    """The database clock in raw SQL (PostgreSQL); SQLite shares the web process's clock."""
    if connection.vendor == "postgresql":
        return "STATEMENT_TIMESTAMP()", []
    return "%s", [connection.ops.adapt_datetimefield_value(timezone.now())]


def fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


# The claim runs on every "next item": its fixed queries are written as SQL once instead of
# being rebuilt by the ORM on every call (that query building was most of the claim's CPU).
ASSIGNMENTS, ITEMS, REMOVALS = (
    Assignment._meta.db_table,
    ReviewItem._meta.db_table,
    ReviewerRemoval._meta.db_table,
)
