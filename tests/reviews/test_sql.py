"""reviews/review/sql.py and reviews/disputes/sql.py: each raw statement against its ORM twin, on
the same data.

The raw SQL that stays is there for correctness (docs/decisions/0004); these tests hold it to
what the ORM would do, so the two cannot drift apart.
"""

from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models.functions import Now
from django.test import TestCase

from reviews.disputes import sql as disputes_sql
from reviews.models import Assignment, ItemOutput, Review, ReviewerRemoval, ReviewItem
from reviews.review import candidates, shuffle_offset, sql
from reviews.review.submit import _review_store, _score_rows
from tasks.models import Campaign
from tests.factories import UserFactory, campaign_ready, review_create


class ClockTests(TestCase):
    def test_the_database_clock_is_the_one_the_orm_writes(self):
        campaign = campaign_ready(items=1)
        reviewer = UserFactory(roles=["reviewer"])
        item = ReviewItem.objects.get(campaign=campaign)
        row = Assignment.objects.create(
            item=item,
            campaign=campaign,
            reviewer=reviewer,
            slot=0,
            overlap=2,
            lease_expires_at=sql.db_now(),
        )
        # Each statement of this transaction has its own time (STATEMENT_TIMESTAMP on
        # PostgreSQL, like the ORM's Now()): the ORM's write falls between two reads.
        before = sql.db_now()
        Assignment.objects.filter(pk=row.pk).update(heartbeat_at=Now())
        after = sql.db_now()
        row.refresh_from_db()
        tick = timedelta(milliseconds=1)  # SQLite's clock keeps milliseconds
        assert before - tick <= row.heartbeat_at <= after


class ClaimCandidateTests(TestCase):
    """The claim's locking SELECT picks, pass by pass, the item the ORM's offer order does."""

    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(items=12, overlap=2)
        cls.reviewer, cls.other, cls.third = (UserFactory(roles=["reviewer"]) for _ in range(3))
        items = list(ReviewItem.objects.filter(campaign=cls.campaign).order_by("shuffle_key"))
        # In review (one live slot) by someone else, so pass 0 has candidates ...
        for item in items[2:5]:
            cls.hold(item, cls.other, 0)
        # ... one full, one the reviewer skipped (never offered again), one they hold, one not
        # ready, one disputed.
        cls.hold(items[5], cls.other, 0)
        cls.hold(items[5], cls.third, 1)
        cls.hold(items[6], cls.reviewer, 0, state=Assignment.State.SKIPPED)
        cls.hold(items[7], cls.reviewer, 0)
        ReviewItem.objects.filter(pk=items[8].pk).update(ready=False, state="waiting")
        ReviewItem.objects.filter(pk=items[9].pk).update(state="disputed")
        # An expired row of the reviewer's does not block the item (it may be revived).
        cls.hold(items[10], cls.reviewer, 0, state=Assignment.State.EXPIRED)
        cls.items = items

    @classmethod
    def hold(cls, item, reviewer, slot, state=Assignment.State.ACTIVE):
        Assignment.objects.create(
            item=item,
            campaign=cls.campaign,
            reviewer=reviewer,
            slot=slot,
            overlap=2,
            state=state,
            lease_expires_at=sql.db_now() + timedelta(minutes=5),
        )
        if state in Assignment.LIVE:
            live = item.assignments.filter(state__in=Assignment.LIVE).count()
            ReviewItem.objects.filter(pk=item.pk).update(live_count=live)

    def test_each_pass_picks_the_item_the_orm_offer_order_does(self):
        keys = sorted(i.shuffle_key for i in self.items)
        offsets = [0, keys[3], keys[3] + 1, keys[-1], keys[-1] + 1, 2**31 - 1]
        offsets.append(shuffle_offset(campaign=self.campaign, reviewer=self.reviewer))
        seen = set()
        for reviewer in (self.reviewer, self.other, self.third):
            for offset in offsets:
                passes = candidates(campaign=self.campaign, reviewer=reviewer, offset=offset)
                for n, orm in enumerate(passes):
                    with transaction.atomic():
                        raw = sql.claim_candidate(
                            campaign_id=self.campaign.pk,
                            reviewer_id=reviewer.pk,
                            offset=offset,
                            pass_index=n,
                            locked=n < 3,
                        )
                    expected = orm.values_list("pk", "overlap", "live_count", "rotation").first()
                    assert (raw and raw[:4]) == expected, (reviewer, offset, n)
                    seen.add(n if raw else -1)
        assert seen == {-1, 0, 1, 2, 3}  # every pass found something, and each came up empty

    def test_it_reads_the_database_clock_with_the_candidate(self):
        before = sql.db_now()
        with transaction.atomic():
            found = sql.claim_candidate(
                campaign_id=self.campaign.pk, reviewer_id=self.reviewer.pk, offset=0, pass_index=1
            )
        assert before <= found[4] <= sql.db_now()


def field_values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


class ReadTests(TestCase):
    """The review loop's reads written as SQL give the instances the ORM gives."""

    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(items=2, redact=["Acme"], lease_minutes=7)
        cls.reviewer = UserFactory(roles=["reviewer"])
        cls.item = ReviewItem.objects.filter(campaign=cls.campaign).order_by("pk").first()
        cls.assignment = Assignment.objects.create(
            item=cls.item,
            campaign=cls.campaign,
            reviewer=cls.reviewer,
            slot=0,
            overlap=2,
            order=[3, 1],
            lease_expires_at=sql.db_now() + timedelta(minutes=5),
        )

    def orm_context(self, reviewer):
        campaign = Campaign.objects.filter(slug=self.campaign.slug).first()
        leases = Assignment.objects.filter(campaign=campaign)
        held = leases.live_leases().filter(reviewer=reviewer).order_by("created_at", "pk")
        return (
            field_values(campaign),
            campaign.reviewers.filter(pk=reviewer.pk).exists(),
            ReviewerRemoval.objects.filter(campaign=campaign, reviewer=reviewer).exists(),
            leases.stale().exists(),
            held.values_list("pk", flat=True).first(),
        )

    def raw_context(self, reviewer, **by):
        campaign, *standing = sql.claim_context(reviewer_id=reviewer.pk, **by)
        return (field_values(campaign), *standing)

    def test_the_claim_context_is_the_orms(self):
        other = UserFactory(roles=["reviewer"])
        for reviewer in (self.reviewer, other):
            assert self.raw_context(reviewer, slug=self.campaign.slug) == self.orm_context(reviewer)
        ReviewerRemoval.objects.create(campaign=self.campaign, reviewer=other)
        self.campaign.reviewers.add(other)
        Assignment.objects.filter(pk=self.assignment.pk).update(lease_expires_at=sql.db_now())
        for reviewer in (self.reviewer, other):
            raw = self.raw_context(reviewer, campaign_id=self.campaign.pk)
            assert raw == self.orm_context(reviewer)
        assert raw[1:] == (True, True, True, None)  # named, removed, a lapsed lease, none held
        assert sql.claim_context(reviewer_id=other.pk, slug="no-such") == (
            None,
            False,
            False,
            False,
            None,
        )

    def test_an_items_outputs_are_the_orms(self):
        task, generations = sql.item_outputs(self.item.pk)
        shown = list(ItemOutput.objects.shown(self.item.pk))
        assert field_values(task) == field_values(shown[0].item.task)
        assert {pk: field_values(g) for pk, g in generations.items()} == {
            o.pk: field_values(o.generation) for o in shown
        }

    def test_the_review_page_rows_are_the_orms(self):
        assignment, campaign, removed, done = sql.review_page(
            token=self.assignment.token, slug=self.campaign.slug
        )
        assert field_values(assignment) == field_values(Assignment.objects.get(pk=assignment.pk))
        assert field_values(campaign) == field_values(Campaign.objects.get(pk=campaign.pk))
        assert campaign.redact == ["Acme"] and assignment.order == [3, 1]  # JSON, decoded
        assert (removed, done) == (False, 0)
        assert sql.review_page(token=self.assignment.token, slug="other") is None

    def test_an_items_reviews_are_the_orms(self):
        first, second = self.item.outputs.order_by("pk")
        review_create(
            self.item,
            self.reviewer,
            scores={first: {"accuracy": 4, "completeness": None}, second: {"accuracy": 2}},
            preference=second,
            flags={first: ["refusal"]},
        )
        review_create(self.item, UserFactory(), scores={}, preference="tie")  # no scores
        orm = Review.objects.filter(item=self.item).order_by("submitted_at", "pk", "scores__pk")
        assert disputes_sql.item_reviews(self.item.pk) == list(
            orm.values_list(
                "pk",
                "preference",
                "preferred_output_id",
                "flags",
                "scores__output_id",
                "scores__dimension",
                "scores__value",
            )
        )
        assert len(disputes_sql.item_reviews(self.item.pk)) == 4

    def test_the_submits_assignment_is_the_orms(self):
        raw, removed = sql.submit_assignment(token=self.assignment.token)
        orm = Assignment.objects.select_related("item__campaign").get(pk=self.assignment.pk)
        assert removed is False
        ReviewerRemoval.objects.create(campaign=self.campaign, reviewer=self.reviewer)
        assert sql.submit_assignment(token=self.assignment.token)[1] is True
        assert field_values(raw) == field_values(orm)
        assert field_values(raw.item) == field_values(orm.item)
        assert field_values(raw.item.campaign) == field_values(orm.item.campaign)
        assert sql.submit_assignment(token="no-such") is None


@pytest.mark.postgres
class FencedSubmitTests(TestCase):
    """PostgreSQL's one-statement fence and writes do what the ORM's steps do (SQLite runs
    those steps)."""

    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(items=2, overlap=2)
        cls.reviewer = UserFactory(roles=["reviewer"])
        cls.assignments = []
        for item in ReviewItem.objects.filter(campaign=cls.campaign).order_by("pk"):
            order = list(item.outputs.order_by("pk").values_list("pk", flat=True))
            cls.assignments.append(
                Assignment.objects.create(
                    item=item,
                    campaign=cls.campaign,
                    reviewer=cls.reviewer,
                    slot=0,
                    overlap=2,
                    order=order[::-1],
                    lease_expires_at=sql.db_now() + timedelta(minutes=5),
                )
            )

    def parsed(self, assignment):
        first, second = assignment.order
        return {
            "scores": {first: {"accuracy": 4.0, "completeness": None}, second: {"accuracy": 2.0}},
            "preference": "output",
            "preferred_output_id": second,
            "flags": {str(first): ["refusal"]},
            "comment": "close call",
            "seconds_spent": 42,
        }

    def outcome(self, assignment):
        """What a submit left, with output ids as their position in the presented order."""
        position = {pk: n for n, pk in enumerate(assignment.order)}
        a = Assignment.objects.get(pk=assignment.pk)
        review = Review.objects.filter(assignment=a).first()
        item = ReviewItem.objects.get(pk=a.item_id)
        stored = None
        if review is not None:
            stored = {
                "reviewer": review.reviewer_id,
                "preference": review.preference,
                "preferred": position[review.preferred_output_id],
                "flags": {position[int(k)]: v for k, v in review.flags.items()},
                "comment": review.comment,
                "seconds": review.seconds_spent,
                "order": [position[pk] for pk in review.presented_order],
                "after_fence": review.submitted_at >= a.submitted_at,
                "scores": sorted(
                    (position[o], d, v)
                    for o, d, v in review.scores.values_list("output_id", "dimension", "value")
                ),
            }
        return (a.state, a.submit_key, item.submitted_count, item.state, stored)

    def test_the_statement_writes_what_the_orm_writes(self):
        raw, orm = self.assignments
        parsed = self.parsed(raw)
        stored = sql.review_store_fenced(
            assignment=raw,
            reviewer_id=self.reviewer.pk,
            key="k",
            review=parsed,
            scores=_score_rows(parsed),
        )
        assert stored is not None and stored[2:] == (1, 2, "open")
        fenced = (
            Assignment.objects.filter(pk=orm.pk)
            .active()
            .update(state=Assignment.State.SUBMITTED, submit_key="k", submitted_at=Now())
        )
        assert fenced == 1
        _review_store(assignment=orm, reviewer=self.reviewer, parsed=self.parsed(orm))
        assert self.outcome(raw) == self.outcome(orm)
        assert self.outcome(raw)[4]["scores"] == [
            (0, "accuracy", 4.0),
            (0, "completeness", None),
            (1, "accuracy", 2.0),
        ]

    def test_a_fence_that_matches_nothing_writes_nothing(self):
        raw = self.assignments[0]
        Assignment.objects.filter(pk=raw.pk).update(state=Assignment.State.EXPIRED)
        before = self.outcome(raw)
        stored = sql.review_store_fenced(
            assignment=raw,
            reviewer_id=self.reviewer.pk,
            key="k",
            review=self.parsed(raw),
            scores=[],
        )
        assert stored is None and self.outcome(raw) == before
        assert before[4] is None and not Review.objects.exists()


def test_literal_writes_code_constants_and_refuses_anything_else():
    assert sql.literal(*Assignment.BLOCKING) == "'active', 'submitted', 'skipped'"
    for outside in ("active'; DROP TABLE reviews_review; --", "Active", "", "a b"):
        with pytest.raises(ValueError, match="not a code constant"):
            sql.literal(outside)
