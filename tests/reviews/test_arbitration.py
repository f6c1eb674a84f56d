"""Settling items in the database, claiming and resolving arbitrations."""

import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.test import TestCase, TransactionTestCase
from django.utils import timezone

from reviews.arbitration.services import (
    AlreadyResolved,
    ArbitrationGone,
    ResolveInvalid,
    arbitration_claim_next,
    arbitration_release,
    arbitration_resolve,
)
from reviews.disputes.rules import item_settle
from reviews.models import Arbitration, ReviewItem, Score
from reviews.rubric import label_map
from tests.factories import CampaignFactory, ReviewItemFactory, UserFactory, personas, review_create


def disputed_item(
    campaign, first, second, *, acc=(5, 2), comp=(4, 4), prefs=("A", "B"), flags=None, task=None
):
    """An item whose two reviews differ on accuracy of output 1 (5 vs 2) and on preference."""
    item = ReviewItemFactory(campaign=campaign, **({"task": task} if task else {}))
    o1, o2 = item.outputs.order_by("pk")
    pick = {"A": o1, "B": o2, "tie": "tie", "both_bad": "both_bad", "": ""}
    review_create(
        item,
        first,
        scores={
            o1: {"accuracy": acc[0], "completeness": comp[0]},
            o2: {"accuracy": 3, "completeness": 3},
        },
        preference=pick[prefs[0]],
        flags=(flags or {}).get("first"),
    )
    review_create(
        item,
        second,
        scores={
            o1: {"accuracy": acc[1], "completeness": comp[1]},
            o2: {"accuracy": 4, "completeness": 3},
        },
        preference=pick[prefs[1]],
        flags=(flags or {}).get("second"),
    )
    item_settle(item)
    item.refresh_from_db()
    return item


class SettleTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory()

    def test_it_marks_a_disputed_item_and_opens_an_arbitration(self):
        item = disputed_item(self.campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        o1, o2 = (str(pk) for pk in item.outputs.order_by("pk").values_list("pk", flat=True))
        assert item.state == "disputed"
        assert sorted((r["part"], r["output"]) for r in item.dispute_reasons) == [
            ("accuracy", o1),
            ("preference", None),
        ]
        assert item.final["scores"] == {
            o1: {"accuracy": None, "completeness": 4.0},
            o2: {"accuracy": 3.5, "completeness": 3.0},
        }
        assert item.final["preference"] is None
        arbitration = Arbitration.objects.get(item=item)
        assert arbitration.state == "open" and arbitration.arbiter is None
        assert arbitration.reasons == item.dispute_reasons
        # Raw reviews stay as submitted.
        assert sorted(
            Score.objects.filter(review__item=item, dimension="accuracy", output_id=o1).values_list(
                "value", flat=True
            )
        ) == [2.0, 5.0]

    def test_settling_again_updates_an_open_arbitration_and_never_a_resolved_one(self):
        item = disputed_item(self.campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        arbitration = Arbitration.objects.get(item=item)
        # The reviews change (e.g. a re-import): the open arbitration takes the new reasons.
        Score.objects.filter(review__item=item, dimension="accuracy", value=2.0).update(value=5.0)
        item_settle(item)
        item.refresh_from_db()
        reopened = Arbitration.objects.get(item=item)
        assert reopened.pk == arbitration.pk and reopened.token == arbitration.token
        assert [r["part"] for r in reopened.reasons] == ["preference"]
        assert reopened.reasons == item.dispute_reasons
        # A resolved arbitration keeps what the arbiter saw, and the item is left alone.
        Arbitration.objects.filter(pk=arbitration.pk).update(state="resolved")
        Score.objects.filter(review__item=item, dimension="accuracy", value=5.0).update(value=1.0)
        ReviewItem.objects.filter(pk=item.pk).update(state="disputed")
        item.refresh_from_db()
        item_settle(item)
        assert Arbitration.objects.get(item=item).reasons == reopened.reasons
        assert Arbitration.objects.filter(item=item).count() == 1

    def test_it_marks_an_agreed_item_without_an_arbitration(self):
        item = disputed_item(
            self.campaign,
            self.users["reviewer_a"],
            self.users["reviewer_b"],
            acc=(4, 5),
            prefs=("tie", "tie"),
        )
        assert item.state == "agreed"
        assert item.final["preference"] == "tie"
        assert not Arbitration.objects.filter(item=item).exists()

    def test_it_disputes_a_one_sided_flag_only_when_the_campaign_says_so(self):
        for flags_dispute, state in ((False, "agreed"), (True, "disputed")):
            campaign = CampaignFactory(flags_dispute=flags_dispute)
            item = ReviewItemFactory(campaign=campaign)
            o1, o2 = item.outputs.order_by("pk")
            same = {o1: {"accuracy": 4, "completeness": 4}, o2: {"accuracy": 4, "completeness": 4}}
            review_create(
                item, self.users["reviewer_a"], scores=same, flags={o2: ["hallucination"]}
            )
            review_create(item, self.users["reviewer_b"], scores=same)
            item_settle(item)
            item.refresh_from_db()
            assert item.state == state
            assert item.dispute_reasons == [
                {
                    "part": "flag",
                    "output": str(o2.pk),
                    "flag": "hallucination",
                    "disputes": flags_dispute,
                    "detail": "hallucination raised by 1 of 2 reviewers",
                }
            ]

    def test_it_settles_three_reviewers_on_the_widest_gap(self):
        campaign = CampaignFactory(overlap=3)
        item = ReviewItemFactory(campaign=campaign)
        o1, o2 = item.outputs.order_by("pk")
        third = UserFactory(username="reviewer_c", roles=["reviewer"])
        for user, value in (
            (self.users["reviewer_a"], 3),
            (self.users["reviewer_b"], 4),
            (third, 5),
        ):
            review_create(
                item,
                user,
                scores={
                    o1: {"accuracy": value, "completeness": 4},
                    o2: {"accuracy": 4, "completeness": 4},
                },
                preference=o2,
            )
        item_settle(item)
        item.refresh_from_db()
        assert item.state == "disputed"
        assert [r["part"] for r in item.dispute_reasons] == ["accuracy"]
        assert item.final["preference"] == str(o2.pk)


class ArbitrationServiceTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory()
        cls.other_arbiter = UserFactory(username="arbiter_2", roles=["arbiter"])
        cls.item = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])

    def claim(self, user=None):
        return arbitration_claim_next(campaign=self.campaign, arbiter=user or self.users["arbiter"])

    def outputs(self, arbitration):
        return {label: int(pk) for label, pk in label_map(arbitration.order).items()}

    def test_it_claims_with_a_fresh_order_and_a_lease(self):
        before = Arbitration.objects.get(item=self.item).token
        arbitration = self.claim()
        assert arbitration.state == "active" and arbitration.arbiter == self.users["arbiter"]
        assert arbitration.token != before
        assert sorted(arbitration.order) == sorted(self.item.outputs.values_list("pk", flat=True))
        assert (
            timezone.now() < arbitration.lease_expires_at <= timezone.now() + timedelta(minutes=21)
        )
        # Asking again resumes the same one; another arbiter gets nothing while it is held.
        assert self.claim().token == arbitration.token
        assert self.claim(self.other_arbiter) is None

    def test_it_never_offers_an_item_to_someone_who_reviewed_it(self):
        reviewer = self.users["reviewer_a"]
        reviewer.groups.add(self.users["arbiter"].groups.get())
        assert self.claim(reviewer) is None
        assert self.claim() is not None

    def test_it_reoffers_an_expired_lease_and_fences_the_old_token(self):
        first = self.claim()
        Arbitration.objects.filter(pk=first.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        second = self.claim(self.other_arbiter)
        assert second.pk == first.pk and second.token != first.token
        with pytest.raises(ArbitrationGone):
            arbitration_resolve(
                token=first.token,
                arbiter=self.users["arbiter"],
                scores={"A": {"accuracy": 3}, "B": {"accuracy": 3}},
                preference="A",
                note="x",
            )
        assert ReviewItem.objects.get(pk=self.item.pk).state == "disputed"

    def test_it_resumes_its_own_expired_lease_with_the_same_token(self):
        first = self.claim()
        Arbitration.objects.filter(pk=first.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        again = self.claim()
        assert again.token == first.token and again.lease_expires_at > timezone.now()

    def test_it_releases_back_to_the_queue(self):
        first = self.claim()
        arbitration_release(token=first.token, arbiter=self.users["arbiter"])
        assert Arbitration.objects.get(pk=first.pk).state == "open"
        assert self.claim(self.other_arbiter).pk == first.pk

    def test_it_resolves_with_values_for_the_disputed_parts(self):
        arbitration = self.claim()
        labels = self.outputs(arbitration)
        o1 = min(labels.values())
        o1_label = next(k for k, v in labels.items() if v == o1)
        other = next(k for k in labels if k != o1_label)
        result, created = arbitration_resolve(
            token=arbitration.token,
            arbiter=self.users["arbiter"],
            scores={o1_label: {"accuracy": 4}},
            preference=other,
            note="  Output 1 is mostly right.  ",
        )
        assert created and result.state == "resolved" and result.note == "Output 1 is mostly right."
        item = ReviewItem.objects.get(pk=self.item.pk)
        assert item.state == "resolved"
        assert item.final["scores"][str(o1)] == {"accuracy": 4.0, "completeness": 4.0}
        assert item.final["preference"] == str(labels[other])
        assert item.final["arbitrated"] == ["accuracy", "preference"]
        assert item.final["corrections"] == []

    def test_it_records_corrections_of_agreed_parts(self):
        arbitration = self.claim()
        labels = self.outputs(arbitration)
        o1_label = next(k for k, v in labels.items() if v == min(labels.values()))
        o2_label = next(k for k in labels if k != o1_label)
        arbitration_resolve(
            token=arbitration.token,
            arbiter=self.users["arbiter"],
            scores={o1_label: {"accuracy": 3, "completeness": 4}, o2_label: {"accuracy": 2}},
            preference="tie",
            note="B misses the refund policy.",
        )
        item = ReviewItem.objects.get(pk=self.item.pk)
        o2 = str(labels[o2_label])
        assert item.final["corrections"] == [
            {"part": "accuracy", "output": o2, "from": 3.5, "to": 2.0}
        ]
        assert item.final["scores"][o2]["accuracy"] == 2.0
        assert item.final["preference"] == "tie"

    def test_it_rejects_a_resolution_missing_a_disputed_part_or_the_note(self):
        arbitration = self.claim()
        with pytest.raises(ResolveInvalid) as exc:
            arbitration_resolve(
                token=arbitration.token,
                arbiter=self.users["arbiter"],
                scores={},
                preference="",
                note=" ",
            )
        labels = self.outputs(arbitration)
        o1_label = next(k for k, v in labels.items() if v == min(labels.values()))
        assert exc.value.errors == {
            f"scores.{o1_label}.accuracy": "disputed: a value is required",
            "preference": "disputed: choose an output, tie or both_bad",
            "note": "a note explaining the decision is required",
        }
        with pytest.raises(ResolveInvalid) as exc:
            arbitration_resolve(
                token=arbitration.token,
                arbiter=self.users["arbiter"],
                scores={o1_label: {"accuracy": 9, "style": 3}, "Z": {}},
                preference="C",
                note="n",
            )
        assert exc.value.errors == {
            f"scores.{o1_label}.accuracy": "must be between 1 and 5",
            f"scores.{o1_label}.style": "unknown dimension",
            "scores.Z": "unknown output label",
            "preference": "must be an output label, tie or both_bad",
        }
        with pytest.raises(
            ResolveInvalid
        ) as exc:  # accuracy allows no N/A and no reviewer gave one
            arbitration_resolve(
                token=arbitration.token,
                arbiter=self.users["arbiter"],
                scores={o1_label: {"accuracy": None}},
                preference="tie",
                note="n",
            )
        assert exc.value.errors == {f"scores.{o1_label}.accuracy": "N/A is not allowed here"}
        assert Arbitration.objects.get(pk=arbitration.pk).state == "active"
        assert ReviewItem.objects.get(pk=self.item.pk).state == "disputed"

    def test_it_treats_a_double_submit_as_one(self):
        arbitration = self.claim()
        labels = self.outputs(arbitration)
        o1_label = next(k for k, v in labels.items() if v == min(labels.values()))
        kwargs = {
            "token": arbitration.token,
            "arbiter": self.users["arbiter"],
            "scores": {o1_label: {"accuracy": 4}},
            "preference": "tie",
            "note": "ok",
        }
        first, created = arbitration_resolve(**kwargs)
        again, created_again = arbitration_resolve(**{**kwargs, "note": " ok "})
        assert created and not created_again
        assert again.resolved_at == first.resolved_at
        # Other values once it is resolved are refused, never dropped as if saved.
        with pytest.raises(AlreadyResolved):
            arbitration_resolve(**{**kwargs, "preference": o1_label})
        with pytest.raises(AlreadyResolved):
            arbitration_resolve(**{**kwargs, "scores": {o1_label: {"accuracy": 2}}})
        assert ReviewItem.objects.get(pk=self.item.pk).final["preference"] == "tie"
        with pytest.raises(ArbitrationGone):  # someone else's token
            arbitration_resolve(**{**kwargs, "arbiter": self.other_arbiter})

    def test_it_rejects_a_new_fractional_value_on_an_ordinal_scale_but_keeps_an_agreed_mean(self):
        arbitration = self.claim()
        labels = self.outputs(arbitration)
        o1_label = next(k for k, v in labels.items() if v == min(labels.values()))
        o2_label = next(k for k in labels if k != o1_label)
        kwargs = {"token": arbitration.token, "arbiter": self.users["arbiter"], "note": "n"}
        with pytest.raises(ResolveInvalid) as exc:
            arbitration_resolve(
                **kwargs,
                # disputed (5 vs 2); a correction of the agreed 3.5
                scores={o1_label: {"accuracy": 3.5}, o2_label: {"accuracy": 2.5}},
                preference="tie",
            )
        whole = "must be a whole number on this ordinal scale"
        assert exc.value.errors == {
            f"scores.{o1_label}.accuracy": whole,
            f"scores.{o2_label}.accuracy": whole,
        }
        # Sending the agreed mean back as it is keeps it: no correction, nothing refused.
        arbitration_resolve(
            **kwargs,
            scores={o1_label: {"accuracy": 3}, o2_label: {"accuracy": 3.5}},
            preference="tie",
        )
        final = ReviewItem.objects.get(pk=self.item.pk).final
        assert final["scores"][str(labels[o2_label])]["accuracy"] == 3.5
        assert final["corrections"] == [] and final["arbitrated"] == ["accuracy", "preference"]
        # The same request again is a retry.
        _, created = arbitration_resolve(
            **kwargs,
            scores={o1_label: {"accuracy": 3}, o2_label: {"accuracy": 3.5}},
            preference="tie",
        )
        assert not created

    def test_it_takes_a_fractional_value_on_an_interval_scale(self):
        campaign = CampaignFactory(
            rubric=[
                {"key": "accuracy", "label": "Accuracy", "min": 1, "max": 5, "level": "interval"}
            ]
        )
        item = disputed_item(campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        arbitration = arbitration_claim_next(campaign=campaign, arbiter=self.users["arbiter"])
        labels = self.outputs(arbitration)
        o1_label = next(k for k, v in labels.items() if v == min(labels.values()))
        arbitration_resolve(
            token=arbitration.token,
            arbiter=self.users["arbiter"],
            scores={o1_label: {"accuracy": 3.5}},
            preference="tie",
            note="n",
        )
        final = ReviewItem.objects.get(pk=item.pk).final
        assert final["scores"][str(labels[o1_label])]["accuracy"] == 3.5

    def test_it_lists_every_problem_of_a_malformed_resolution_at_once(self):
        arbitration = self.claim()
        labels = self.outputs(arbitration)
        o1_label = next(k for k, v in labels.items() if v == min(labels.values()))
        with pytest.raises(ResolveInvalid) as exc:
            arbitration_resolve(
                token=arbitration.token,
                arbiter=self.users["arbiter"],
                scores="x",
                preference=5,
                flags="y",
                note=5,
                unknown_fields=("colour",),
            )
        assert exc.value.errors == {
            "colour": "unknown field; accepted: scores, preference, flags, note",
            "scores": "must be an object keyed by output label",
            f"scores.{o1_label}.accuracy": "disputed: a value is required",
            "preference": "must be an output label, tie or both_bad",
            "flags": "must be an object keyed by output label",
            "note": "must be a string: a note explaining the decision",
        }

    def test_it_requires_a_decision_on_disputed_flags(self):
        campaign = CampaignFactory(flags_dispute=True, mode="rubric")
        item = ReviewItemFactory(campaign=campaign)
        o1, o2 = item.outputs.order_by("pk")
        same = {o1: {"accuracy": 4, "completeness": None}, o2: {"accuracy": 4, "completeness": 2}}
        review_create(item, self.users["reviewer_a"], scores=same, flags={o1: ["refusal"]})
        review_create(item, self.users["reviewer_b"], scores=same)
        item_settle(item)
        arbitration = arbitration_claim_next(campaign=campaign, arbiter=self.users["arbiter"])
        label = {int(v): k for k, v in label_map(arbitration.order).items()}[o1.pk]
        other = "B" if label == "A" else "A"
        with pytest.raises(ResolveInvalid) as exc:
            arbitration_resolve(
                token=arbitration.token,
                arbiter=self.users["arbiter"],
                scores={},
                preference="tie",
                note="n",
            )
        assert exc.value.errors == {
            "preference": "this campaign collects no preference",
            f"flags.{label}": "disputed flag refusal: list this output's flags (an empty list clears them)",
        }
        arbitration_resolve(
            token=arbitration.token,
            arbiter=self.users["arbiter"],
            scores={},
            flags={label: ["refusal"], other: ["unsafe"]},
            note="It refuses half the question.",
        )
        item.refresh_from_db()
        assert item.final["flags"] == {str(o1.pk): ["refusal"], str(o2.pk): ["unsafe"]}
        assert item.final["arbitrated"] == ["flag"]
        # Raising a flag nobody disputed is a correction, recorded as such.
        assert item.final["corrections"] == [
            {"part": "flag", "output": str(o2.pk), "flag": "unsafe", "from": False, "to": True}
        ]


@pytest.mark.postgres
class ArbitrationConcurrencyTests(TransactionTestCase):
    """Real PostgreSQL, real threads, each with its own connection."""

    def test_it_never_gives_one_item_to_two_arbiters_nor_an_item_to_its_reviewer(self):
        campaign = CampaignFactory()
        reviewers = [
            UserFactory(username=f"rev{i}", roles=["reviewer", "arbiter"]) for i in range(4)
        ]
        arbiters = [UserFactory(username=f"arb{i}", roles=["arbiter"]) for i in range(4)]
        items = []
        for i in range(12):
            first, second = reviewers[i % 4], reviewers[(i + 1) % 4]
            items.append(disputed_item(campaign, first, second))
        claimers = reviewers + arbiters
        claims: list[tuple[int, int, str]] = []
        lock = threading.Lock()
        barrier = threading.Barrier(len(claimers))
        errors: list[BaseException] = []

        def work(user):
            try:
                barrier.wait()
                for _ in range(6):
                    arbitration = arbitration_claim_next(campaign=campaign, arbiter=user)
                    if arbitration is None:
                        break
                    with lock:
                        claims.append((arbitration.item_id, user.pk, arbitration.token))
                    # Finish it (as resolve would) so the next claim races for another item.
                    Arbitration.objects.filter(
                        pk=arbitration.pk, arbiter=user, state="active"
                    ).update(state="resolved")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                close_old_connections()
                connection.close()

        threads = [threading.Thread(target=work, args=(u,)) for u in claimers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        claimed_items = [item_id for item_id, _, _ in claims]
        assert len(claimed_items) == len(set(claimed_items)), "an item was handed to two arbiters"
        assert sorted(claimed_items) == sorted(i.pk for i in items)  # every item was handed out
        reviewed = {(r.item_id, r.reviewer_id) for i in items for r in i.reviews.all()}
        assert not [c for c in claims if (c[0], c[1]) in reviewed], (
            "an arbiter got an item they reviewed"
        )

    def test_it_hands_each_held_item_to_exactly_one_of_many_racing_arbiters(self):
        campaign = CampaignFactory()
        a, b = (
            UserFactory(username="ra", roles=["reviewer"]),
            UserFactory(username="rb", roles=["reviewer"]),
        )
        items = [disputed_item(campaign, a, b) for _ in range(3)]
        arbiters = [UserFactory(username=f"arb{i}", roles=["arbiter"]) for i in range(8)]
        results: dict[int, int | None] = {}
        barrier = threading.Barrier(len(arbiters))

        def work(user):
            try:
                barrier.wait()
                arbitration = arbitration_claim_next(campaign=campaign, arbiter=user)
                results[user.pk] = arbitration.item_id if arbitration else None
            finally:
                connection.close()

        threads = [threading.Thread(target=work, args=(u,)) for u in arbiters]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        held = [item_id for item_id in results.values() if item_id is not None]
        assert len(results) == 8
        assert sorted(held) == sorted(i.pk for i in items)
        assert Arbitration.objects.filter(state="active").count() == 3
