"""A report racing claims and submits, on real PostgreSQL with real threads: once the report
returns, nobody holds the item and nobody gets it; a review that got in first is kept and
marked, one that did not is refused. SQLite ignores row locks, so this needs PostgreSQL."""

import threading

import pytest
from django.db import close_old_connections, connection
from django.test import TransactionTestCase

from reviews import review as services
from reviews.identity_reports.services import reviewer_report
from reviews.models import Assignment, IdentityReport, Review, ReviewItem
from tests.factories import UserFactory, campaign_ready
from tests.reviews.helpers import full_review, invariant_violations

ROUNDS = 6
CLAIMERS = 8


def race(campaign, reporter_assignment, reporter, claimers, submitter=None):
    """One thread reports while the others claim the campaign's only item (and `submitter`,
    holding an assignment, submits); all start together at a barrier. Returns the claims
    that got an assignment, with whether they started after the report returned."""
    barrier = threading.Barrier(len(claimers) + 1 + (submitter is not None))
    reported = threading.Event()
    errors, claims, lock = [], [], threading.Lock()

    def report():
        try:
            barrier.wait()
            reviewer_report(token=reporter_assignment.token, reviewer=reporter, note="race")
            reported.set()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    def claim(user):
        try:
            barrier.wait()
            for _ in range(20):
                after = reported.is_set()
                try:
                    got = services.assignment_claim_next(campaign=campaign, reviewer=user)
                except services.ClaimBusy:
                    continue
                if got is not None:
                    with lock:
                        claims.append((got.assignment.pk, after))
                    return
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    def submit(assignment, user):
        try:
            barrier.wait()
            services.assignment_submit(
                token=assignment.token, reviewer=user, key="race", data=full_review(assignment)
            )
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    pool = [threading.Thread(target=report)]
    pool += [threading.Thread(target=claim, args=(u,)) for u in claimers]
    if submitter is not None:
        pool.append(threading.Thread(target=submit, args=submitter))
    for t in pool:
        t.start()
    for t in pool:
        t.join(60)
    close_old_connections()
    assert not any(t.is_alive() for t in pool), "a thread hung"
    assert errors == [], errors
    return claims


@pytest.mark.postgres
class ReportRaceTests(TransactionTestCase):
    def test_no_claim_keeps_or_gets_a_reported_item(self):
        claimers = [
            UserFactory(username=f"race-c-{i}", roles=["reviewer"]) for i in range(CLAIMERS)
        ]
        reporter = UserFactory(username="race-reporter", roles=["reviewer"])
        submitter = UserFactory(username="race-submitter", roles=["reviewer"])
        for round_ in range(ROUNDS):
            campaign = campaign_ready(items=1, overlap=CLAIMERS)
            item = ReviewItem.objects.get(campaign=campaign)
            held = services.assignment_claim_next(campaign=campaign, reviewer=reporter).assignment
            theirs = services.assignment_claim_next(
                campaign=campaign, reviewer=submitter
            ).assignment
            claims = race(campaign, held, reporter, claimers, submitter=(theirs, submitter))
            item.refresh_from_db()
            assert not item.ready, round_
            # No claim that started after the report returned got the item ...
            assert not [pk for pk, after in claims if after], round_
            # ... and every lease on it, the ones claimed in the race too, was handed back.
            assert not Assignment.objects.filter(item=item, state="active").exists(), round_
            assert invariant_violations(campaign) == [], round_
            # The racing submit either got in before the report (kept, and marked) or was
            # refused; never a review the report does not list.
            report = IdentityReport.objects.get(item=item)
            reviews = set(Review.objects.filter(item=item).values_list("pk", flat=True))
            assert reviews == set(report.reviews_marked), round_
            state = Assignment.objects.get(pk=theirs.pk).state
            assert state == ("submitted" if reviews else "released"), round_
            # Afterwards the item stays out of reach.
            late = UserFactory(username=f"race-late-{round_}", roles=["reviewer"])
            assert services.assignment_claim_next(campaign=campaign, reviewer=late) is None
