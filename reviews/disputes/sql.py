"""The settle's one raw read (docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md):
an item's reviews, read in the submit of every k-th review, so kept in SQL for the review
loop's budget like the other reads of the loop (reviews/review/sql.py). Its ORM twin is
compared with it in tests/reviews/test_sql.py."""

from __future__ import annotations

import json

from django.db import connection

from reviews.models import Review, Score


def item_reviews(item_id: int) -> list[tuple]:
    """An item's reviews, one row per score (a review without scores has one row with the
    score columns None): (review id, preference, preferred output id, flags, output id,
    dimension, value), in submit order. The settle reads it in the submit of every k-th
    review. Its ORM twin: Review.objects.values_list(..., "scores__output_id", ...)."""
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.id, r.preference, r.preferred_output_id, r.flags, s.output_id, "
            f"s.dimension, s.value FROM {qn(Review._meta.db_table)} r "
            f"LEFT JOIN {qn(Score._meta.db_table)} s ON s.review_id = r.id "
            "WHERE r.item_id = %s ORDER BY r.submitted_at, r.id, s.id",
            [item_id],
        )
        rows = cursor.fetchall()
    # SQLite returns JSON as text; PostgreSQL's jsonb comes decoded.
    return [
        (pk, pref, preferred, json.loads(flags) if isinstance(flags, str) else flags, *score)
        for pk, pref, preferred, flags, *score in rows
    ]
