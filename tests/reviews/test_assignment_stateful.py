"""Hypothesis drives claim / submit / double submit / abandon / expire / sweep / skip / release
in any order; after every step the assignment tables must satisfy the double-assignment rules."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from reviews import review as services
from reviews.models import Assignment, Review, ReviewItem
from tests.factories import UserFactory, campaign_ready
from tests.reviews.helpers import full_review, invariant_violations

REVIEWERS = 4
ITEMS = 3


class AssignmentMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        # Each example runs in its own transaction, rolled back in teardown.
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self.campaign = campaign_ready(items=ITEMS, overlap=2)
        self.users = [UserFactory(roles=["reviewer"]) for _ in range(REVIEWERS)]
        self.saved_keys: dict[int, str] = {}
        self.saved_values: dict[int, int] = {}

    def teardown(self):
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    def active(self, i):
        return Assignment.objects.filter(reviewer=self.users[i], state="active").first()

    @rule(i=st.integers(0, REVIEWERS - 1))
    def claim(self, i):
        before = self.active(i)
        claim = services.assignment_claim_next(campaign=self.campaign, reviewer=self.users[i])
        if before is not None and before.lease_expires_at > timezone.now():
            assert claim is not None and claim.resumed and claim.assignment.pk == before.pk
        if claim is None:
            # Nothing left for this reviewer means: every open item is full or already theirs.
            blocked = Assignment.objects.filter(reviewer=self.users[i], state__in=services.BLOCKING)
            for item in ReviewItem.objects.filter(campaign=self.campaign, state="open"):
                assert item.live_count >= item.overlap or blocked.filter(item=item).exists()

    @rule(i=st.integers(0, REVIEWERS - 1), value=st.integers(1, 5))
    def submit(self, i, value):
        a = self.active(i)
        if a is None:
            return
        result = services.assignment_submit(
            token=a.token, reviewer=self.users[i], key=f"k{a.pk}", data=full_review(a, value=value)
        )
        assert result.code in ("saved", "saved_late"), result.code
        self.saved_keys[a.pk], self.saved_values[a.pk] = f"k{a.pk}", value

    @rule(data=st.data())
    def submit_again(self, data):
        if not self.saved_keys:
            return
        pk = data.draw(st.sampled_from(sorted(self.saved_keys)))
        a = Assignment.objects.get(pk=pk)
        before = Review.objects.count()
        same = data.draw(st.booleans())
        value = data.draw(st.integers(1, 5))
        result = services.assignment_submit(
            token=a.token,
            reviewer=a.reviewer,
            key=self.saved_keys[pk] if same else "other",
            data=full_review(a, value=value),
        )
        if not same:
            assert result.code == "already_submitted"
        else:  # a retry, or the same key with other answers (refused: the first stand)
            assert result.code == ("duplicate" if value == self.saved_values[pk] else "key_reused")
        assert Review.objects.count() == before

    @rule(i=st.integers(0, REVIEWERS - 1))
    def abandon(self, i):
        a = self.active(i)
        if a is not None:
            Assignment.objects.filter(pk=a.pk).update(
                lease_expires_at=timezone.now() - timedelta(seconds=1)
            )

    @rule(i=st.integers(0, REVIEWERS - 1), value=st.integers(1, 5))
    def late_submit(self, i, value):
        a = (
            Assignment.objects.filter(reviewer=self.users[i], state="expired")
            .order_by("pk")
            .first()
        )
        if a is None:
            return
        item = ReviewItem.objects.get(pk=a.item_id)
        had_room = item.state == "open" and item.live_count < item.overlap
        result = services.assignment_submit(
            token=a.token,
            reviewer=self.users[i],
            key=f"late{a.pk}",
            data=full_review(a, value=value),
        )
        assert result.code == ("saved_late" if had_room else "reassigned")
        if had_room:
            self.saved_keys[a.pk], self.saved_values[a.pk] = f"late{a.pk}", value

    @rule()
    def sweep(self):
        stale = Assignment.objects.filter(
            state="active", lease_expires_at__lte=timezone.now()
        ).count()
        assert services.assignment_sweep_expired() == stale

    @rule(i=st.integers(0, REVIEWERS - 1))
    def skip(self, i):
        a = self.active(i)
        if a is not None:
            assert services.assignment_skip(token=a.token, reviewer=self.users[i], reason="other")

    @rule(i=st.integers(0, REVIEWERS - 1))
    def release(self, i):
        a = self.active(i)
        if a is not None:
            assert services.assignment_release(campaign=self.campaign, token=a.token)

    @invariant()
    def tables_agree(self):
        assert invariant_violations(self.campaign) == []
        for item in ReviewItem.objects.filter(campaign=self.campaign):
            settled = item.state in ("agreed", "disputed")
            assert settled == (item.submitted_count == item.overlap), (
                item.state,
                item.submitted_count,
            )


@pytest.mark.django_db
def test_the_assignment_rules_hold_in_any_order_of_operations():
    run_state_machine_as_test(
        AssignmentMachine,
        settings=settings(
            max_examples=25,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
