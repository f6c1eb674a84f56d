"""The campaign report on hand-built campaigns: keys, ordering, determinism, nulls, access."""

import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase

from evalsite.models import ApiToken
from reviews.disputes.rules import item_settle
from reviews.models import ReviewItem
from reviews.report.campaign import campaign_head_to_head, campaign_report, report_json
from tasks.models import Generation
from tests.factories import (
    CampaignFactory,
    ContenderFactory,
    ReviewItemFactory,
    TaskFactory,
    personas,
    review_create,
)
from tests.reviews.test_records import pairwise_campaign

LEADERBOARD_KEYS = {
    "contender",
    "rating",
    "ci95",
    "rank",
    "wins",
    "losses",
    "ties",
    "scores",
    "quality",
    "stability",
    "pass_at_1",
    "pass_at_k",
    "cost_per_task",
    "latency_ms",
    "decision_score",
}

# (strong, mid, weak) accuracy per task, both reviewers agree; the preferred one per task.
PLAN = [
    ((5, 3, 1), "strong"),
    ((5, 3, 2), "strong"),
    ((4, 3, 1), "strong"),
    ((5, 2, 4), "strong"),  # weak beats mid on scores (no preference between them)
    ((3, 5, 1), "mid"),  # mid beats strong
    ((5, 4, 2), "strong"),
]


def build_campaign(*, slug: str, plan, users, preferences: bool = True, settle: bool = True):
    names = ("model-strong", "model-mid", "model-weak")
    prices = {"model-strong": ("3", "15"), "model-mid": ("1", "5"), "model-weak": ("0.5", "2.5")}
    contenders = []
    for name in names:
        c = ContenderFactory(name=name)
        c.price_in_per_mtok, c.price_out_per_mtok = (Decimal(p) for p in prices[name])
        c.save()
        contenders.append(c)
    campaign = CampaignFactory(
        slug=slug,
        contenders=contenders,
        weights={"categories": {"billing": 2}, "quality": 0.7, "stability": 0.3},
    )
    for n, (scores, preferred) in enumerate(plan):
        task = TaskFactory(
            testset=campaign.testset,
            category="billing" if n % 2 else "shipping",
            tier="advanced" if n % 3 else "base",
        )
        item = ReviewItemFactory(campaign=campaign, task=task)
        by_name = {
            o.generation.contender.name.split("-")[1]: o
            for o in item.outputs.select_related("generation__contender")
        }
        for reviewer in (users["reviewer_a"], users["reviewer_b"]):
            review_create(
                item,
                reviewer,
                scores={
                    by_name[k]: {"accuracy": float(v), "completeness": float(v)}
                    for k, v in zip(("strong", "mid", "weak"), scores, strict=True)
                },
                preference=by_name[preferred] if preferences else "",
            )
        if settle:
            item.submitted_count = 2
            item.save(update_fields=["submitted_count"])
            item_settle(item)
    Generation.objects.filter(campaign=campaign).update(
        input_tokens=1000, output_tokens=500, latency_ms=900, checks_passed=True
    )
    return campaign


class ReportTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = build_campaign(slug="support-q4", plan=PLAN, users=cls.users)
        cls.report = campaign_report(campaign=cls.campaign, n_boot=200)
        cls.task_ids = list(
            cls.campaign.testset.tasks.order_by("position").values_list("external_id", flat=True)
        )

    def test_it_has_the_spec_keys(self):
        r = self.report
        assert r["campaign"] == "support-q4"
        assert set(r["progress"]) >= {"items", "reviews_done", "disputed", "resolved"}
        assert set(r["agreement"]) == {"accuracy", "completeness"}
        assert set(r["agreement"]["accuracy"]) >= {
            "alpha",
            "level",
            "ci95",
            "n_units",
            "exact",
            "within_one",
        }
        assert set(r["position_bias"]) >= {"first_position_win_rate", "n"}
        for row in r["leaderboard"]:
            assert set(row) >= LEADERBOARD_KEYS
            assert set(row["scores"]) == {"accuracy", "completeness"}
            assert set(row["latency_ms"]) == {"p50", "p95"}

    def test_it_counts_progress(self):
        assert self.report["progress"] | {"generations": None} == self.report["progress"] | {
            "items": 6,
            "ready": 6,
            "reviews_done": 12,
            "reviews_needed": 12,
            "settled": 6,
            "agreed": 6,
            "disputed": 0,
            "resolved": 0,
            "open": 0,
            "dispute_rate": 0.0,
            "generations": None,
        }

    def test_it_orders_the_leaderboard_by_rating(self):
        board = self.report["leaderboard"]
        assert [row["contender"] for row in board] == ["model-strong", "model-mid", "model-weak"]
        ratings = [row["rating"] for row in board]
        assert ratings == sorted(ratings, reverse=True)
        assert sum(ratings) / 3 == pytest.approx(1000, abs=1e-3)
        strong, mid, weak = board
        # strong: preferred in 5 items (beats mid and weak), loses to mid once, beats weak there too
        # (mid's preferred item: mid beats strong and weak; strong vs weak by scores: 3 > 1).
        assert (strong["wins"], strong["losses"], strong["ties"]) == (11, 1, 0)
        assert (weak["wins"], weak["losses"]) == (1, 11)
        # six test cases: too few for a bootstrap interval, so no interval and no rank
        for row in board:
            assert row["ci95"] is None and row["rank"] is None
        assert (
            self.report["rating"]["ci_reason"] == "no intervals and no ranks: too few items (n=6)"
        )
        assert self.report["rating"]["ridge"] is None
        # 3 pairs per item: the 2 with the preferred output by preference, the third by scores
        assert self.report["rating"]["sources"] == {"preference": 12, "scores": 6}

    def test_it_reports_quality_cost_and_decision(self):
        board = {row["contender"]: row for row in self.report["leaderboard"]}
        assert board["model-strong"]["scores"]["accuracy"]["mean"] == pytest.approx(
            27 / 6, abs=1e-6
        )
        assert (
            board["model-strong"]["quality"]
            > board["model-mid"]["quality"]
            > board["model-weak"]["quality"]
        )
        # 1000 tokens in, 500 out: strong 0.003 + 0.0075, weak 0.0005 + 0.00125
        assert board["model-strong"]["cost_per_task"] == pytest.approx(0.0105)
        assert board["model-weak"]["normalized_cost"] == 1.0
        assert board["model-strong"]["normalized_cost"] == pytest.approx(6.0)
        assert board["model-strong"]["latency_ms"] == {"p50": 900.0, "p95": 900.0}
        # one sample per task: no stability, the decision score uses quality alone
        assert board["model-weak"]["stability"] is None
        assert board["model-weak"]["decision_score"] == pytest.approx(
            board["model-weak"]["quality"]
        )
        assert any("stability" in w for w in self.report["warnings"])
        assert set(self.report["quality"]["by_category"]["model-mid"]) == {"billing", "shipping"}
        assert set(self.report["quality"]["by_tier"]["model-mid"]) == {"base", "advanced"}

    def test_it_reports_agreement_and_reviewers(self):
        acc = self.report["agreement"]["accuracy"]
        assert acc["n_units"] == 18 and acc["exact"] == 1.0 and acc["alpha"] == 1.0
        # six test cases: no interval, so no band (bands are judged on the interval)
        assert acc["band"] is None and acc["ci_reason"] == "too few items (n=6)"
        assert acc["level"] == "ordinal" and acc["ac2"] == 1.0
        pref = self.report["preference_agreement"]
        assert pref["exact"] == 1.0 and pref["n_units"] == 6
        reviewers = self.report["reviewers"]
        assert set(reviewers) == {"reviewer_a", "reviewer_b"}
        assert reviewers["reviewer_a"]["reviews"] == 6
        assert reviewers["reviewer_a"]["mean_offset"] == 0.0
        assert reviewers["reviewer_a"]["agreement_exact"] == 1.0

    def test_it_reports_position_bias_from_the_presented_order(self):
        # review_create shows outputs in pk order: strong is first, and strong won 10 of 12.
        bias = self.report["position_bias"]
        assert bias["n"] == 12 and bias["source"] == "preferences"
        assert bias["first_position_win_rate"] == pytest.approx(10 / 12)
        lo, hi = bias["ci95"]
        assert lo < 10 / 12 < hi

    def test_it_compares_every_pair_head_to_head(self):
        pairs = {(h["a"], h["b"]): h for h in self.report["head_to_head"]}
        # pairs in name order; b is compared against a
        assert set(pairs) == {
            ("model-mid", "model-strong"),
            ("model-mid", "model-weak"),
            ("model-strong", "model-weak"),
        }
        mid_strong = pairs[("model-mid", "model-strong")]
        assert (mid_strong["wins"], mid_strong["losses"], mid_strong["ties"]) == (5, 1, 0)
        assert [r["task"] for r in mid_strong["regressions"]] == [self.task_ids[4]]
        # exact sign test, 5 vs 1, on the tasks won / lost
        assert mid_strong["sign_test_p"] == pytest.approx(0.21875)
        # 6 test cases: no interval, so no p of the difference either (it would be the
        # interval's test)
        assert mid_strong["ci95"] is None and mid_strong["p_value"] is None
        assert mid_strong["ci_reason"] == "too few items (n=6)" and mid_strong["small_sample"]

    def test_it_reads_the_database_in_a_few_bulk_queries(self):
        # contenders, tasks, generations, items, outputs, reviews, scores, served models, the
        # judges that judged it (none here), the held outputs and the identity reports (the
        # blinding key; no probe here): no per-row queries
        with self.assertNumQueries(11):
            campaign_report(campaign=self.campaign, n_boot=10)

    def test_it_is_byte_identical_twice(self):
        first = report_json(campaign_report(campaign=self.campaign, n_boot=200))
        second = report_json(campaign_report(campaign=self.campaign, n_boot=200))
        assert first == second
        json.loads(first)

    def test_the_command_prints_the_report(self):
        out = StringIO()
        call_command("campaign_report", "support-q4", "--bootstrap", "50", stdout=out)
        report = json.loads(out.getvalue())
        assert report["campaign"] == "support-q4"
        assert report["leaderboard"][0]["contender"] == "model-strong"
        with self.assertRaises(CommandError):
            call_command("campaign_report", "nope", stdout=StringIO())
        # A negative seed (numpy's ValueError) and a huge round count (a numpy MemoryError)
        # were tracebacks.
        for args, message in (
            (("--seed", "-5"), "--seed must be >= 0"),
            (("--bootstrap", "99999999999"), "--bootstrap must be from 0 to 10,000"),
        ):
            with self.assertRaisesMessage(CommandError, message):
                call_command("campaign_report", "support-q4", *args, stdout=StringIO())

    def test_the_api_serves_leads_and_admins_only(self):
        tokens = {
            who: ApiToken.issue(self.users[who])
            for who in ("admin", "lead", "reviewer_a", "arbiter")
        }
        url = "/api/v1/campaigns/support-q4/report"
        for who in ("admin", "lead"):
            response = self.client.get(url, HTTP_AUTHORIZATION=f"Bearer {tokens[who]}")
            assert response.status_code == 200
            assert response.json()["campaign"] == "support-q4"
        for who in ("reviewer_a", "arbiter"):
            response = self.client.get(url, HTTP_AUTHORIZATION=f"Bearer {tokens[who]}")
            assert response.status_code == 403
            assert b"model-strong" not in response.content
        assert self.client.get(url).status_code == 401
        missing = self.client.get(
            "/api/v1/campaigns/nope/report", HTTP_AUTHORIZATION=f"Bearer {tokens['lead']}"
        )
        assert missing.status_code == 404


class TinyDataTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_an_empty_campaign_gives_nulls_with_reasons(self):
        campaign = CampaignFactory(slug="empty")
        report = campaign_report(campaign=campaign, n_boot=50)
        assert report["progress"]["items"] == 0
        assert report["agreement"]["accuracy"]["alpha"] is None
        assert report["agreement"]["accuracy"]["reason"]
        assert report["position_bias"]["first_position_win_rate"] is None
        assert report["position_bias"]["reason"]
        for row in report["leaderboard"]:
            assert row["rating"] is None and row["rank"] is None and row["quality"] is None
        assert report["rating"]["reason"]
        json.loads(report_json(report))

    def test_reviews_without_settled_items_give_agreement_but_no_ratings(self):
        campaign = build_campaign(slug="unsettled", plan=PLAN[:2], users=self.users, settle=False)
        report = campaign_report(campaign=campaign, n_boot=50)
        assert report["agreement"]["accuracy"]["n_units"] == 6
        assert all(row["rating"] is None for row in report["leaderboard"])
        assert "no item has a final outcome yet" in " ".join(report["warnings"])

    def test_an_undefeated_contender_is_reported(self):
        campaign = build_campaign(slug="one-item", plan=PLAN[:1], users=self.users)
        report = campaign_report(campaign=campaign, n_boot=50)
        assert report["rating"]["undefeated"] == ["model-strong"]
        assert report["rating"]["winless"] == ["model-weak"]
        assert report["rating"]["ridge"] > 0
        assert any("ridge" in w for w in report["warnings"])
        assert report["leaderboard"][0]["contender"] == "model-strong"
        # one item cannot give an interval, so no ranks are claimed
        assert all(row["rank"] is None and row["ci95"] is None for row in report["leaderboard"])

    def test_a_disputed_item_waits_for_arbitration(self):
        campaign = build_campaign(slug="disputed", plan=PLAN[:3], users=self.users, settle=False)
        items = list(ReviewItem.objects.filter(campaign=campaign).order_by("pk"))
        first = items[0]
        # reviewer_b now gives the strong output 2 instead of 5: a dispute
        score = (
            first.reviews.get(reviewer=self.users["reviewer_b"])
            .scores.filter(output__generation__contender__name="model-strong", dimension="accuracy")
            .get()
        )
        score.value = 2.0
        score.save()
        for item in items:
            item.submitted_count = 2
            item.save(update_fields=["submitted_count"])
            item_settle(item)
        report = campaign_report(campaign=campaign, n_boot=50)
        assert report["progress"]["disputed"] == 1 and report["progress"]["agreed"] == 2
        assert report["progress"]["dispute_rate"] == pytest.approx(1 / 3)
        assert report["disputes"]["reasons"] == {"accuracy": 1}
        # only the two settled items count for the leaderboard
        assert report["rating"]["n_items"] == 2

    def test_rubric_only_outcomes_come_from_final_scores(self):
        campaign = build_campaign(
            slug="rubric-only", plan=PLAN, users=self.users, preferences=False
        )
        report = campaign_report(campaign=campaign, n_boot=50)
        assert report["rating"]["sources"] == {"preference": 0, "scores": 18}
        assert report["position_bias"]["source"] == "scores"
        board = {row["contender"]: row for row in report["leaderboard"]}
        # strong vs mid by scores: strong wins 5 tasks, loses 1; weak beats mid once
        assert board["model-strong"]["wins"] == 11 and board["model-weak"]["wins"] == 1
        assert report["preference_agreement"]["alpha"] is None

    def checked_samples(self, slug: str, shares: dict) -> dict:
        """The report of a campaign whose samples (three per task) carry automatic checks that
        pass in the given shares, per contender."""
        campaign = build_campaign(slug=slug, plan=PLAN[:2], users=self.users)
        for task in campaign.testset.tasks.all():
            for contender in campaign.contenders.all():
                for sample, share in enumerate(shares.get(contender.name, [])):
                    results = {
                        "regex": {"passed": share >= 0.5},
                        "max_chars": {"passed": share == 1.0},
                    }
                    gen, _ = Generation.objects.get_or_create(
                        campaign=campaign,
                        task=task,
                        contender=contender,
                        sample_index=sample,
                        defaults={"status": "done", "output": "x"},
                    )
                    gen.check_results, gen.checks_passed = results, share == 1.0
                    gen.save()
        campaign.samples_per_task = 3
        campaign.save()
        return campaign_report(campaign=campaign, n_boot=20)

    def test_stability_falls_back_to_automatic_checks(self):
        shares = {
            "model-strong": [1.0, 1.0, 1.0],
            "model-mid": [1.0, 1.0, 0.5],
            "model-weak": [1.0, 0.5, 0.0],
        }
        report = self.checked_samples("checks", shares)
        stab = report["stability"]
        assert (
            stab["model-strong"]["stability"] == 1.0 and stab["model-strong"]["source"] == "checks"
        )
        # stability = 1 - within-task unbiased SD (ddof = 1) / 0.5, clipped to [0, 1]
        # 1, 1, 0.5: SD sqrt(1/12) = 0.2887 -> 0.423
        assert stab["model-mid"]["sampling_sd"] == pytest.approx(0.289, abs=1e-3)
        assert stab["model-mid"]["stability"] == pytest.approx(1 - 0.288675 / 0.5, abs=1e-3)
        # 1, 0.5, 0: SD 0.5 -> 0
        assert stab["model-weak"]["stability"] == pytest.approx(0.0, abs=1e-3)
        assert any("automatic checks" in w for w in report["warnings"])
        # pass@1: sample 0 of every task passes its checks and (human) threshold for strong
        # (people scored one sample per task: the headline basis is theirs, pass@3 needs three)
        assert (
            stab["model-strong"]["pass_at_1"] == 1.0 and stab["model-strong"]["pass_at_k"] is None
        )
        assert stab["model-strong"]["pass_basis"] == "human"
        assert report["passes"]["model-strong"]["checks"]["pass_at_k"] == 1.0
        # weak: only sample 0 passes checks, and its human quality is below the threshold
        assert stab["model-weak"]["pass_at_1"] == 0.0
        # checks basis: one of three samples passes per task -> pass@1 1/3, pass@3 1
        weak_checks = report["passes"]["model-weak"]["checks"]
        assert weak_checks["pass_at_1"] == pytest.approx(0.333)
        assert [p["pass_at_k"] for p in weak_checks["curve"]] == [0.333, 0.667, 1.0]
        # every contender has a stability: the decision score is the documented formula (docs/statistics.md)
        assert report["decision"]["formula"].startswith("(w_quality * quality")
        strong = next(r for r in report["leaderboard"] if r["contender"] == "model-strong")
        assert strong["decision_score"] == pytest.approx(
            (0.7 * strong["quality"] + 0.3 * 1.0) / strong["normalized_cost"], abs=1e-3
        )

    def test_decision_scores_use_one_formula_when_a_contender_lacks_stability(self):
        # model-weak has one sample per task: no stability; the others three
        shares = {"model-strong": [1.0, 1.0, 1.0], "model-mid": [1.0, 1.0, 0.5]}
        report = self.checked_samples("mixed", shares)
        assert report["stability"]["model-weak"]["stability"] is None
        assert report["stability"]["model-mid"]["stability"] is not None
        assert report["decision"]["formula"] == "quality / normalized_cost"
        assert any("no stability for model-weak" in w for w in report["warnings"])
        for row in report["leaderboard"]:
            assert row["decision_score"] == pytest.approx(
                row["quality"] / row["normalized_cost"], abs=1e-3
            ), row["contender"]

    def test_a_contender_without_usage_data_has_no_cost_and_is_not_the_cheapest(self):
        campaign = build_campaign(slug="no-usage", plan=PLAN[:2], users=self.users)
        # model-weak's provider reported no token counts: its cost is unknown, not 0
        Generation.objects.filter(campaign=campaign, contender__name="model-weak").update(
            input_tokens=None, output_tokens=None, cost=None
        )
        report = campaign_report(campaign=campaign, n_boot=20)
        board = {row["contender"]: row for row in report["leaderboard"]}
        assert board["model-weak"]["cost_per_task"] is None
        assert board["model-weak"]["normalized_cost"] is None
        assert board["model-weak"]["decision_score"] is None
        # the cheapest known cost is mid's: 0.001 + 0.0025
        assert board["model-mid"]["normalized_cost"] == 1.0
        assert board["model-strong"]["normalized_cost"] == pytest.approx(3.0)
        assert board["model-strong"]["decision_score"] == pytest.approx(
            board["model-strong"]["quality"] / 3.0, abs=1e-3
        )
        # the unknown cost is said, not silently dropped
        assert board["model-weak"]["cost_reason"].startswith("no cost data")
        cost_warnings = [w for w in report["warnings"] if w.startswith("cost:")]
        assert len(cost_warnings) == 1 and "no cost data for model-weak" in cost_warnings[0]

    def test_head_to_head_lists_every_regression(self):
        campaign = build_campaign(slug="h2h", plan=PLAN, users=self.users)
        result = campaign_head_to_head(campaign=campaign, a="model-mid", b="model-weak")
        assert result["n_tasks"] == 6
        assert (result["wins"], result["losses"]) == (1, 5)
        assert len(result["regressions"]) == 5
        assert result["improvements"][0]["task"].startswith("T-")


class PairwiseModeTests(TestCase):
    """Pairwise mode with three contenders: one item per pair, a generation in two items.
    Reviews carry preferences only, as the submit path allows in this mode (no scores)."""

    @classmethod
    def setUpTestData(cls):
        from reviews.models import ItemOutput

        users = personas()
        contenders = [ContenderFactory(name=n) for n in ("pw-a", "pw-b", "pw-c")]
        cls.campaign = CampaignFactory(slug="pairwise", contenders=contenders, mode="pairwise")
        for n in range(4):
            task = TaskFactory(testset=cls.campaign.testset)
            gens = {
                c.name: Generation.objects.create(
                    campaign=cls.campaign,
                    task=task,
                    contender=c,
                    sample_index=0,
                    status="done",
                    output="x",
                    latency_ms=100 * (n + 1),
                )
                for c in contenders
            }
            for first, second in (("pw-a", "pw-b"), ("pw-a", "pw-c"), ("pw-b", "pw-c")):
                item = ReviewItem.objects.create(
                    campaign=cls.campaign,
                    task=task,
                    sample_index=0,
                    pair_key=f"{first}|{second}",
                    overlap=2,
                    ready=True,
                    state="open",
                )
                outs = [
                    ItemOutput.objects.create(item=item, generation=gens[x])
                    for x in (first, second)
                ]
                # the last task: c beats b by preference (an upset), everything else by level
                upset = n == 3 and (first, second) == ("pw-b", "pw-c")
                for reviewer in (users["reviewer_a"], users["reviewer_b"]):
                    review_create(
                        item, reviewer, scores={}, preference=outs[1] if upset else outs[0]
                    )
                item.submitted_count = 2
                item.save(update_fields=["submitted_count"])
                item_settle(item)
        cls.report = campaign_report(campaign=cls.campaign, n_boot=100)

    def test_it_rates_pairs(self):
        r = self.report
        assert r["progress"]["items"] == 12 and r["progress"]["agreed"] == 12
        assert r["rating"]["n_items"] == 12 and r["rating"]["sources"] == {
            "preference": 12,
            "scores": 0,
        }
        board = {row["contender"]: row for row in r["leaderboard"]}
        assert [row["contender"] for row in r["leaderboard"]] == ["pw-a", "pw-b", "pw-c"]
        assert (board["pw-a"]["wins"], board["pw-a"]["losses"]) == (8, 0)
        assert (board["pw-c"]["wins"], board["pw-c"]["losses"]) == (1, 7)
        assert r["rating"]["undefeated"] == ["pw-a"] and r["rating"]["ridge"] > 0

    def test_a_generation_in_two_items_counts_once_per_task(self):
        board = {row["contender"]: row for row in self.report["leaderboard"]}
        # no scores in this mode: no quality, rather than a made-up one
        assert board["pw-a"]["quality"] is None
        assert board["pw-a"]["scores"]["accuracy"] == {"mean": None, "ci95": None, "n_tasks": 0}
        # latency over the four generations, not the eight item outputs
        assert board["pw-b"]["latency_ms"] == {"p50": 250.0, "p95": 385.0}

    def test_position_bias_expects_one_half_with_two_outputs(self):
        bias = self.report["position_bias"]
        # review_create shows outputs in pk order: the first of each pair won 22 of 24 reviews
        assert bias["n"] == 24 and bias["expected"] == 0.5
        assert bias["first_position_win_rate"] == pytest.approx(22 / 24)
        assert bias["p_value"] < 0.001


class OddFinalTests(TestCase):
    def test_it_skips_final_values_that_are_not_the_items_outputs_or_numbers(self):
        users = personas()
        campaign = build_campaign(slug="odd", plan=PLAN[:3], users=users)
        clean_report = campaign_report(campaign=campaign, n_boot=20)
        item = ReviewItem.objects.filter(campaign=campaign).order_by("pk").first()
        other = ReviewItem.objects.filter(campaign=campaign).order_by("pk").last()
        final = dict(item.final)
        scores = dict(final["scores"])
        key = next(iter(scores))
        scores["not-an-id"] = {"accuracy": 5}
        scores[str(other.outputs.order_by("pk").first().pk)] = {"accuracy": 1}  # another item's
        scores[key] = {**scores[key], "accuracy": "five"}
        final["scores"] = scores
        item.final = final
        item.save(update_fields=["final"])
        report = campaign_report(campaign=campaign, n_boot=20)
        strong = next(r for r in report["leaderboard"] if r["contender"] == "model-strong")
        before = next(r for r in clean_report["leaderboard"] if r["contender"] == "model-strong")
        # the string is treated as not rated: accuracy mean over the other two tasks (5, 4)
        assert strong["scores"]["accuracy"]["mean"] == pytest.approx(4.5)
        assert before["scores"]["accuracy"]["mean"] == pytest.approx(14 / 3, abs=0.01)
        assert report["rating"]["n_items"] == 3


class UncomparedContenderTests(TestCase):
    """A contender with no comparisons at all (every generation failed) is left out of the
    ratings; it does not make the others' comparison graph 'disconnected'."""

    def test_the_compared_contenders_are_rated_and_the_other_is_listed_unrated(self):
        alpha, beta, broken = "acme-alpha", "acme-beta", "acme-broken"
        campaign = pairwise_campaign(
            "acme", [alpha, beta, broken], [(alpha, beta), (alpha, beta), (beta, alpha)]
        )
        report = campaign_report(campaign=campaign, n_boot=200)
        rating = report["rating"]
        assert rating["n_battles"] == 3
        assert rating["sources"] == {"preference": 3, "scores": 0}
        assert rating["components"] is None and rating["reason"] is None
        assert rating["ci_reason"] == "no intervals and no ranks: too few items (n=3)"
        assert rating["unrated"] == [
            {
                "contender": broken,
                "reason": "no comparisons: none of its outputs was compared in an item with a "
                "final outcome",
            }
        ]
        board = {row["contender"]: row for row in report["leaderboard"]}
        # alpha 2:1 beta, the two-contender fit of the reference shape: 400 log10(2) apart
        assert board[alpha]["rating"] - board[beta]["rating"] == pytest.approx(120.41, abs=0.1)
        for name in (alpha, beta):  # three items: no interval, no rank
            assert board[name]["rank"] is None and board[name]["ci95"] is None
        assert board[broken]["rating"] is None and board[broken]["rank"] is None
        assert board[broken]["ci95"] is None
        assert [row["contender"] for row in report["leaderboard"]][-1] == broken
        assert any(
            w.startswith(f"ratings: {broken} has no comparisons") for w in report["warnings"]
        )
        assert not any("disconnected" in w for w in report["warnings"])
        json.loads(report_json(report))

    def test_groups_that_never_met_are_still_reported_beside_an_unrated_contender(self):
        campaign = pairwise_campaign(
            "split", ["g-a", "g-b", "g-c", "g-d", "g-none"], [("g-a", "g-b"), ("g-c", "g-d")]
        )
        rating = campaign_report(campaign=campaign, n_boot=50)["rating"]
        assert rating["components"] == [["g-a", "g-b"], ["g-c", "g-d"]]
        assert "disconnected" in rating["reason"]
        assert [u["contender"] for u in rating["unrated"]] == ["g-none"]


class AgreementLevelTests(TestCase):
    """The published two-reviewer reference through the whole report: each dimension's alpha is
    computed at the rubric's level of measurement (the package default, interval, is never
    used silently)."""

    def test_each_dimension_gets_the_alpha_of_its_level(self):
        r1 = [5, 4, 4, 3, 2, 5, 1, 3, 4, 2]
        r2 = [4, 4, 5, 3, 2, 5, 2, 3, 3, 2]
        levels = {"acc": "ordinal", "comp": "interval", "tone": "nominal", "plain": None}
        rubric = [
            {"key": key, "min": 1, "max": 5, "max_gap": 4} | ({"level": lv} if lv else {})
            for key, lv in levels.items()
        ]
        users = personas()
        campaign = CampaignFactory(
            slug="levels",
            rubric=rubric,
            contenders=[ContenderFactory(name="lv-x"), ContenderFactory(name="lv-y")],
        )
        for n in range(5):
            item = ReviewItemFactory(campaign=campaign)
            outputs = list(item.outputs.order_by("pk"))
            for reviewer, values in ((users["reviewer_a"], r1), (users["reviewer_b"], r2)):
                review_create(
                    item,
                    reviewer,
                    scores={
                        o: dict.fromkeys(levels, float(values[2 * n + i]))
                        for i, o in enumerate(outputs)
                    },
                )
        agreement = campaign_report(campaign=campaign, n_boot=50)["agreement"]
        expected = {"acc": 0.888, "comp": 0.865, "tone": 0.506, "plain": 0.888}
        for key, alpha in expected.items():
            assert agreement[key]["alpha"] == pytest.approx(alpha, abs=5e-4), key
            assert agreement[key]["level"] == (levels[key] or "ordinal")
            assert agreement[key]["exact"] == pytest.approx(0.6)
            assert agreement[key]["n_units"] == 10
        # five items: too few for an interval, and bands are judged on the interval
        assert agreement["acc"]["band"] is None and agreement["tone"]["band"] is None
        assert agreement["acc"]["ci_reason"] == "too few items (n=5)"
        assert agreement["tone"]["ac1"] is not None and agreement["acc"]["ac2"] is not None


class HonestNumbersTests(TestCase):
    """Stage-2 conventions through the product's own path (database -> report)."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_pairwise_mode_gives_a_head_to_head_from_preferences(self):
        a, b = "hh-alpha", "hh-beta"
        winners = [(a, b)] * 9 + [(b, a)] * 3
        report = campaign_report(campaign=pairwise_campaign("hh", [a, b], winners), n_boot=200)
        (entry,) = report["head_to_head"]
        assert entry["reason"] == "no task was scored for both contenders"  # no rubric
        battles = entry["battles"]
        # b against a: 3 of 12 test cases won -> 0.25; exact sign test 3 vs 9: p = 0.146
        assert (battles["wins"], battles["losses"], battles["n_tasks"]) == (3, 9, 12)
        assert battles["win_rate"] == 0.25 and battles["ci95"] is not None
        assert battles["sign_test_p"] == pytest.approx(0.1460, abs=5e-4)
        # the paired bootstrap p reads the same rounds as the interval: they agree
        assert (battles["p_value"] < 0.05) == (battles["ci95"][1] < 0.5)
        assert entry["battles_p_holm"] == pytest.approx(battles["p_value"])  # one pair

    def test_an_unresolved_dispute_is_pending_in_the_report(self):
        campaign = build_campaign(slug="pending", plan=PLAN[:3], users=self.users, settle=False)
        items = list(ReviewItem.objects.filter(campaign=campaign).order_by("pk"))
        score = (
            items[0]
            .reviews.get(reviewer=self.users["reviewer_b"])
            .scores.filter(output__generation__contender__name="model-strong", dimension="accuracy")
            .get()
        )
        score.value = 2.0
        score.save()
        for item in items:
            item.submitted_count = 2
            item.save(update_fields=["submitted_count"])
            item_settle(item)
        passes = campaign_report(campaign=campaign, n_boot=20)["passes"]["model-strong"]
        # the disputed item's strong sample has no final outcome: pending, out of the human
        # denominator; its checks passed, so the checks basis still counts it
        assert passes["pending"] == 1
        assert passes["human"]["n_samples"] == 2 and passes["checks"]["n_samples"] == 3
        assert passes["combined"]["n_samples"] == 2
        # the report's shape: a pass figure keyed by basis (rounded like every shown figure)
        assert set(passes["pass_at_1"]) == {"human", "checks", "combined"}
        assert passes["pass_at_1"]["checks"] == passes["checks"]["pass_at_1"] == 1.0

    def test_rates_per_check_kind_and_flag_with_wilson_intervals(self):
        campaign = build_campaign(slug="rates", plan=PLAN[:4], users=self.users)
        gens = Generation.objects.filter(campaign=campaign, contender__name="model-weak")
        for i, gen in enumerate(gens.order_by("pk")):
            gen.check_results = {"regex": {"passed": i % 2 == 0}, "max_chars": {"passed": True}}
            gen.save()
        item = ReviewItem.objects.filter(campaign=campaign).order_by("pk").first()
        item.final["flags"] = {
            str(o.pk): ["hallucination"]
            for o in item.outputs.filter(generation__contender__name="model-weak")
        }
        item.save(update_fields=["final"])
        weak = campaign_report(campaign=campaign, n_boot=20)["rates"]["model-weak"]
        # 2 of 4 regex passes: Wilson 95% [0.150, 0.850]
        assert weak["checks"]["regex"] == {
            "rate": 0.5,
            "ci95": [0.15, 0.85],
            "n": 4,
            "small_sample": True,
        }
        assert weak["checks"]["max_chars"]["rate"] == 1.0
        # one of four judged outputs flagged: Wilson [0.046, 0.699]
        assert weak["flags"]["hallucination"]["rate"] == 0.25
        assert weak["flags"]["hallucination"]["ci95"] == [0.046, 0.699]
        assert weak["flags"]["refusal"]["rate"] == 0.0
        assert set(weak["by_tier"]) == {"base", "advanced"}
        assert "typical" in weak["by_case_type"]


class UndefeatedBoundTests(TestCase):
    def test_an_undefeated_contender_is_rated_as_a_bound_with_an_open_side(self):
        plan = [((5, 3, 1), "strong")] * 12  # strong never loses, weak never wins
        campaign = build_campaign(slug="bound", plan=plan, users=personas())
        report = campaign_report(campaign=campaign, n_boot=200)
        board = {r["contender"]: r for r in report["leaderboard"]}
        strong, mid, weak = board["model-strong"], board["model-mid"], board["model-weak"]
        assert strong["ci95"][1] is None and strong["rating_bound"] == f">= {strong['ci95'][0]:.0f}"
        assert weak["ci95"][0] is None and weak["rating_bound"] == f"<= {weak['ci95'][1]:.0f}"
        # every test case is alike, so every resample gives mid the same rating: "all equal",
        # not a zero-width interval
        assert mid["rating_bound"] is None and mid["ci95"] is None
        assert mid["rating_ci_reason"] == "all equal (n=12)"
        assert strong["rank"] == 1 and strong["p_best"] == 1.0
        assert any("rating_bound" in w for w in report["warnings"])
        assert report_json(report) == report_json(campaign_report(campaign=campaign, n_boot=200))
