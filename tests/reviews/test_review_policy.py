"""Targeted human review: a campaign's review policy lets its judge score every item first;
people review only the items the rules select (plus a reproducible audit share), and the
judge settles the rest with source "judge". Against the fake endpoint's scripted judges."""

import json
import threading
from unittest import mock

import pytest
from django.db import connection
from django.test import TestCase, TransactionTestCase, override_settings

from reviews.disputes.rules import item_settle
from reviews.judges import services as judging
from reviews.judges.calibration import judge_calibration
from reviews.judges.models import Judgement
from reviews.judges.services import judging_enqueue
from reviews.models import ReviewItem
from reviews.policy import rules
from reviews.policy.services import policy_campaign_route, policy_item_route
from reviews.records.export import records_iter
from reviews.report.campaign import campaign_report
from reviews.review import assignment_claim_next
from reviews.workflows import items_open_for, items_sync
from tasks.campaigns.definition import DefinitionError, campaign_definition_validate
from tasks.models import Generation, Judge
from tests.factories import (
    CampaignFactory,
    ContenderFactory,
    ReviewItemFactory,
    TaskFactory,
    personas,
    review_create,
)
from tests.fake_llm import FakeLLM
from tests.reviews.test_judges import RUBRIC, answer, better, make_judge, run_all, shown_quality
from tests.tasks.test_campaigns import imported_pairwise, make_testset
from tests.tasks.test_monitor_judges import (
    TONE,
    calibrated_on,
    fair,
    first_shown,
    lenient,
    run_inline,
    settled_campaign,
)

ITEMS = 20
BOUNDARY = {0, 1, 2, 3}  # items whose task is of the boundary tier
CHECKS_FAILED = {5, 6}  # items with an output that failed an automatic check


def truth(n: int) -> tuple[int, int]:
    """Item n's two outputs' true scores; equal (a tie) when n % 5 == 2."""
    return 1 + (n * 3) % 5, 1 + (n * 7 + 2) % 5


def sure(request):
    """Scores what the outputs say, prefers the better one: never disagrees with itself."""
    values = shown_quality(request)
    return answer(request, values, better(values))


def torn_on_ties(request):
    """Right on the scores, but on a tie it prefers whatever is shown first: its two orders
    disagree on exactly the tied items."""
    values = shown_quality(request)
    choice = better(values)
    return answer(request, values, request.labels[0] if choice == "tie" else choice)


def policy(humans: list[str], share: float = 0.1) -> dict:
    return {"review_policy": {"judge": "policy-judge", "humans": humans, "audit_share": share}}


def build(*, slug: str, humans: list[str], share: float = 0.1):
    """A campaign under a review policy with ITEMS items waiting for the judge: the outputs
    say their own quality; BOUNDARY items are boundary-tier tasks, CHECKS_FAILED ones have an
    output that failed a check."""
    contenders = [
        ContenderFactory(name="acme-large", model="acme-large-2026"),
        ContenderFactory(name="zeta-mini", model="zeta-mini-7b"),
    ]
    campaign = CampaignFactory(
        slug=slug, contenders=contenders, rubric=RUBRIC, weights=policy(humans, share)
    )
    items = []
    for n in range(ITEMS):
        task = TaskFactory(
            testset=campaign.testset, tier="boundary" if n in BOUNDARY else "base", position=n
        )
        item = ReviewItemFactory(campaign=campaign, task=task, state="judging")
        for output, value in zip(item.outputs.order_by("pk"), truth(n), strict=True):
            Generation.objects.filter(pk=output.generation_id).update(
                output=f"Quality {value} of 5. Restart the router, then call us.",
                checks_passed=not (n in CHECKS_FAILED and value == truth(n)[0]),
            )
        items.append(item)
    return campaign, items


@override_settings(JUDGE_MAX_ATTEMPTS=2)
class ReviewPolicyTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()
        cls.fake.judge("policy-judge", sure)

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def judge(self, campaign):
        judge = make_judge(self.fake, "policy-judge", samples=2)
        judging_enqueue(campaign=campaign, judge=judge)
        run_all(campaign, judge)
        return judge

    def test_people_get_exactly_the_selected_items_and_the_judge_settles_the_rest(self):
        campaign, items = build(slug="targeted", humans=["checks_failed", "tier:boundary"])
        # Before the judge is done nobody may review: the claim offers no item.
        assert assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_a"]) is None
        self.judge(campaign)
        by_n = {n: ReviewItem.objects.get(pk=item.pk) for n, item in enumerate(items)}
        audited = {n for n, item in by_n.items() if "audit" in item.policy_reasons}
        assert len(audited) == 2  # 10% of 20 items
        people = {n for n, item in by_n.items() if item.state == "open"}
        assert people == BOUNDARY | CHECKS_FAILED | audited
        for n in BOUNDARY:
            assert "tier:boundary" in by_n[n].policy_reasons
        for n in CHECKS_FAILED:
            assert "checks_failed" in by_n[n].policy_reasons
        for n, item in by_n.items():
            if n in people:
                # Selected for people: the judge's answer is never its outcome.
                assert item.source == "human" and item.final is None
                continue
            assert item.state == "agreed" and item.source == "judge"
            outputs = [str(o) for o in item.outputs.order_by("pk").values_list("pk", flat=True)]
            a, b = truth(n)
            assert item.final["scores"] == {
                outputs[0]: {"accuracy": float(a)},
                outputs[1]: {"accuracy": float(b)},
            }
            expected = outputs[0] if a > b else outputs[1] if b > a else "tie"
            assert item.final["preference"] == expected and item.final["source"] == "judge"
        # People are offered the selected items now, and only those.
        claim = assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_a"])
        assert claim is not None and claim.assignment.item_id in {by_n[n].pk for n in people}

    def test_the_audit_draw_is_reproducible_and_belongs_to_the_campaign(self):
        campaign, items = build(slug="audited", humans=[], share=0.25)
        self.judge(campaign)
        first = set(
            ReviewItem.objects.filter(campaign=campaign, state="open").values_list("pk", flat=True)
        )
        assert len(first) == 5  # 25% of 20, and nothing else: no rule
        # Routed again from scratch, the same items go to people.
        ReviewItem.objects.filter(campaign=campaign).update(
            state="judging", source="human", final=None, policy_reasons=[]
        )
        assert policy_campaign_route(campaign=campaign) == {"human": 5, "judge": 15}
        again = set(
            ReviewItem.objects.filter(campaign=campaign, state="open").values_list("pk", flat=True)
        )
        assert again == first
        # Another campaign draws its own audit from the same items.
        keys = [(t, 0, "") for t in range(100)]
        assert rules.audit_keys(campaign_id=1, share=0.1, keys=keys) == rules.audit_keys(
            campaign_id=1, share=0.1, keys=keys
        )
        assert rules.audit_keys(campaign_id=1, share=0.1, keys=keys) != rules.audit_keys(
            campaign_id=2, share=0.1, keys=keys
        )

    def test_an_uncertain_judge_sends_the_items_it_disagrees_with_itself_on_to_people(self):
        self.fake.judge("torn", torn_on_ties)
        campaign, items = build(slug="torn", humans=["judge_uncertain"], share=0.0)
        weights = campaign.weights
        weights["review_policy"]["judge"] = "torn"
        campaign.weights = weights
        campaign.save(update_fields=["weights"])
        judge = make_judge(self.fake, "torn", samples=1)
        judging_enqueue(campaign=campaign, judge=judge)
        run_all(campaign, judge)
        people = {
            n for n, item in enumerate(items) if ReviewItem.objects.get(pk=item.pk).state == "open"
        }
        assert people == {n for n in range(ITEMS) if n % 5 == 2}  # the ties, and only them
        assert ReviewItem.objects.get(pk=items[2].pk).policy_reasons == ["judge_uncertain"]

    def test_report_records_and_page_say_who_settled_what(self):
        campaign, items = build(slug="based", humans=["tier:boundary"])
        judge = self.judge(campaign)
        report = campaign_report(campaign=campaign, n_boot=50)
        settled_by_judge = ReviewItem.objects.filter(campaign=campaign, source="judge").count()
        assert report["basis"]["outcomes"] == "judge"
        progress = report["progress"]
        assert progress["settled_by_judge"] == settled_by_judge
        # Only the items people review need reviews; nothing is disputed among them yet.
        assert progress["reviews_needed"] == (ITEMS - settled_by_judge) * 2
        assert progress["dispute_rate"] is None
        assert report["basis"]["items"] == {"human": 0, "judge": settled_by_judge}
        assert all(row["basis"] == "judge" for row in report["leaderboard"])
        assert not any("Mixed basis" in w for w in report["warnings"])
        # People settle the items the policy gave them: the figures now rest on both.
        for item in ReviewItem.objects.filter(campaign=campaign, state="open"):
            outputs = list(item.outputs.order_by("pk"))
            n = items.index(next(i for i in items if i.pk == item.pk))
            scores = {o: {"accuracy": float(v)} for o, v in zip(outputs, truth(n), strict=True)}
            for reviewer in (self.users["reviewer_a"], self.users["reviewer_b"]):
                review_create(item, reviewer, scores=scores, preference="tie")
            item.submitted_count = 2
            item.save(update_fields=["submitted_count"])
            item_settle(item)
        people = ReviewItem.objects.filter(campaign=campaign, source="human").count()
        report = campaign_report(campaign=campaign, n_boot=50)
        assert report["basis"]["outcomes"] == "mixed"
        assert report["basis"]["items"] == {"human": people, "judge": settled_by_judge}
        # Never pooled: the report's own figures are people's, the judge's stand apart.
        assert report["basis"]["figures_basis"] == "human"
        assert report["quality"]["outcome_basis"] == "human"
        assert all(row["basis"] == "human" for row in report["leaderboard"])
        assert any("computed apart, never pooled" in w for w in report["warnings"])
        apart = report["basis"]["by_basis"]
        assert apart["human"]["rating"] == report["rating"]
        assert apart["human"]["rating"]["n_items"] == people
        assert apart["judge"]["rating"]["n_items"] == settled_by_judge
        assert apart["judge"]["quality"]["outcome_basis"] == "judge"
        assert all(row["basis"] == "judge" for row in apart["judge"]["leaderboard"])
        assert set(apart["judge"]) == set(report["basis"]["figures"])
        assert report["review_policy"]["reviews_saved"] == settled_by_judge * 2
        # The judge is calibrated on people's outcomes only, never on its own settlements.
        calibration = judge_calibration(campaign=campaign, judge=judge, n_boot=50)
        assert calibration["dimensions"]["accuracy"]["n"] == people
        # Records: every review is a person's; the judge's settlements follow, marked.
        records = list(records_iter(campaign=campaign))
        human = [r for r in records if r["source"] == "human"]
        judged = [r for r in records if r["source"] == "judge"]
        assert len(human) == people * 2 and len(judged) == settled_by_judge
        assert {r["judge"] for r in judged} == {"policy-judge"}
        assert "models" not in judged[0]  # blind, like every export
        assert json.dumps(judged[0])  # plain JSON
        # The campaign page's judges section says how many reviews the policy saved.
        self.client.force_login(self.users["lead"])
        page = self.client.get(f"/campaigns/{campaign.slug}/judges/?summary=1").content.decode()
        assert f"{settled_by_judge * 2} reviews saved" in page
        assert f"the judge settled {settled_by_judge} of {ITEMS} items" in page
        # The item page says who settled an item.
        judged = ReviewItem.objects.filter(campaign=campaign, source="judge").first()
        page = self.client.get(f"/campaigns/{campaign.slug}/items/{judged.task.external_id}")
        assert "settled by the judge" in page.content.decode()

    def test_the_policy_starts_its_judge_when_items_become_ready(self):
        campaign, items = build(slug="self-starting", humans=["tier:boundary"])
        make_judge(self.fake, "policy-judge", samples=1)
        ReviewItem.objects.filter(campaign=campaign).update(state="waiting", ready=False)
        fresh = items[0].outputs.order_by("pk").first().generation
        Generation.objects.filter(pk=fresh.pk).update(status="running")
        # Every item but items[0] opens now: the judge is queued on them, with no command.
        with (
            mock.patch.object(judging, "_send", run_inline),
            self.captureOnCommitCallbacks(execute=True),
        ):
            items_sync(campaign=campaign)
        states = dict(ReviewItem.objects.filter(campaign=campaign).values_list("pk", "state"))
        assert states.pop(items[0].pk) == "waiting"
        assert Judgement.objects.filter(campaign=campaign).count() == 2 * (ITEMS - 1)
        assert not Judgement.objects.filter(item=items[0]).exists()
        # Routed as the judgements landed: the boundary tier to people, most others settled.
        assert set(states.values()) <= {"open", "agreed"} and "agreed" in states.values()
        # The last output lands: its item opens to the judge, which is queued on it alone.
        Generation.objects.filter(pk=fresh.pk).update(status="done")
        with (
            mock.patch.object(judging, "_send", run_inline),
            self.captureOnCommitCallbacks(execute=True),
        ):
            assert items_open_for(generation_id=fresh.pk) == 1
        assert Judgement.objects.filter(item=items[0], status="done").count() == 2
        assert "tier:boundary" in ReviewItem.objects.get(pk=items[0].pk).policy_reasons

    def test_a_judge_that_cannot_run_leaves_the_items_waiting_and_the_page_says_why(self):
        campaign, items = build(slug="keyless", humans=[])
        make_judge(self.fake, "policy-judge", api_key_env="NO_SUCH_JUDGE_KEY")
        ReviewItem.objects.filter(campaign=campaign).update(state="waiting", ready=False)
        with self.captureOnCommitCallbacks(execute=True):
            items_sync(campaign=campaign)
        assert not Judgement.objects.filter(campaign=campaign).exists()
        assert set(
            ReviewItem.objects.filter(campaign=campaign).values_list("state", flat=True)
        ) == {"judging"}
        self.client.force_login(self.users["lead"])
        page = self.client.get(f"/campaigns/{campaign.slug}/judges/?summary=1").content.decode()
        assert "Judging cannot start: judge policy-judge: environment variable " in page
        assert "NO_SUCH_JUDGE_KEY is not set" in page

    def test_ready_items_of_a_policy_campaign_wait_for_the_judge(self):
        campaign, _ = build(slug="opening", humans=[])
        item = ReviewItemFactory(campaign=campaign, state="waiting", ready=False)
        items_sync(campaign=campaign)
        item.refresh_from_db()
        assert item.ready and item.state == "judging"


class PolicyDefinitionTests(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLLM()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    @classmethod
    def setUpTestData(cls):
        make_testset()
        Judge.objects.create(
            name="judge-a", provider="openai", base_url="http://127.0.0.1:9/v1", model="m"
        )
        panel = settled_campaign(personas(), slug="tone-panel")
        calibrated_on(cls.fake, panel, "judge-fair", fair)
        calibrated_on(cls.fake, panel, "judge-lenient", lenient)
        calibrated_on(cls.fake, panel, "judge-first", first_shown)
        CampaignFactory(slug="tone-only", rubric=TONE, mode="rubric")

    def refused(self, review_policy, **campaign) -> list[str]:
        data = {**imported_pairwise("policed", ("vendor-a", "vendor-b")), **campaign}
        data["review_policy"] = {"allow_uncalibrated": True, **review_policy}
        try:
            campaign_definition_validate(data)
        except DefinitionError as exc:
            return [e for e in exc.errors if e.startswith("review_policy")]
        raise AssertionError("the definition was accepted")

    def test_a_valid_policy_is_kept_with_the_default_audit_share(self):
        data = {**imported_pairwise("policed", ("vendor-a", "vendor-b"))}
        data["review_policy"] = {
            "judge": "judge-fair",
            "calibration": "tone-panel",
            "humans": ["judge_uncertain", "tier:base"],
        }
        valid = campaign_definition_validate(data)
        assert valid.campaign["weights"]["review_policy"] == {
            "judge": "judge-fair",
            "humans": ["judge_uncertain", "tier:base"],
            "audit_share": 0.1,
            "calibration": "tone-panel",
            "allow_uncalibrated": False,
        }

    def test_a_judge_settles_items_only_where_it_is_calibrated(self):
        # A pairwise campaign: the judge's preference must be calibrated; judge-first's is not.
        [first] = self.refused(
            {"judge": "judge-first", "calibration": "tone-panel", "allow_uncalibrated": False}
        )
        assert first.startswith(
            "review_policy.judge: judge-first is not calibrated on tone-panel for the "
            "preference (not_calibrated: "
        )
        assert '"allow_uncalibrated": true' in first
        # A campaign scoring tone: judge-lenient's tone is biased.
        [tone] = self.refused(
            {"judge": "judge-lenient", "calibration": "tone-panel", "allow_uncalibrated": False},
            mode="rubric",
            rubric=TONE,
        )
        assert "judge-lenient is not calibrated on tone-panel for tone (not_calibrated:" in tone
        assert "systematically higher" in tone
        # Named, the calibration is required; it must exist and cover what is asked.
        [missing] = self.refused({"judge": "judge-fair", "allow_uncalibrated": False})
        assert missing.startswith("review_policy.calibration: required")
        [unknown] = self.refused({"judge": "judge-fair", "calibration": "no-such"})
        assert unknown == "review_policy.calibration: no campaign 'no-such'"
        [lacking] = self.refused(
            {"judge": "judge-fair", "calibration": "tone-panel"}, mode="rubric", rubric=RUBRIC
        )
        assert lacking == (
            "review_policy.calibration: tone-panel's rubric has no dimension 'accuracy' (it has "
            "tone), so judge-fair was never checked on it"
        )
        [no_preference] = self.refused({"judge": "judge-fair", "calibration": "tone-only"})
        assert "tone-only asks reviewers no preference" in no_preference
        # A calibration campaign nobody has settled an item of vouches for nothing.
        [unsettled] = self.refused(
            {"judge": "judge-fair", "calibration": "tone-only", "allow_uncalibrated": False},
            mode="rubric",
            rubric=TONE,
        )
        assert "judge-fair is not calibrated on tone-only for tone (insufficient: only 0" in (
            unsettled
        )
        # Let in on purpose: kept, and said on the page and in the report.
        data = {**imported_pairwise("policed", ("vendor-a", "vendor-b"))}
        data["review_policy"] = {
            "judge": "judge-first",
            "calibration": "tone-panel",
            "allow_uncalibrated": True,
            "humans": [],
        }
        kept = campaign_definition_validate(data).campaign["weights"]["review_policy"]
        assert kept["allow_uncalibrated"] is True and kept["calibration"] == "tone-panel"

    def test_a_policy_naming_no_calibration_is_let_in_and_said_uncalibrated(self):
        data = {**imported_pairwise("policed", ("vendor-a", "vendor-b"))}
        data["review_policy"] = {
            "judge": "judge-first",
            "humans": ["judge_uncertain", "checks_failed"],
            "audit_share": 0.1,
        }
        kept = campaign_definition_validate(data).campaign["weights"]["review_policy"]
        assert kept["calibration"] is None and kept["allow_uncalibrated"] is True

    def test_bad_policies_are_refused_with_the_reason(self):
        [unknown_judge] = self.refused({"judge": "judge-z", "humans": []})
        assert "no judge named 'judge-z'" in unknown_judge and "judge-a" in unknown_judge
        [unknown_rule] = self.refused({"judge": "judge-a", "humans": ["length_over:900"]})
        assert "'length_over:900' is not a rule" in unknown_rule
        assert "judge_uncertain, checks_failed" in unknown_rule
        [tier] = self.refused({"judge": "judge-a", "humans": ["tier:boundary"]})
        assert "has no task with tier 'boundary'" in tier and "(it has base)" in tier
        [case_type] = self.refused({"judge": "judge-a", "humans": ["case_type:edge"]})
        assert "has no task with case_type 'edge'" in case_type
        [no_such_tier] = self.refused({"judge": "judge-a", "humans": ["tier:gold"]})
        assert "'gold' is not a tier" in no_such_tier
        [share] = self.refused({"judge": "judge-a", "humans": [], "audit_share": 1.5})
        assert share == "review_policy.audit_share: must be between 0 and 1"
        [negative] = self.refused({"judge": "judge-a", "humans": [], "audit_share": -0.1})
        assert "between 0 and 1" in negative
        [not_a_list] = self.refused({"judge": "judge-a", "humans": "checks_failed"})
        assert "must be a list of rules" in not_a_list
        [extra] = self.refused({"judge": "judge-a", "humans": [], "share": 0.2})
        assert extra == "review_policy.share: unknown field"
        [missing] = self.refused({"humans": []})
        assert missing == "review_policy.judge: required"
        [flag] = self.refused({"judge": "judge-a", "allow_uncalibrated": "yes"})
        assert flag == "review_policy.allow_uncalibrated: must be true or false"


@pytest.mark.postgres
class ConcurrentRouteTests(TransactionTestCase):
    """Workers finishing an item's last judgements at once: the item is routed once."""

    def test_racing_routes_settle_an_item_once(self):
        judge = Judge.objects.create(
            name="policy-judge",
            provider="openai",
            base_url="http://127.0.0.1:9/v1",
            model="m",
            position_swap=False,
        )
        campaign = CampaignFactory(rubric=RUBRIC, weights=policy([], share=0.0))
        item = ReviewItemFactory(campaign=campaign, state="judging")
        outputs = [str(pk) for pk in item.outputs.order_by("pk").values_list("pk", flat=True)]
        Judgement.objects.create(
            judge=judge,
            campaign=campaign,
            item=item,
            sample=0,
            order=[int(o) for o in outputs],
            status="done",
            scores={o: {"accuracy": 3} for o in outputs},
            preference="tie",
        )
        threads = 8
        barrier = threading.Barrier(threads)
        results, errors = [], []

        def work():
            try:
                barrier.wait()
                results.append(policy_item_route(item_id=item.pk))
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)
            finally:
                connection.close()

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert not errors, errors
        assert results.count("judge") == 1 and results.count(None) == threads - 1
        item.refresh_from_db()
        assert item.state == "agreed" and item.source == "judge"
        assert item.final["scores"] == {o: {"accuracy": 3.0} for o in outputs}
