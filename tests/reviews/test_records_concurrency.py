"""Two imports of the same file at once (real PostgreSQL, two connections): one set of rows."""

import threading

import pytest
from django.db import connection
from django.test import TransactionTestCase

from reviews.models import Review, ReviewItem, Score
from reviews.records import RecordImportError, reviews_import
from tasks.models import Generation
from tests.reviews.test_records import jsonl, make_campaign, sample_records


@pytest.mark.postgres
class ConcurrentImportTests(TransactionTestCase):
    def test_it_never_duplicates_rows_when_the_same_file_is_imported_twice_at_once(self):
        campaign = make_campaign()
        data = jsonl(*sample_records())
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def run():
            try:
                barrier.wait()
                summary = reviews_import(campaign=campaign, data=data, fmt="jsonl")
                outcomes.append(f"created {summary.reviews_created}")
            except RecordImportError as exc:
                outcomes.append(exc.messages()[0])
            finally:
                connection.close()

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(outcomes) == 2, outcomes
        # Exactly one import wrote the rows; the other found them (a no-op) or backed off.
        assert outcomes.count("created 8") == 1, outcomes
        other = next(o for o in outcomes if o != "created 8")
        assert other in (
            "created 0",
            "line 0, field (file): the campaign changed while importing; nothing was imported, try again",
        )
        assert (
            ReviewItem.objects.count(),
            Review.objects.count(),
            Score.objects.count(),
            Generation.objects.count(),
        ) == (4, 8, 32, 8)
        # Whichever lost, importing again is a no-op.
        assert reviews_import(campaign=campaign, data=data, fmt="jsonl").reviews_unchanged == 8
