"""Many reviewers claiming and submitting at once, on real PostgreSQL with real threads.

SQLite ignores SELECT ... FOR UPDATE, so these tests need PostgreSQL (skipped locally without
it, failing under CI=true). Every thread has its own database connection.
"""

import random
import threading
import time
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.test import TransactionTestCase
from django.utils import timezone

from reviews import review as services
from reviews.models import Assignment, Review, ReviewItem
from tests.factories import ContenderFactory, UserFactory, campaign_ready
from tests.reviews.helpers import full_review, invariant_violations

THREADS = 16


def run_reviewers(campaign, reviewers, *, threads=THREADS, abandon_rate=0.15, seed=7):
    """Each thread acts for one reviewer (several threads share a reviewer, like open tabs):
    claim -> submit until nothing is left; some claims are abandoned (lease forced to lapse)."""
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []
    outcomes: list[str] = []
    lock = threading.Lock()

    def work(index):
        rng = random.Random(seed + index)
        user = reviewers[index % len(reviewers)]
        try:
            barrier.wait()
            for _ in range(500):
                try:
                    claim = services.assignment_claim_next(campaign=campaign, reviewer=user)
                except services.ClaimBusy:
                    continue
                if claim is None:
                    return
                a = claim.assignment
                if rng.random() < abandon_rate:
                    # Walk away: the lease lapses and the slot must come back.
                    Assignment.objects.filter(pk=a.pk, state="active").update(
                        lease_expires_at=timezone.now() - timedelta(seconds=1)
                    )
                    continue
                result = services.assignment_submit(
                    token=a.token,
                    reviewer=user,
                    key=f"{a.token}-{rng.randrange(2)}",
                    data=full_review(a, value=rng.randint(1, 5)),
                )
                with lock:
                    outcomes.append(result.code)
            raise AssertionError("a reviewer thread never ran out of work")
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(120)
    close_old_connections()
    assert not any(t.is_alive() for t in pool), "a reviewer thread hung"
    assert errors == [], errors
    return outcomes


@pytest.mark.postgres
class ConcurrentAssignmentTests(TransactionTestCase):
    def check(self, campaign, k, n_items, reviewers, outcomes):
        assert invariant_violations(campaign) == []
        for item in ReviewItem.objects.filter(campaign=campaign):
            reviewer_ids = list(
                Review.objects.filter(item=item).values_list("reviewer_id", flat=True)
            )
            assert len(reviewer_ids) == k, (item.pk, reviewer_ids)
            assert len(set(reviewer_ids)) == k
            assert item.submitted_count == k and item.live_count == k
            assert item.state in ("agreed", "disputed")
        assert Review.objects.filter(item__campaign=campaign).count() == n_items * k
        # Concurrent double submits happened and were recognised, never saved twice.
        assert outcomes.count("saved") + outcomes.count("saved_late") == n_items * k
        # A thread whose tab-mate abandoned the lease may find the slot reassigned: told so.
        # Tab-mates share keys here (derived from the token): the same key with other scores
        # than the saved ones is refused as a reused key, never saved.
        assert set(outcomes) <= {
            "saved",
            "saved_late",
            "duplicate",
            "key_reused",
            "already_submitted",
            "reassigned",
        }

    def test_it_gives_every_item_exactly_two_distinct_reviewers_under_contention(self):
        campaign = campaign_ready(items=24, overlap=2)
        reviewers = [UserFactory(username=f"pg-rev-{i}", roles=["reviewer"]) for i in range(5)]
        outcomes = run_reviewers(campaign, reviewers)
        self.check(campaign, 2, 24, reviewers, outcomes)

    def test_it_gives_every_item_exactly_three_distinct_reviewers_under_contention(self):
        contenders = [ContenderFactory() for _ in range(3)]
        campaign = campaign_ready(items=16, overlap=3, contenders=contenders)
        reviewers = [UserFactory(username=f"pg-rev3-{i}", roles=["reviewer"]) for i in range(6)]
        outcomes = run_reviewers(campaign, reviewers, threads=18, seed=11)
        self.check(campaign, 3, 16, reviewers, outcomes)

    def test_the_database_refuses_a_third_reviewer_even_without_the_counter(self):
        """The constraints are the real guarantee: bypass the service and insert directly."""
        from django.db import IntegrityError, transaction

        campaign = campaign_ready(items=1, overlap=2)
        item = ReviewItem.objects.get(campaign=campaign)
        users = [UserFactory(username=f"pg-c-{i}", roles=["reviewer"]) for i in range(3)]
        lease = timezone.now() + timedelta(minutes=5)

        def insert(user, slot):
            Assignment.objects.create(
                item=item,
                campaign=campaign,
                reviewer=user,
                slot=slot,
                overlap=2,
                lease_expires_at=lease,
            )

        for slot, user in enumerate(users[:2]):
            insert(user, slot)
        for slot, user in ((0, users[2]), (2, users[2]), (1, users[0])):
            with pytest.raises(IntegrityError), transaction.atomic():
                insert(user, slot)
        with pytest.raises(IntegrityError), transaction.atomic():
            ReviewItem.objects.filter(pk=item.pk).update(live_count=3)

    def test_a_claim_that_raced_an_uncommitted_slot_takes_another_with_a_fresh_read(self):
        """The claim reads the item's rows under its lock, but a row not yet committed is not
        among them. Here another transaction writes slot 0 of the only item and commits while
        the claim's INSERT of slot 0 waits on it: the unique index refuses the slot taken
        twice, and the next attempt reads the rows again and claims slot 1."""
        from django.db import connections

        campaign = campaign_ready(items=1, overlap=2)
        item = ReviewItem.objects.get(campaign=campaign)
        other, claimant = (UserFactory(username=f"pg-s-{i}", roles=["reviewer"]) for i in range(2))
        writer = connections.create_connection("default")  # a second session, its own transaction
        writer.set_autocommit(False)
        with writer.cursor() as cursor:
            # Slot 0 taken, not yet committed (the counter is left alone so that the item stays
            # free to lock: a real claim would hold the item, this one only the slot).
            cursor.execute(
                "INSERT INTO reviews_assignment (item_id, campaign_id, reviewer_id, slot, overlap, "
                'state, token, "order", lease_expires_at, created_at, submit_key, skip_reason) '
                "VALUES (%s, %s, %s, 0, 2, 'active', 'snapshot-race', '[]', now() + interval "
                "'5 minutes', now(), '', '')",
                [item.pk, campaign.pk, other.pk],
            )
        result = {}

        def claim():
            try:
                result["claim"] = services.assignment_claim_next(
                    campaign=campaign, reviewer=claimant
                )
            finally:
                connection.close()

        with self.assertLogs("reviews.review", "INFO") as logs:
            thread = threading.Thread(target=claim)
            thread.start()
            # Wait until the claim's statement waits on the writer's uncommitted slot.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'transactionid' "
                        """AND query LIKE 'INSERT INTO "reviews_assignment"%%'"""
                    )
                    if cursor.fetchone()[0]:
                        break
                time.sleep(0.02)
            else:
                writer.rollback()  # let the claim finish before failing
                writer.close()
                thread.join(10)
                pytest.fail("the claim's INSERT never waited on the uncommitted slot")
            writer.commit()
            writer.close()
            thread.join(10)
        assert any("claim lost a race" in line for line in logs.output), logs.output
        assert result["claim"].assignment.slot == 1 and result["claim"].resumed is False
        live = Assignment.objects.filter(item=item, state="active")
        assert sorted(live.values_list("slot", flat=True)) == [0, 1]
        assert ReviewItem.objects.get(pk=item.pk).live_count == 1  # only the service counted

    def test_a_claim_waits_for_a_lapsed_lease_another_session_is_expiring(self):
        """A claim says "nothing left" only when nothing is left. The only item has one
        review and its other slot held by a lease that ran out, which another session is
        expiring right now (the row expired and the item's count lowered, not yet committed:
        what assignment_expire_stale does). The claim's own expiry skips that locked row and
        the item still looks full; the claim answered "nothing left" then, and the item kept
        one review for good once the reviewers who could take it had stopped asking. It
        waits for that session instead, and takes the slot."""
        from django.db import connections

        campaign = campaign_ready(items=1, overlap=2)
        item = ReviewItem.objects.get(campaign=campaign)
        first, walked_away, claimant = (
            UserFactory(username=f"pg-x-{i}", roles=["reviewer"]) for i in range(3)
        )
        done = services.assignment_claim_next(campaign=campaign, reviewer=first).assignment
        saved = services.assignment_submit(
            token=done.token, reviewer=first, key="k", data=full_review(done)
        )
        assert saved.code == "saved"
        lapsed = services.assignment_claim_next(campaign=campaign, reviewer=walked_away).assignment
        Assignment.objects.filter(pk=lapsed.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        expirer = connections.create_connection("default")  # a session expiring that lease
        expirer.set_autocommit(False)
        with expirer.cursor() as cursor:
            cursor.execute(
                "UPDATE reviews_assignment SET state = 'expired' WHERE id = %s", [lapsed.pk]
            )
            cursor.execute(
                "UPDATE reviews_reviewitem SET live_count = live_count - 1 WHERE id = %s",
                [item.pk],
            )
        result = {}

        def claim():
            try:
                result["claim"] = services.assignment_claim_next(
                    campaign=campaign, reviewer=claimant
                )
            finally:
                connection.close()

        thread = threading.Thread(target=claim)
        thread.start()
        # Until the claim has answered, or waits on the expiring session's row.
        deadline = time.monotonic() + 10
        while thread.is_alive() and time.monotonic() < deadline:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event = 'transactionid' AND query LIKE '%%FOR NO KEY UPDATE%%'"
                )
                if cursor.fetchone()[0]:
                    break
            time.sleep(0.02)
        expirer.commit()
        expirer.close()
        thread.join(10)
        assert not thread.is_alive(), "the claim hung"
        claimed = result["claim"]
        assert claimed is not None, "the claim said nothing was left while a slot was coming back"
        assert claimed.assignment.item_id == item.pk and claimed.assignment.slot == 1
        assert invariant_violations(campaign) == []


@pytest.mark.postgres
class ConcurrentSweepTests(TransactionTestCase):
    def test_concurrent_sweepers_and_submits_return_each_slot_once(self):
        campaign = campaign_ready(items=12, overlap=2)
        users = [UserFactory(username=f"pg-s-{i}", roles=["reviewer"]) for i in range(8)]
        held = []
        for user in users:
            held.append(services.assignment_claim_next(campaign=campaign, reviewer=user).assignment)
        Assignment.objects.filter(pk__in=[a.pk for a in held]).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        barrier = threading.Barrier(12)
        results, errors = [], []

        def sweep():
            try:
                barrier.wait()
                results.append(services.assignment_sweep_expired())
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
            finally:
                connection.close()

        def submit(a, user):
            try:
                barrier.wait()
                results.append(
                    services.assignment_submit(
                        token=a.token, reviewer=user, key="s", data=full_review(a)
                    ).code
                )
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=sweep) for _ in range(8)]
        threads += [threading.Thread(target=submit, args=(held[i], users[i])) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        swept = sum(r for r in results if isinstance(r, int))
        codes = [r for r in results if isinstance(r, str)]
        saved = codes.count("saved") + codes.count("saved_late")
        # Every lapsed lease ended exactly once: swept, or saved by its (late) reviewer.
        assert swept + saved == 8 + codes.count("saved_late")
        assert set(codes) <= {"saved", "saved_late"}
        assert invariant_violations(campaign) == []
