"""tasks/sql.py: the generation semaphore's statement against its ORM twin, on the same data.

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

from tasks.models import Contender, Generation
from tasks.sql import generation_claim
from tests.factories import CampaignFactory, ContenderFactory, GenerationFactory, TaskFactory

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
