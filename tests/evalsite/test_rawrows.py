"""evalsite.rawrows: hand-written SQL must give and store exactly what the ORM does."""

import pytest
from django.db import IntegrityError, transaction
from django.db.models import Model
from django.test import TestCase

from evalsite import rawrows
from evalsite.roles import ADMIN, REVIEWER, user_with_roles
from reviews import services
from reviews.models import Assignment, Review, ReviewItem, Score
from tasks.models import Campaign
from tests.factories import UserFactory, campaign_ready


def field_values(obj: Model) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


class RawRowsTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(
            items=1, redact=["Acme"], weights={"quality": 0.7, "cost": 0.3}, lease_minutes=7
        )
        cls.reviewer = UserFactory(username="raw-rev", roles=["reviewer"])

    def test_the_campaign_a_claim_reads_by_slug_equals_the_orm_instance(self):
        raw = services.assignment_claim_next(
            slug=self.campaign.slug, reviewer=self.reviewer
        ).campaign
        self.assertEqual(field_values(raw), field_values(Campaign.objects.get(pk=self.campaign.pk)))
        self.assertEqual(raw.rubric[0]["key"], self.campaign.rubric[0]["key"])  # JSON, decoded
        with self.assertRaises(services.NotReviewable):
            services.assignment_claim_next(slug="no-such-campaign", reviewer=self.reviewer)

    def test_instances_split_a_joined_row_into_each_models_instance(self):
        claim = services.assignment_claim_next(campaign=self.campaign, reviewer=self.reviewer)
        assignment = services._submit_assignment(
            token=claim.assignment.token, reviewer=self.reviewer
        )
        orm = Assignment.objects.select_related("item__campaign").get(pk=claim.assignment.pk)
        self.assertEqual(field_values(assignment), field_values(orm))
        self.assertEqual(field_values(assignment.item), field_values(orm.item))
        self.assertEqual(field_values(assignment.item.campaign), field_values(orm.item.campaign))
        with self.assertRaises(Assignment.DoesNotExist):
            services._submit_assignment(token=claim.assignment.token, reviewer=UserFactory())

    def test_insert_stores_what_save_would_and_takes_the_clock_in_the_insert(self):
        claim = services.assignment_claim_next(campaign=self.campaign, reviewer=self.reviewer)
        stored = Assignment.objects.get(pk=claim.assignment.pk)
        self.assertEqual(field_values(claim.assignment), field_values(stored))
        self.assertEqual(stored.order, claim.assignment.order)
        self.assertIsNotNone(stored.created_at)

        item = ReviewItem.objects.get(pk=stored.item_id)
        review = rawrows.insert(
            Review(
                item=item,
                reviewer=self.reviewer,
                flags={"1": ["unsafe"]},
                presented_order=[3, 1],
            ),
            db_now=["submitted_at"],
        )
        saved = Review.objects.get(pk=review.pk)
        self.assertEqual(field_values(review), field_values(saved))
        self.assertEqual(saved.flags, {"1": ["unsafe"]})
        self.assertIsNotNone(saved.submitted_at)

        output = item.outputs.first()
        rawrows.insert_rows(
            Score,
            ("review_id", "output_id", "dimension", "value"),
            [(review.pk, output.pk, "accuracy", 4.0), (review.pk, output.pk, "clarity", None)],
        )
        self.assertEqual(
            sorted(saved.scores.values_list("dimension", "value")),
            [("accuracy", 4.0), ("clarity", None)],
        )

    @pytest.mark.postgres
    def test_insert_with_a_with_clause_applies_both_statements_or_neither(self):
        claim = services.assignment_claim_next(campaign=self.campaign, reviewer=self.reviewer)
        item = ReviewItem.objects.get(pk=claim.assignment.item_id)
        self.assertEqual(item.live_count, 1)  # the claim's own insert + count
        other = UserFactory(username="raw-other", roles=["reviewer"])
        bump = (
            "WITH bump AS (UPDATE reviews_reviewitem SET live_count = live_count + 1 "
            "WHERE id = %s)",
            [item.pk],
        )

        def assignment(reviewer, slot):
            return Assignment(
                item=item,
                campaign=self.campaign,
                reviewer=reviewer,
                slot=slot,
                overlap=item.overlap,
                order=claim.assignment.order,
                lease_expires_at=claim.assignment.lease_expires_at,
            )

        stored = rawrows.insert(assignment(other, 1), with_=bump)
        self.assertEqual(Assignment.objects.get(pk=stored.pk).reviewer_id, other.pk)
        self.assertEqual(ReviewItem.objects.get(pk=item.pk).live_count, 2)
        # The same reviewer twice on the item: the insert fails, and the count stays.
        with self.assertRaises(IntegrityError), transaction.atomic():
            rawrows.insert(assignment(other, 0), with_=bump)
        self.assertEqual(ReviewItem.objects.get(pk=item.pk).live_count, 2)

    def test_user_with_roles_reads_the_user_roles_and_extra_columns(self):
        admin = UserFactory(username="raw-admin", roles=["reviewer"], is_superuser=True)
        user = user_with_roles(where="u.id = %s", params=[admin.pk])
        self.assertEqual(field_values(user), field_values(type(admin).objects.get(pk=admin.pk)))
        self.assertEqual(user._evalsite_roles, {REVIEWER, ADMIN})
        user = user_with_roles(
            where="u.id = %s", params=[admin.pk], extra=", %s AS answer", extra_params=[42]
        )
        self.assertEqual(user.answer, 42)
        self.assertIsNone(user_with_roles(where="u.id = %s", params=[-1]))


def test_literal_writes_code_constants_and_refuses_anything_else():
    assert rawrows.literal(*services.BLOCKING) == "'active', 'submitted', 'skipped'"
    for outside in ("active'; DROP TABLE reviews_review; --", "Active", "", "a b"):
        with pytest.raises(ValueError, match="not a code constant"):
            rawrows.literal(outside)
