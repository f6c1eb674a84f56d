"""Double assignment: claim, leases, submit fencing, skip, release, counterbalancing."""

from collections import Counter
from datetime import timedelta

from django.db.models import F, Sum
from django.test import TestCase
from django.utils import timezone

from reviews import review as services
from reviews.models import Assignment, ItemOutput, Review, ReviewItem
from tests.factories import ContenderFactory, UserFactory, campaign_ready
from tests.reviews.helpers import full_review, invariant_violations


def expire(assignment: Assignment) -> None:
    """Let a lease run out (the lease clock is the database's; move the row, not the clock)."""
    Assignment.objects.filter(pk=assignment.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=5)
    )


class ClaimTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(items=5, overlap=2)
        cls.a = UserFactory(username="rev-a", roles=["reviewer"])
        cls.b = UserFactory(username="rev-b", roles=["reviewer"])
        cls.c = UserFactory(username="rev-c", roles=["reviewer"])

    def claim(self, user):
        return services.assignment_claim_next(campaign=self.campaign, reviewer=user)

    def finish(self, user):
        claim = self.claim(user)
        result = services.assignment_submit(
            token=claim.assignment.token,
            reviewer=user,
            key="k-" + claim.assignment.token,
            data=full_review(claim.assignment),
        )
        assert result.code == "saved", result.errors
        return claim.assignment

    def test_it_gives_back_the_active_lease_instead_of_a_second_item(self):
        first = self.claim(self.a)
        again = self.claim(self.a)
        assert not first.resumed and again.resumed
        assert again.assignment.pk == first.assignment.pk
        assert Assignment.objects.filter(reviewer=self.a).count() == 1
        assert ReviewItem.objects.get(pk=first.assignment.item_id).live_count == 1

    def test_it_gives_each_item_exactly_k_distinct_reviewers(self):
        for user in (self.a, self.b, self.c):
            while (claim := self.claim(user)) is not None:
                result = services.assignment_submit(
                    token=claim.assignment.token,
                    reviewer=user,
                    key=claim.assignment.token,
                    data=full_review(claim.assignment),
                )
                assert result.code == "saved", result.errors
        for item in ReviewItem.objects.filter(campaign=self.campaign):
            reviewers = list(item.reviews.values_list("reviewer_id", flat=True))
            assert len(reviewers) == 2 and len(set(reviewers)) == 2
            assert item.state in ("agreed", "disputed")
        # a and b took all five items each; c found nothing left.
        assert Review.objects.filter(reviewer=self.c).count() == 0
        assert invariant_violations(self.campaign) == []

    def test_it_offers_items_already_in_review_first(self):
        started = self.claim(self.a).assignment
        # b must get the item a is working on, so that pairs complete (breadth first).
        assert self.claim(self.b).assignment.item_id == started.item_id

    def test_it_orders_items_per_reviewer_and_not_by_id(self):
        import random

        orders = {}
        for user in (self.a, self.b, self.c):
            # One campaign per reviewer (overlap 1, so only this reviewer's own order counts),
            # with random keys as review_items_sync draws them.
            campaign = campaign_ready(items=12, overlap=1)
            rng = random.Random(user.pk)
            for item in ReviewItem.objects.filter(campaign=campaign):
                ReviewItem.objects.filter(pk=item.pk).update(shuffle_key=rng.randrange(2**31))
            claimed = []
            while (
                claim := services.assignment_claim_next(campaign=campaign, reviewer=user)
            ) is not None:
                a = claim.assignment
                services.assignment_submit(
                    token=a.token, reviewer=user, key=a.token, data=full_review(a)
                )
                claimed.append(a.item_id)
            keys = dict(
                ReviewItem.objects.filter(campaign=campaign).values_list("pk", "shuffle_key")
            )
            offset = services.shuffle_offset(campaign=campaign, reviewer=user)
            # Fresh items come in key order from the reviewer's own offset, wrapping around.
            expected = sorted(keys, key=lambda pk: (keys[pk] < offset, keys[pk]))
            assert claimed == expected
            assert claimed != sorted(claimed)  # not by id (creation order)
            orders[user.username] = offset
        assert len(set(orders.values())) == 3

    def test_it_refuses_a_removed_reviewer_and_a_closed_campaign(self):
        services.reviewer_remove_from_campaign(campaign=self.campaign, reviewer=self.a)
        with self.assertRaises(services.NotReviewable):
            self.claim(self.a)
        self.campaign.status = "closed"
        self.campaign.save(update_fields=["status"])
        with self.assertRaises(services.NotReviewable):
            self.claim(self.b)

    def test_it_offers_only_ready_open_items(self):
        ReviewItem.objects.filter(campaign=self.campaign).update(ready=False, state="waiting")
        assert self.claim(self.a) is None
        item = ReviewItem.objects.filter(campaign=self.campaign).first()
        ReviewItem.objects.filter(pk=item.pk).update(ready=True, state="open")
        assert self.claim(self.a).assignment.item_id == item.pk


class LeaseTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(items=1, overlap=1, lease_minutes=20)
        cls.a = UserFactory(username="rev-a", roles=["reviewer"])
        cls.b = UserFactory(username="rev-b", roles=["reviewer"])

    def test_it_sets_the_lease_from_the_campaign(self):
        before = timezone.now()
        assignment = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        assert (
            timedelta(minutes=19)
            < assignment.lease_expires_at - before
            <= timedelta(minutes=20, seconds=5)
        )

    def test_it_expires_a_lease_and_reassigns_the_slot(self):
        abandoned = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        assert services.assignment_claim_next(campaign=self.campaign, reviewer=self.b) is None
        expire(abandoned)
        taken = services.assignment_claim_next(campaign=self.campaign, reviewer=self.b).assignment
        assert taken.item_id == abandoned.item_id and taken.slot == 0
        abandoned.refresh_from_db()
        assert abandoned.state == "expired"
        assert ReviewItem.objects.get(pk=taken.item_id).live_count == 1

    def test_it_refuses_a_late_submit_after_reassignment_and_says_so(self):
        abandoned = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        expire(abandoned)
        services.assignment_claim_next(campaign=self.campaign, reviewer=self.b)
        result = services.assignment_submit(
            token=abandoned.token, reviewer=self.a, key="late", data=full_review(abandoned)
        )
        assert result.code == "reassigned" and not result.ok
        assert "given to another reviewer" in result.message
        assert Review.objects.count() == 0
        assert invariant_violations(self.campaign) == []

    def test_it_saves_a_late_submit_when_nobody_took_the_slot(self):
        assignment = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        expire(assignment)
        assert services.assignment_sweep_expired() == 1
        result = services.assignment_submit(
            token=assignment.token, reviewer=self.a, key="late", data=full_review(assignment)
        )
        assert result.code == "saved_late" and "still needed your review" in result.message
        item = ReviewItem.objects.get(pk=assignment.item_id)
        assert (item.live_count, item.submitted_count, item.state) == (1, 1, "agreed")
        assert invariant_violations(self.campaign) == []

    def test_it_accepts_a_submit_on_a_lapsed_lease_nobody_swept_yet(self):
        assignment = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        expire(assignment)
        result = services.assignment_submit(
            token=assignment.token, reviewer=self.a, key="k", data=full_review(assignment)
        )
        assert result.code == "saved"

    def test_it_gives_an_expired_item_back_to_the_same_reviewer_with_the_same_order(self):
        first = services.assignment_claim_next(campaign=self.campaign, reviewer=self.a).assignment
        expire(first)
        again = services.assignment_claim_next(campaign=self.campaign, reviewer=self.a)
        assert not again.resumed and again.assignment.pk == first.pk
        # The page still open from the first lease keeps working, with the same labels.
        assert again.assignment.token == first.token and again.assignment.order == first.order
        assert again.assignment.state == "active"
        assert again.assignment.lease_expires_at > timezone.now()
        assert invariant_violations(self.campaign) == []

    def test_it_extends_the_lease_on_heartbeat_up_to_a_cap(self):
        assignment = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        Assignment.objects.filter(pk=assignment.pk).update(
            lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        extended = services.assignment_heartbeat(token=assignment.token, reviewer=self.a)
        assert extended > timezone.now() + timedelta(minutes=19)
        # Claimed long ago: the lease cannot be pushed past claim + 4 leases.
        Assignment.objects.filter(pk=assignment.pk).update(
            created_at=timezone.now() - timedelta(minutes=79),
            lease_expires_at=timezone.now() + timedelta(seconds=30),
        )
        capped = services.assignment_heartbeat(token=assignment.token, reviewer=self.a)
        assert capped < timezone.now() + timedelta(minutes=1, seconds=5)

    def test_it_refuses_a_heartbeat_on_a_lost_lease(self):
        assignment = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        expire(assignment)
        with self.assertRaisesMessage(services.LeaseGone, "ran out"):
            services.assignment_heartbeat(token=assignment.token, reviewer=self.a)
        with self.assertRaises(Assignment.DoesNotExist):
            services.assignment_heartbeat(token=assignment.token, reviewer=self.b)

    def test_a_heartbeat_after_the_submit_says_it_was_submitted(self):
        a = services.assignment_claim_next(campaign=self.campaign, reviewer=self.a).assignment
        result = services.assignment_submit(
            token=a.token, reviewer=self.a, key="k1", data=full_review(a)
        )
        assert result.ok
        with self.assertRaisesMessage(services.LeaseGone, "already submitted"):
            services.assignment_heartbeat(token=a.token, reviewer=self.a)


class SubmitTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(items=2, overlap=2)
        cls.a = UserFactory(username="rev-a", roles=["reviewer"])
        cls.b = UserFactory(username="rev-b", roles=["reviewer"])

    def setUp(self):
        self.assignment = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment

    def submit(self, key="key-1", data=None, user=None):
        return services.assignment_submit(
            token=self.assignment.token,
            reviewer=user or self.a,
            key=key,
            data=data if data is not None else full_review(self.assignment),
        )

    def test_it_saves_once_on_a_double_submit_and_says_so(self):
        first, second = self.submit(), self.submit()
        assert first.code == "saved"
        assert second.code == "duplicate" and "not saved twice" in second.message and second.ok
        assert Review.objects.filter(reviewer=self.a).count() == 1
        assert ReviewItem.objects.get(pk=self.assignment.item_id).submitted_count == 1

    def test_it_rejects_a_second_review_with_another_key(self):
        self.submit()
        again = self.submit(key="other")
        assert again.code == "already_submitted" and not again.ok
        assert Review.objects.count() == 1

    def test_it_stores_scores_by_output_not_by_label(self):
        order = self.assignment.order
        data = {
            "scores": {
                "A": {"accuracy": 2, "completeness": "na"},
                "B": {"accuracy": 5, "completeness": 4},
            },
            "preference": "B",
            "flags": {"A": ["hallucination"]},
            "comment": " fine ",
        }
        assert self.submit(data=data).code == "saved"
        review = Review.objects.get()
        values = {(s.output_id, s.dimension): s.value for s in review.scores.all()}
        assert values == {
            (order[0], "accuracy"): 2.0,
            (order[0], "completeness"): None,
            (order[1], "accuracy"): 5.0,
            (order[1], "completeness"): 4.0,
        }
        assert review.preference == "output" and review.preferred_output_id == order[1]
        assert review.flags == {str(order[0]): ["hallucination"]}
        assert review.presented_order == order and review.comment == "fine"

    def test_it_requires_every_score_and_a_preference(self):
        result = self.submit(data={"scores": {"A": {"accuracy": 3}}, "preference": ""})
        assert result.code == "invalid"
        assert result.errors == {
            "scores.A.completeness": "required",
            "scores.B.accuracy": "required",
            "scores.B.completeness": "required",
            "preference": "required: choose an output, tie or both bad",
        }
        assert Review.objects.count() == 0
        assert Assignment.objects.get(pk=self.assignment.pk).state == "active"

    def test_it_rejects_out_of_range_unknown_and_disallowed_values(self):
        data = {
            "scores": {
                "A": {"accuracy": 9, "completeness": 3, "speed": 1},
                "B": {"accuracy": "na", "completeness": True},
                "C": {},
            },
            "preference": "Z",
            "flags": {"A": ["boring"]},
        }
        errors = self.submit(data=data).errors
        assert errors["scores.A.accuracy"] == "must be from 1 to 5"
        assert errors["scores.A.speed"] == "unknown dimension"
        assert errors["scores.B.accuracy"] == "N/A is not allowed here; choose a score"
        assert errors["scores.B.completeness"] == "must be a number from 1 to 5"
        assert errors["scores.C"].startswith("unknown label")
        assert errors["preference"].startswith("must be one of A, B, tie, both_bad")
        assert errors["flags.A"].startswith("must be a list drawn from")

    def test_it_settles_the_item_when_the_kth_review_lands(self):
        assert self.submit(data=full_review(self.assignment, value=1)).code == "saved"
        other = services.assignment_claim_next(campaign=self.campaign, reviewer=self.b).assignment
        assert other.item_id == self.assignment.item_id
        result = services.assignment_submit(
            token=other.token, reviewer=self.b, key="b", data=full_review(other, value=5)
        )
        assert result.code == "saved"
        item = ReviewItem.objects.get(pk=other.item_id)
        assert item.state == "disputed" and item.submitted_count == 2
        assert {r["part"] for r in item.dispute_reasons} >= {"accuracy", "completeness"}
        assert item.arbitration.state == "open"

    def test_it_hides_other_reviewers_tokens(self):
        with self.assertRaises(Assignment.DoesNotExist):
            self.submit(user=self.b)


class SkipReleaseRemoveTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = campaign_ready(items=1, overlap=2)
        cls.a = UserFactory(username="rev-a", roles=["reviewer"])
        cls.b = UserFactory(username="rev-b", roles=["reviewer"])
        cls.c = UserFactory(username="rev-c", roles=["reviewer"])

    def test_it_skips_with_a_reason_and_never_offers_the_item_again(self):
        assignment = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.a
        ).assignment
        with self.assertRaises(ValueError):
            services.assignment_skip(token=assignment.token, reviewer=self.a, reason=" ")
        assert services.assignment_skip(
            token=assignment.token, reviewer=self.a, reason="Conflict of interest"
        )
        assignment.refresh_from_db()
        assert (assignment.state, assignment.skip_reason) == ("skipped", "Conflict of interest")
        assert services.assignment_claim_next(campaign=self.campaign, reviewer=self.a) is None
        result = services.assignment_submit(
            token=assignment.token, reviewer=self.a, key="x", data=full_review(assignment)
        )
        assert result.code == "skipped"
        assert invariant_violations(self.campaign) == []

    def test_it_releases_a_lease_back_to_the_pool(self):
        services.assignment_claim_next(campaign=self.campaign, reviewer=self.a)
        held = services.assignment_claim_next(campaign=self.campaign, reviewer=self.b).assignment
        assert services.assignment_claim_next(campaign=self.campaign, reviewer=self.c) is None
        assert services.assignment_release(campaign=self.campaign, token=held.token)
        assert not services.assignment_release(campaign=self.campaign, token=held.token)
        assert (
            services.assignment_claim_next(
                campaign=self.campaign, reviewer=self.c
            ).assignment.item_id
            == held.item_id
        )
        result = services.assignment_submit(
            token=held.token, reviewer=self.b, key="x", data=full_review(held)
        )
        assert result.code == "released" and "administrator" in result.message
        assert invariant_violations(self.campaign) == []

    def test_it_removes_a_reviewer_and_returns_their_leases(self):
        held = services.assignment_claim_next(campaign=self.campaign, reviewer=self.a).assignment
        assert services.reviewer_remove_from_campaign(campaign=self.campaign, reviewer=self.a) == 1
        held.refresh_from_db()
        assert held.state == "released"
        assert ReviewItem.objects.get(pk=held.item_id).live_count == 0
        services.assignment_claim_next(campaign=self.campaign, reviewer=self.b)
        services.assignment_claim_next(campaign=self.campaign, reviewer=self.c)
        assert ReviewItem.objects.get(pk=held.item_id).live_count == 2
        assert services.reviewer_restore_to_campaign(campaign=self.campaign, reviewer=self.a)
        assert services.assignment_claim_next(campaign=self.campaign, reviewer=self.a) is None


class CounterbalancingTests(TestCase):
    def position_counts(self, campaign, reviewers):
        counts = Counter()
        preference = None if campaign.mode == "rubric" else "A"
        for user in reviewers:
            while (
                claim := services.assignment_claim_next(campaign=campaign, reviewer=user)
            ) is not None:
                a = claim.assignment
                contenders = dict(
                    ItemOutput.objects.filter(pk__in=a.order).values_list(
                        "pk", "generation__contender_id"
                    )
                )
                for position, output_id in enumerate(a.order):
                    counts[(contenders[output_id], position)] += 1
                result = services.assignment_submit(
                    token=a.token,
                    reviewer=user,
                    key=a.token,
                    data=full_review(a, preference=preference),
                )
                assert result.code == "saved", result.errors
        return counts

    def test_it_balances_positions_with_two_contenders(self):
        campaign = campaign_ready(items=21, overlap=2)
        reviewers = [UserFactory(roles=["reviewer"]) for _ in range(3)]
        counts = self.position_counts(campaign, reviewers)
        assert sum(counts.values()) == 21 * 2 * 2
        # k=2 and two outputs: every item alone shows each contender once in each position.
        assert set(counts.values()) == {21}

    def test_it_balances_positions_with_three_contenders(self):
        contenders = [ContenderFactory() for _ in range(3)]
        campaign = campaign_ready(items=20, overlap=2, contenders=contenders, mode="rubric")
        reviewers = [UserFactory(roles=["reviewer"]) for _ in range(2)]
        counts = self.position_counts(campaign, reviewers)
        assert sum(counts.values()) == 20 * 2 * 3
        per_cell = [counts[(c.pk, p)] for c in contenders for p in range(3)]
        # 40 assignments over 3 positions: 13.3 each; allow a small bound (one block of items).
        assert max(per_cell) - min(per_cell) <= 4, counts

    def test_an_items_order_is_drawn_at_random_not_from_its_id(self):
        # Blinding: never order by creation time or pk. Two campaigns made
        # alike give their items different classes, neither follows the ids, and each holds
        # the 2n classes in equal shares.
        contenders = [ContenderFactory() for _ in range(3)]
        runs = []
        for _ in range(2):
            campaign = campaign_ready(items=30, overlap=2, contenders=contenders, mode="rubric")
            items = ReviewItem.objects.filter(campaign=campaign).order_by("pk")
            rotations = list(items.values_list("rotation", flat=True))
            assert sorted(Counter(rotations).values()) == [5] * 6
            assert rotations != [pk % 6 for pk in items.values_list("pk", flat=True)]
            runs.append(rotations)
        assert runs[0] != runs[1]

    def test_every_claim_stores_the_order_of_its_slot(self):
        # On PostgreSQL the claim computes the order in SQL (its one statement); it must be
        # presented_order's, whatever the number of outputs and the item's block parity.
        for n_outputs, k in ((1, 1), (2, 2), (3, 3), (4, 2)):
            contenders = [ContenderFactory() for _ in range(n_outputs)]
            campaign = campaign_ready(items=5, overlap=k, contenders=contenders, mode="rubric")
            reviewers = [UserFactory(roles=["reviewer"]) for _ in range(k)]
            claimed = 0
            for user in reviewers:
                while (
                    claim := services.assignment_claim_next(campaign=campaign, reviewer=user)
                ) is not None:
                    a = claim.assignment
                    ids = list(
                        ItemOutput.objects.filter(item_id=a.item_id)
                        .order_by("generation__contender_id", "pk")
                        .values_list("pk", flat=True)
                    )
                    rotation = ReviewItem.objects.get(pk=a.item_id).rotation
                    expected = services.presented_order(
                        rotation=rotation, output_ids=ids, slot=a.slot
                    )
                    assert a.order == expected, (n_outputs, a.item_id, a.slot)
                    assert Assignment.objects.get(pk=a.pk).order == expected
                    assert sorted(claim.answer[1]) == sorted(ids)  # the answer's outputs
                    services.assignment_submit(
                        token=a.token,
                        reviewer=user,
                        key=a.token,
                        data=full_review(a, preference=None),
                    )
                    claimed += 1
            assert claimed == 5 * k

    def test_it_never_repeats_the_first_reviewers_order_for_the_second(self):
        contenders = [ContenderFactory() for _ in range(3)]
        campaign = campaign_ready(items=6, overlap=3, contenders=contenders, mode="rubric")
        for item in ReviewItem.objects.filter(campaign=campaign):
            ids = list(
                item.outputs.order_by("generation__contender_id", "pk").values_list("pk", flat=True)
            )
            orders = [
                tuple(services.presented_order(rotation=item.rotation, output_ids=ids, slot=s))
                for s in range(3)
            ]
            assert len(set(orders)) == 3
            assert all(len({o[p] for o in orders}) == 3 for p in range(3))


class SweeperTests(TestCase):
    def test_it_returns_every_stale_slot_once(self):
        campaign = campaign_ready(items=3, overlap=2)
        users = [UserFactory(roles=["reviewer"]) for _ in range(4)]
        held = [
            services.assignment_claim_next(campaign=campaign, reviewer=u).assignment for u in users
        ]
        Assignment.objects.filter(pk__in=[a.pk for a in held[:3]]).update(
            lease_expires_at=timezone.now() - timedelta(minutes=1)
        )
        assert services.assignment_sweep_expired() == 3
        assert services.assignment_sweep_expired() == 0
        assert Assignment.objects.filter(state="expired").count() == 3
        assert ReviewItem.objects.filter(campaign=campaign).aggregate(n=Sum("live_count"))["n"] == 1
        assert invariant_violations(campaign) == []
        assert not ReviewItem.objects.filter(live_count__gt=F("overlap")).exists()

    def test_it_returns_the_leases_of_accounts_that_can_no_longer_finish_them(self):
        """A claim in flight while an admin deactivates the account (or takes its reviewer
        role) commits after the account change released the leases: the sweep returns it."""
        campaign = campaign_ready(items=3, overlap=2)
        gone, demoted, working = (UserFactory(roles=["reviewer"]) for _ in range(3))
        held = {
            u.pk: services.assignment_claim_next(campaign=campaign, reviewer=u).assignment
            for u in (gone, demoted, working)
        }
        type(gone).objects.filter(pk=gone.pk).update(is_active=False)
        demoted.groups.clear()
        assert services.assignment_sweep_expired() == 2
        states = dict(Assignment.objects.values_list("reviewer_id", "state"))
        assert states == {gone.pk: "released", demoted.pk: "released", working.pk: "active"}
        assert Assignment.objects.get(pk=held[working.pk].pk).state == "active"
        assert ReviewItem.objects.filter(campaign=campaign).aggregate(n=Sum("live_count"))["n"] == 1
        assert invariant_violations(campaign) == []
        assert services.assignment_sweep_expired() == 0
