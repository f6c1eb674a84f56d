"""The review tables carry no index another one already provides.

Every claim inserts an assignment and bumps its item, every submit rewrites both and inserts
a review and its scores: each index on those tables is written on each of these, so one that
duplicates the leading columns of another only costs.
"""

import json

import pytest
from django.db import connection

from reviews import review as services
from tests.factories import UserFactory, campaign_ready
from tests.services import need, postgres_available

TABLES = ("reviews_reviewitem", "reviews_assignment", "reviews_review", "reviews_score")
# Kept on purpose: for the export's batches of 2,000 reviews PostgreSQL scans every score
# rather than use the wider score_unique index (its score reads were 3x slower).
NARROW_BY_CHOICE = {("reviews_score", ("review_id",))}


def _indexes(table: str) -> list[tuple[str, list[str], bool, bool]]:
    """(name, key columns in order, unique, partial) of each index on `table`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY "
            "k(attnum, n) JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "ORDER BY k.n), i.indisunique, i.indpred IS NOT NULL, "
            "pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass",
            [table],
        )
        return cursor.fetchall()


@pytest.mark.django_db
@pytest.mark.parametrize("table", TABLES)
def test_no_index_repeats_the_leading_columns_of_another(table):
    need(postgres_available(), "needs PostgreSQL: set DATABASE_URL=postgres://...")
    indexes = _indexes(table)
    assert indexes, f"{table} has no index"
    for name, cols, unique, partial, definition in indexes:
        # LIKE-only copies (varchar_pattern_ops): nothing here filters with LIKE.
        assert "pattern_ops" not in definition, definition
        if unique or partial or (table, tuple(cols)) in NARROW_BY_CHOICE:
            continue  # a constraint, a narrower set of rows, or kept for reads: see above
        for other, other_cols, _, other_partial, _ in indexes:
            if other != name and not other_partial and other_cols[: len(cols)] == cols:
                pytest.fail(f"{table}: {name} {cols} is the start of {other} {other_cols}")


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


@pytest.mark.django_db
def test_a_claim_pass_reads_one_fresh_item_to_hand_out_one():
    """The offer index holds the whole ORDER BY of a pass (shuffle key, then id), so the pass
    stops at its first free item. Without the id PostgreSQL sorted each pass and read at least
    33 items, probing each for the reviewer's rows, to hand out one."""
    need(postgres_available(), "needs PostgreSQL: set DATABASE_URL=postgres://...")
    campaign = campaign_ready(items=200, overlap=2)
    reviewer = UserFactory(username="rev-plan", roles=["reviewer"])
    fresh = services.candidates(campaign=campaign, reviewer=reviewer, offset=0)[1]
    locked = fresh.select_for_update(skip_locked=True, no_key=True, of=("self",))[:1]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reviews_reviewitem")
        # A table this small fits in a page or two, where a scan and a sort cost nothing:
        # ask for the plan a campaign of thousands of items gets.
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = json.loads(locked.explain(analyze=True, format="json"))[0]["Plan"]
    nodes = list(_nodes(plan))
    assert not [n["Node Type"] for n in nodes if "Sort" in n["Node Type"]], plan
    scans = [n for n in nodes if n.get("Relation Name") == "reviews_reviewitem"]
    assert [(n["Node Type"], n["Index Name"], n["Actual Rows"]) for n in scans] == [
        ("Index Scan", "reviewitem_offer_idx", 1)
    ], plan
