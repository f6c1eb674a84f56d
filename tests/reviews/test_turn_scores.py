"""Per-turn scores (a campaign's score_turns): the rubric of an item, the submit, disputes and
the arbiter's resolve (docs/reviewing.md "Scoring each turn")."""

import re

from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviews import review as services
from reviews.arbitration.services import (
    ResolveInvalid,
    arbitration_claim_next,
    arbitration_resolve,
)
from reviews.models import Arbitration, ReviewItem, Score
from reviews.review.selectors import review_api_payload, review_screen
from reviews.rubric import Rubric, is_turn_key, label_map
from tests.factories import CampaignFactory, ReviewItemFactory, personas
from tests.reviews.turn_fixtures import conversation_item, turn_campaign, turn_submit


class RubricTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign = turn_campaign(score_turns={"dimension": "turn_quality", "min": 0, "max": 3})
        cls.item = conversation_item(cls.campaign, turns=3)

    def test_it_adds_one_dimension_per_turn_after_the_rubric(self):
        rubric = Rubric.for_item(ReviewItem.objects.get(pk=self.item.pk))
        assert rubric.keys == [
            "accuracy",
            "completeness",
            "turn_quality@1",
            "turn_quality@2",
            "turn_quality@3",
        ]
        turn = rubric.get("turn_quality@2")
        assert (turn.min, turn.max, turn.level, turn.allow_na, turn.max_gap, turn.turn) == (
            0,
            3,
            "interval",
            False,
            1.0,
            2,
        )
        assert turn.label == "Turn 2: Turn quality"
        assert rubric.final.keys == ["accuracy", "completeness"]
        assert [d.key for d in rubric.turn_dimensions] == [
            "turn_quality@1",
            "turn_quality@2",
            "turn_quality@3",
        ]
        assert all(is_turn_key(k) for k in rubric.keys[2:]) and not is_turn_key("accuracy")

    def test_it_takes_the_gap_rule_given_in_score_turns(self):
        campaign = turn_campaign(score_turns={"dimension": "tq", "min": 1, "max": 7, "max_gap": 2})
        assert Rubric.of(campaign, turns=2).get("tq@2").max_gap == 2.0

    def test_a_task_without_turns_and_a_campaign_without_score_turns_get_the_rubric(self):
        plain = ReviewItemFactory(campaign=self.campaign)
        assert Rubric.for_item(plain).keys == ["accuracy", "completeness"]
        campaign = CampaignFactory()
        item = conversation_item(campaign, turns=3)
        item = ReviewItem.objects.select_related("campaign").get(pk=item.pk)
        with CaptureQueriesContext(connection) as queries:
            assert Rubric.for_item(item).keys == ["accuracy", "completeness"]
        assert len(queries) == 0  # no per-turn scoring: the task is not even read

    def test_the_reviewer_api_lists_the_turns_as_rubric_entries(self):
        users = personas()
        claim = services.assignment_claim_next(campaign=self.campaign, reviewer=users["reviewer_a"])
        screen = review_screen(assignment=claim.assignment, campaign=self.campaign, html=False)
        payload = review_api_payload(screen=screen, resumed=False, submit_url="/x")
        turns = [d for d in payload["rubric"] if "turn" in d]
        assert [(d["key"], d["turn"], d["min"], d["max"]) for d in turns] == [
            ("turn_quality@1", 1, 0, 3),
            ("turn_quality@2", 2, 0, 3),
            ("turn_quality@3", 3, 0, 3),
        ]
        assert {d["key"] for d in payload["rubric"] if "turn" not in d} == {
            "accuracy",
            "completeness",
        }


class SubmitTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = turn_campaign(overlap=1)
        cls.item = conversation_item(cls.campaign, turns=3)

    def claim(self):
        claim = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.users["reviewer_a"]
        )
        return claim.assignment

    def submit(self, assignment, data):
        return services.assignment_submit(
            token=assignment.token, reviewer=self.users["reviewer_a"], key="k1", data=data
        )

    def test_it_saves_every_turn_score_as_its_own_score(self):
        assignment = self.claim()
        result = self.submit(assignment, turn_submit(assignment, {"A": [5, 4, 3], "B": [2, 2, 1]}))
        assert result.code == "saved", result.errors
        a, b = assignment.order
        stored = {
            (s.output_id, s.dimension): s.value
            for s in Score.objects.filter(review=result.review)
            if is_turn_key(s.dimension)
        }
        assert stored == {
            (a, "turn_quality@1"): 5.0,
            (a, "turn_quality@2"): 4.0,
            (a, "turn_quality@3"): 3.0,
            (b, "turn_quality@1"): 2.0,
            (b, "turn_quality@2"): 2.0,
            (b, "turn_quality@3"): 1.0,
        }
        item = ReviewItem.objects.get(pk=self.item.pk)
        assert item.state == "agreed"  # k = 1: the one review is the outcome
        assert item.final["scores"][str(a)]["turn_quality@2"] == 4.0

    def test_it_requires_every_turn_of_every_output(self):
        assignment = self.claim()
        result = self.submit(assignment, turn_submit(assignment, {"A": [5, 4, 3], "B": [2]}))
        assert result.code == "invalid"
        assert result.errors == {
            "scores.B.turn_quality@2": "required",
            "scores.B.turn_quality@3": "required",
        }
        assert not Score.objects.exists()

    def test_it_refuses_a_turn_score_out_of_range_or_na_as_it_refuses_a_rubric_one(self):
        assignment = self.claim()
        data = turn_submit(assignment, {"A": [5, 9, "na"], "B": [2, 2, 1]})
        data["scores"]["B"]["accuracy"] = 9
        result = self.submit(assignment, data)
        assert result.code == "invalid"
        assert result.errors == {
            # The same words as for the rubric's own dimension.
            "scores.A.turn_quality@2": "must be from 1 to 5",
            "scores.B.accuracy": "must be from 1 to 5",
            "scores.A.turn_quality@3": "N/A is not allowed here; choose a score",
        }

    def test_it_refuses_a_turn_the_task_does_not_have(self):
        assignment = self.claim()
        data = turn_submit(assignment, {"A": [5, 4, 3, 2], "B": [2, 2, 1]})
        result = self.submit(assignment, data)
        assert result.code == "invalid"
        assert result.errors == {"scores.A.turn_quality@4": "unknown dimension"}


class Disputed(TestCase):
    """Two reviewers 3 apart on one turn."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = turn_campaign(overlap=2)
        cls.item = conversation_item(cls.campaign, turns=3)

    def review(self, reviewer, per_turn):
        claim = services.assignment_claim_next(campaign=self.campaign, reviewer=reviewer)
        assignment = claim.assignment
        # The same turn scores for the same output, whatever order each reviewer saw.
        by_output = dict(zip(sorted(assignment.order), per_turn, strict=True))
        labels = label_map(assignment.order)
        data = turn_submit(
            assignment,
            {label: by_output[int(pk)] for label, pk in labels.items()},
            preference="tie",
        )
        result = services.assignment_submit(
            token=assignment.token, reviewer=reviewer, key=f"k-{reviewer.pk}", data=data
        )
        assert result.code == "saved", result.errors

    def dispute(self):
        self.review(self.users["reviewer_a"], [[4, 4, 3], [3, 3, 3]])
        self.review(self.users["reviewer_b"], [[4, 1, 3], [3, 4, 3]])
        item = ReviewItem.objects.get(pk=self.item.pk)
        return item, [str(pk) for pk in sorted(item.outputs.values_list("pk", flat=True))]


class DisputeTests(Disputed):
    """The item is disputed on that turn, the arbiter decides it like a dimension."""

    def test_a_turn_gap_beyond_the_rule_disputes_the_item_and_opens_an_arbitration(self):
        item, (o1, o2) = self.dispute()
        assert item.state == "disputed"
        assert [(r["part"], r["output"]) for r in item.dispute_reasons] == [("turn_quality@2", o1)]
        assert item.dispute_reasons[0]["detail"] == "scores 4, 1 differ by 3 (allowed 1)"
        # The turn gap of 1 on the other output is within the rule: agreed, its mean kept.
        assert item.final["scores"][o2]["turn_quality@2"] == 3.5
        assert item.final["scores"][o1]["turn_quality@2"] is None
        assert Arbitration.objects.get(item=item).state == "open"

    def test_the_arbiter_must_decide_the_disputed_turn_and_resolves_it(self):
        item, (o1, _o2) = self.dispute()
        arbiter = self.users["arbiter"]
        arbitration = arbitration_claim_next(campaign=self.campaign, arbiter=arbiter)
        label = {pk: lab for lab, pk in label_map(arbitration.order).items()}[o1]
        with self.assertRaises(ResolveInvalid) as caught:
            arbitration_resolve(
                token=arbitration.token, arbiter=arbiter, scores={}, note="turn 2 is weak"
            )
        assert caught.exception.errors == {
            f"scores.{label}.turn_quality@2": "disputed: a value is required"
        }
        with self.assertRaises(ResolveInvalid) as caught:
            arbitration_resolve(
                token=arbitration.token,
                arbiter=arbiter,
                scores={label: {"turn_quality@2": 6}},
                note="turn 2 is weak",
            )
        assert caught.exception.errors == {
            f"scores.{label}.turn_quality@2": "must be between 1 and 5"
        }
        arbitration, resolved = arbitration_resolve(
            token=arbitration.token,
            arbiter=arbiter,
            scores={label: {"turn_quality@2": 2}},
            note="turn 2 dropped the new date",
        )
        assert resolved
        item.refresh_from_db()
        assert item.state == "resolved"
        assert item.final["scores"][o1]["turn_quality@2"] == 2.0
        assert item.final["arbitrated"] == ["turn_quality@2"]


class ReviewPageTests(TestCase):
    """The review page puts each turn's score under the turn, inside the review form."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = turn_campaign(overlap=1)
        cls.item = conversation_item(cls.campaign, turns=3)

    def setUp(self):
        self.client.force_login(self.users["reviewer_a"])
        claim = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.users["reviewer_a"]
        )
        self.assignment = claim.assignment
        self.url = reverse("review_page", args=[self.campaign.slug, self.assignment.token])

    def blocks(self, body: str) -> dict[int, str]:
        return {
            int(n): block
            for n, block in re.findall(
                r'<section class="turn-row card"[^>]*data-turn-row="(\d+)"(.*?)</section>\s*'
                r'(?=<section class="turn-row|</section>)',
                body,
                re.S,
            )
        }

    def test_each_turn_block_holds_its_score_for_every_output(self):
        body = self.client.get(self.url).content.decode()
        blocks = self.blocks(body)
        assert sorted(blocks) == [1, 2, 3]
        for n, block in blocks.items():
            names = set(re.findall(r'form="review-form" name="([^"]+)"', block))
            assert names == {f"score-A-turn_quality@{n}", f"score-B-turn_quality@{n}"}, n
            assert f"Turn {n}: Turn quality" in block
        form = body[
            body.index('<form id="review-form"') : body.index(
                "</form>", body.index('<form id="review-form"')
            )
        ]
        assert "turn_quality@" not in form  # not asked twice
        assert 'name="score-A-accuracy"' in form
        assert "The final reply" in form

    def test_a_missing_turn_score_is_marked_in_its_turn_and_nothing_is_saved(self):
        data = {"submit_key": "k-page"}
        for label in ("A", "B"):
            data[f"score-{label}-accuracy"] = "4"
            data[f"score-{label}-completeness"] = "4"
            for turn in (1, 2, 3):
                if (label, turn) != ("B", 2):
                    data[f"score-{label}-turn_quality@{turn}"] = "3"
        data["preference"] = "A"
        submit = reverse("review_submit", args=[self.campaign.slug, self.assignment.token])
        body = self.client.post(submit, data, headers={"HX-Request": "true"}).content.decode()
        assert "Not saved yet: please answer the marked questions." in body
        blocks = self.blocks(body)
        assert 'id="score-B-turn_quality@2-error" data-error>required<' in blocks[2]
        assert "data-error" not in blocks[1] + blocks[3]
        # What was entered is kept, in its turn.
        assert re.search(r'name="score-A-turn_quality@2" value="3" checked', blocks[2])
        assert not Score.objects.exists()
        data["score-B-turn_quality@2"] = "5"
        response = self.client.post(submit, data, headers={"HX-Request": "true"})
        assert response.status_code == 200
        assert Score.objects.filter(dimension="turn_quality@2").count() == 2


class DisputePageTests(Disputed):
    """The arbitration page shows the disputed turn and takes its value; the item page shows
    every turn score of every review."""

    def test_the_arbitration_page_shows_the_disputed_turn_and_resolves_it(self):
        _item, (o1, _o2) = self.dispute()
        self.client.force_login(self.users["arbiter"])
        page = self.client.get(self.client.post(f"/arbitration/{self.campaign.slug}/next").url)
        body = page.content.decode()
        arbitration = Arbitration.objects.get(item=self.item)
        label = {pk: lab for lab, pk in label_map(arbitration.order).items()}[o1]
        assert "Turn 2: Turn quality" in body
        assert "scores 4, 1 differ by 3 (allowed 1)" in body
        assert f'name="score-{label}-turn_quality@2"' in body
        url = f"/arbitration/t/{arbitration.token}/resolve"
        response = self.client.post(
            url,
            {f"score-{label}-turn_quality@2": "3", "preference": "tie", "note": "turn 2 is a 3"},
            headers={"HX-Request": "true"},
        )
        assert b"Dispute resolved" in response.content
        item = ReviewItem.objects.get(pk=self.item.pk)
        assert item.state == "resolved"
        assert item.final["scores"][o1]["turn_quality@2"] == 3.0

    def test_the_item_page_lists_the_turn_scores_of_each_review(self):
        self.dispute()
        self.client.force_login(self.users["lead"])
        url = reverse("campaign_item", args=[self.campaign.slug, self.item.task.external_id])
        body = self.client.get(url).content.decode()
        for turn in (1, 2, 3):
            assert f"Turn {turn}: Turn quality" in body
