"""tasks/generation/sql.py and tasks/intake/sql.py: the generation semaphore and the bulk insert against their ORM twins.

The statement stays SQL so that, on PostgreSQL, the contender's lock and the counting claim
go to the server as one message (docs/decisions/0004). What it claims must be what the ORM's
plain reading of the rule claims: the row as read, no live lease of its own, and fewer than
max_concurrency live leases among the contender's rows (whatever their status).
"""

from datetime import timedelta

from django.db import transaction
from django.db.models import F, Q
from django.test import TestCase
from django.utils import timezone

from tasks.generation.sql import generation_claim
from tasks.intake.sql import tasks_insert
from tasks.models import Contender, Generation, Task
from tests.factories import (
    CampaignFactory,
    ContenderFactory,
    GenerationFactory,
    TaskFactory,
    TestSetFactory,
)

S = Generation.Status


def orm_claim(*, generation, max_concurrency, token, now, lease_until) -> bool:
    """The semaphore in the ORM: lock the contender, count its live leases, claim."""
    with transaction.atomic():
        Contender.objects.select_for_update(no_key=True).filter(pk=generation.contender_id).exists()
        live = Generation.objects.filter(
            contender_id=generation.contender_id, lease_expires_at__gt=now
        ).count()
        if live >= max_concurrency:
            return False
        claimable = Generation.objects.filter(
            Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now),
            pk=generation.pk,
            status=generation.status,
            attempts=generation.attempts,
        )
        return (
            claimable.update(
                status=S.RUNNING,
                claim_token=token,
                attempts=F("attempts") + 1,
                started_at=now,
                lease_expires_at=lease_until,
            )
            == 1
        )


class GenerationSemaphoreTests(TestCase):
    def rows(self):
        """One contender's rows: pending ones, a live running one, a cancelled one whose call
        is still in flight (its lease holds a slot), a lapsed running one, a done one."""
        contender = ContenderFactory()
        campaign = CampaignFactory(contenders=[contender])
        now = timezone.now()
        made = []
        for n, (status, lease) in enumerate(
            [
                (S.PENDING, None),
                (S.PENDING, None),
                (S.PENDING, None),
                (S.RUNNING, now + timedelta(minutes=5)),
                (S.CANCELLED, now + timedelta(minutes=5)),
                (S.RUNNING, now - timedelta(minutes=1)),
                (S.DONE, None),
            ]
        ):
            made.append(
                GenerationFactory(
                    campaign=campaign,
                    task=TaskFactory(testset=campaign.testset),
                    contender=contender,
                    sample_index=n,
                    status=status,
                    lease_expires_at=lease,
                )
            )
        return made

    def state(self, rows):
        return [
            (g.status, g.attempts, g.claim_token, g.lease_expires_at is not None)
            for g in Generation.objects.filter(pk__in=[r.pk for r in rows]).order_by("sample_index")
        ]

    def test_it_claims_what_the_orm_claims_and_never_past_the_limit(self):
        raw_rows, orm_rows = self.rows(), self.rows()
        now = timezone.now()
        outcomes = {"raw": [], "orm": []}
        # (row, limit) in order, each row as read at the start: the limit reached at 3 live
        # leases (the cancelled row's counts), then raised; the lapsed row is claimable again;
        # a row with a live lease of its own is not, nor one already claimed (a stale read).
        plan = [(0, 3), (1, 3), (2, 3), (5, 3), (2, 5), (5, 5), (1, 5), (3, 9), (0, 9), (1, 9)]
        for name, rows, claim in (
            ("raw", raw_rows, generation_claim),
            ("orm", orm_rows, orm_claim),
        ):
            for n, limit in plan:
                row = rows[n]  # as read at the start: a second claim of it matches nothing
                outcomes[name].append(
                    claim(
                        generation=row,
                        max_concurrency=limit,
                        token=f"t{n}",
                        now=now,
                        lease_until=now + timedelta(minutes=2),
                    )
                )
        assert outcomes["raw"] == outcomes["orm"]
        assert outcomes["raw"] == [True, False, False, False, True, True, False, False, False, True]
        assert self.state(raw_rows) == self.state(orm_rows)


class TasksInsertTests(TestCase):
    """The import's bulk insert (COPY / executemany) writes what bulk_create writes."""

    TASKS = [
        {"external_id": "A-1", "category": "billing", "prompt": "Refund order 12, please."},
        {
            "external_id": "A-2",
            "category": "agents",
            "tier": "hard",
            "case_type": "edge",
            "prompt": "",
            "messages": [
                {"role": "user", "content": "Où est ma commande ?\tTab, \\N and\nnewline"}
            ],
            "reference": "It left on Monday.",
            "checks": {"contains": ["Monday"]},
            "metadata": {"source": "ticket", "nested": {"n": 1, "none": None}},
            "tools": [{"name": "lookup", "parameters": {"type": "object"}}],
            "tool_mocks": [{"tool": "lookup", "result": {"status": "shipped"}}],
            "max_steps": 3,
        },
        {
            "external_id": "A-3",
            "category": "conversation",
            "turns": ["Plan a trip.", "Make it cheaper."],
            "single_turn": "Plan a cheap trip.",
            "turn_checks": {"2": {"contains": ["cheap"]}},
        },
    ]

    def stored(self, testset) -> list[dict]:
        rows = Task.objects.filter(testset=testset).order_by("position").values()
        return [{k: v for k, v in row.items() if k not in ("id", "testset_id")} for row in rows]

    def test_it_writes_what_bulk_create_writes(self):
        raw, orm = TestSetFactory(), TestSetFactory()
        tasks_insert(testset=raw, tasks=self.TASKS)
        Task.objects.bulk_create(
            Task(testset=orm, position=i, **task) for i, task in enumerate(self.TASKS)
        )
        assert self.stored(raw) == self.stored(orm)
        assert [t["position"] for t in self.stored(raw)] == [0, 1, 2]
        second = Task.objects.get(testset=raw, external_id="A-2")
        assert second.messages[0]["content"].endswith("\\N and\nnewline")
        assert second.metadata["nested"] == {"n": 1, "none": None}
        assert Task.objects.get(testset=raw, external_id="A-1").tools == []  # model default
