"""evalsite/bulk.py: `rows_update` writes exactly what the ORM's `update()` writes, row by
row, and its guard leaves the rows it names alone (on SQLite here, on PostgreSQL in CI)."""

from datetime import UTC, datetime
from decimal import Decimal

from django.test import TestCase

from evalsite.bulk import rows_update
from tasks.models import Generation
from tests.factories import CampaignFactory, GenerationFactory, TaskFactory

S = Generation.Status
FIELDS = (
    "status",
    "output",
    "cost",
    "finished_at",
    "transcript",
    "check_results",
    "checks_passed",
    "lease_expires_at",
)


def stored(pk: int) -> tuple:
    return tuple(Generation.objects.filter(pk=pk).values_list(*FIELDS).get())


class RowsUpdateTests(TestCase):
    def setUp(self):
        campaign = CampaignFactory()
        self.rows = [
            GenerationFactory(
                campaign=campaign,
                task=TaskFactory(testset=campaign.testset),
                status=S.PENDING,
                output="",
            )
            for _ in range(4)
        ]

    def changes(self, i: int) -> dict:
        return {
            "status": S.DONE,
            "output": f"answer {i} with 'quotes', a ; and \\ backslash",
            "cost": Decimal("0.000123") * (i + 1),
            "finished_at": datetime(2026, 12, 1, 10, i, tzinfo=UTC),
            "transcript": [{"user": None, "steps": [{"text": f"step {i}", "tool_calls": []}]}],
            "check_results": {"max_chars": {"passed": i % 2 == 0, "detail": None}},
            "checks_passed": None if i == 3 else i % 2 == 0,
            "lease_expires_at": None,
        }

    def test_it_writes_what_the_orm_update_writes(self):
        raw, orm = self.rows[:2], self.rows[2:]
        written = rows_update(Generation, [(g.pk, self.changes(i)) for i, g in enumerate(raw)])
        for i, g in enumerate(orm):
            Generation.objects.filter(pk=g.pk).update(**self.changes(i))
        assert written == 2
        for a, b in zip(raw, orm, strict=True):
            assert stored(a.pk) == stored(b.pk)
        assert stored(raw[1].pk)[2] == Decimal("0.000246")
        assert stored(raw[0].pk)[4][0]["steps"][0]["text"] == "step 0"

    def test_it_leaves_the_rows_its_guard_names(self):
        done = self.rows[0]
        Generation.objects.filter(pk=done.pk).update(status=S.DONE, output="kept")
        written = rows_update(
            Generation,
            [(g.pk, self.changes(i)) for i, g in enumerate(self.rows)],
            unless=("status", S.DONE),
        )
        assert written == 3
        assert Generation.objects.get(pk=done.pk).output == "kept"
        assert Generation.objects.get(pk=self.rows[1].pk).output.startswith("answer 1")

    def test_it_writes_nothing_for_no_changes(self):
        assert rows_update(Generation, []) == 0
