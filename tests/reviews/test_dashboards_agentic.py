"""The tool use and conversation dashboards, and the report keys behind them, on a campaign in
the database (the figures themselves: tests/reviews/test_report_agentic.py)."""

import csv
import io

import pytest
from django.test import TestCase

from reviews.disputes.rules import item_settle
from reviews.report.campaign import campaign_report, report_json
from tasks.models import Generation
from tests.conftest import browser_login
from tests.factories import (
    PASSWORD,
    CampaignFactory,
    ContenderFactory,
    GenerationFactory,
    ReviewItemFactory,
    TaskFactory,
    personas,
    review_create,
)
from tests.reviews.agentic_frames import TOOL_PLAN, conversation, tool_transcript

TOOLS = [
    {
        "name": "get_order",
        "description": "Look an order up.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]
TOOL_KEYS = {
    "tool_call_accuracy",
    "invalid_call_rate",
    "unmocked_call_rate",
    "error_recovery_rate",
    "mean_steps",
    "completion_ms",
}
RATE_KEYS = {"rate", "ci95", "n"}


def agentic_campaign(slug: str = "agents"):
    """Tool tasks T1..T5 answered as TOOL_PLAN by 'careful' (and by 'forgetful', which never
    calls a tool), and two five-turn conversations with a single-turn statement: 'careful'
    keeps the constraint at every turn, 'forgetful' drops it after turn 3."""
    careful, forgetful = ContenderFactory(name="careful"), ContenderFactory(name="forgetful")
    campaign = CampaignFactory(slug=slug, contenders=[careful, forgetful], samples_per_task=2)
    testset = campaign.testset
    tool_tasks = {
        t: TaskFactory(testset=testset, external_id=t, tools=TOOLS)
        for t in ("T1", "T2", "T3", "T4", "T5")
    }
    for (t, sample), (kind, tool_ok, all_ok, ms) in TOOL_PLAN.items():
        checks = {"tool_calls": tool_ok, "must_include": all_ok or not tool_ok}
        for contender, script in ((careful, tool_transcript(kind)), (forgetful, None)):
            GenerationFactory(
                campaign=campaign,
                task=tool_tasks[t],
                contender=contender,
                sample_index=sample,
                transcript=script or tool_transcript("answers"),
                check_results={k: {"passed": v} for k, v in checks.items()} if script else {},
                checks_passed=all(checks.values()) if script else None,
                latency_ms=ms,
            )
    for n in (1, 2):
        task = TaskFactory(
            testset=testset,
            external_id=f"C{n}",
            prompt="",
            turns=[f"user message {i}" for i in range(1, 6)],
            single_turn="Everything in one message.",
            turn_checks={str(i): {"must_include": ["ZD-5120"]} for i in range(1, 6)},
        )
        for contender, kept in ((careful, 5), (forgetful, 3)):
            for sample in (0, 1):
                GenerationFactory(
                    campaign=campaign,
                    task=task,
                    contender=contender,
                    sample_index=sample,
                    transcript=conversation([i <= kept for i in range(1, 6)]),
                    check_results={"must_include": {"passed": kept == 5}},
                    checks_passed=kept == 5,
                )
                GenerationFactory(
                    campaign=campaign,
                    task=task,
                    contender=contender,
                    sample_index=sample,
                    single_turn=True,
                    transcript=conversation([None]),
                    check_results={"must_include": {"passed": True}},
                    checks_passed=True,
                )
    return campaign


class AgenticDashboardTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = agentic_campaign()
        cls.plain = CampaignFactory(slug="plain")
        GenerationFactory(campaign=cls.plain, checks_passed=True)

    def setUp(self):
        self.client.force_login(self.users["lead"])

    def test_the_report_has_the_tools_and_conversation_keys(self):
        report = campaign_report(campaign=self.campaign, n_boot=100)
        assert set(report["tools"]) == {"careful", "forgetful"}
        for figures in report["tools"].values():
            assert set(figures) >= TOOL_KEYS
            for key in TOOL_KEYS - {"mean_steps", "completion_ms"}:
                assert set(figures[key]) >= RATE_KEYS
            assert set(figures["completion_ms"]) == {"p50", "p95"}
        assert report["tools"]["careful"]["tool_call_accuracy"]["rate"] == 0.8
        conv = report["conversation"]["forgetful"]
        assert set(conv) >= {"turn_curve", "decay", "basis", "single_vs_multi"}
        assert set(conv["turn_curve"][0]) >= {"turn", "mean", "ci95", "n"}
        assert [p["mean"] for p in conv["turn_curve"]] == [1.0, 1.0, 1.0, 0.0, 0.0]
        assert set(conv["decay"]) >= {"value", "ci95"} and conv["decay"]["value"] == -1.0
        svm = conv["single_vs_multi"]
        assert set(svm) >= {"single", "multi", "gap", "ci95", "aptitude", "unreliability"}
        assert (svm["single"], svm["multi"], svm["gap"]) == (1.0, 0.0, -1.0)
        # the single-turn rows are no pass-rate samples: 5 tool tasks + 2 conversations, x 2
        assert report["passes"]["careful"]["checks"]["n_samples"] == 14
        report_json(report)  # JSON-able, no NaN

    def test_a_campaign_without_such_tasks_has_neither_key_nor_tab(self):
        report = campaign_report(campaign=self.plain, n_boot=50)
        assert report["tools"] is None and report["conversation"] is None
        body = self.client.get("/campaigns/plain/dashboard/").content.decode()
        assert "Tool use" not in body and ">Conversation<" not in body
        for page in ("tools", "conversation"):
            assert self.client.get(f"/campaigns/plain/dashboard/{page}/").status_code == 404
            url = f"/campaigns/plain/dashboard/{page}/tool-calls.csv"
            assert self.client.get(url).status_code == 404

    def test_the_tabs_show_when_the_campaign_has_such_tasks(self):
        body = self.client.get("/campaigns/agents/dashboard/").content.decode()
        assert 'href="/campaigns/agents/dashboard/tools/"' in body
        assert 'href="/campaigns/agents/dashboard/conversation/"' in body

    def test_the_tool_use_page_shows_the_figures_with_their_n(self):
        response = self.client.get("/campaigns/agents/dashboard/tools/")
        assert response.status_code == 200
        calls, recovery = response.context["tables"]

        def row(table, name):
            return [c["text"] for c in next(r for r in table.html_rows if r[0]["text"] == name)]

        # accuracy 8/10 with its Wilson interval, invalid and unmocked 1/13
        assert row(calls, "careful")[1:] == [
            "80.0%",
            "0.490 – 0.943",
            "10",
            "7.7%",
            "0.014 – 0.333",
            "13",
            "7.7%",
            "0.014 – 0.333",
        ]
        # recovery 1/2, steps per task, completion p50 and p95, tool tasks
        assert row(recovery, "careful")[1:] == [
            "50.0%",
            "0.095 – 0.905",
            "2",
            "2.100",
            "too few items (n=5)",
            "850 ms",
            "1,555 ms",
            "5",
        ]
        assert row(calls, "forgetful")[2] == "no sample ran a tool_calls check"
        assert row(calls, "forgetful")[5] == "no tool calls"

    def test_the_conversation_page_draws_the_curves_at_the_cards_width(self):
        response = self.client.get("/campaigns/agents/dashboard/conversation/")
        body = response.content.decode()
        assert '<svg class="turn-chart"' in body and 'width="100%"' in body
        chart = response.context["turn_chart"]
        assert [line["name"] for line in chart.lines] == ["careful", "forgetful"]
        forgetful = chart.lines[1]
        ys = [d["y"] for d in forgetful["dots"]]
        assert ys[0] == ys[1] == ys[2] == chart.top and ys[3] == ys[4] == chart.bottom
        assert "forgetful, turn 4: 0.000" in body
        keys = [t.key for t in response.context["tables"]]
        assert keys == ["turn-curve", "decay", "single-vs-multi"]

    def test_every_new_table_downloads_as_csv(self):
        for page in ("tools", "conversation"):
            tables = self.client.get(f"/campaigns/agents/dashboard/{page}/").context["tables"]
            for table in tables:
                response = self.client.get(f"/campaigns/agents/dashboard/{page}/{table.key}.csv")
                assert response.status_code == 200
                text = b"".join(response.streaming_content).decode()
                rows = list(csv.reader(io.StringIO(text, newline="")))
                assert rows[0] == table.csv_header() and len(rows) == len(table.rows) + 1
        decay = self.client.get("/campaigns/agents/dashboard/conversation/decay.csv")
        rows = list(csv.reader(io.StringIO(b"".join(decay.streaming_content).decode())))
        assert rows[2][:4] == ["forgetful", "turn checks", "-1.0", ""]

    def test_reviewers_and_arbiters_are_refused(self):
        for who in ("reviewer_a", "arbiter", "outsider"):
            self.client.force_login(self.users[who])
            for page in ("tools", "conversation"):
                assert self.client.get(f"/campaigns/agents/dashboard/{page}/").status_code == 403


class PerTurnScoresTests(TestCase):
    """People's per-turn scores, settled through the real dispute rules, become the curve."""

    def test_settled_turn_scores_are_the_curve_s_basis(self):
        users = personas()
        campaign = CampaignFactory(
            slug="turns",
            score_turns={"dimension": "turn_quality", "min": 1, "max": 5},
            contenders=[ContenderFactory(name="steady"), ContenderFactory(name="forgetful")],
        )
        # both reviewers agree: 'forgetful' 5 4 2 on the three turns, 'steady' 5 5 5
        plan = {"steady": (5, 5, 5), "forgetful": (5, 4, 2)}
        for _ in range(3):
            task = TaskFactory(
                testset=campaign.testset, prompt="", turns=["first", "second", "third"]
            )
            item = ReviewItemFactory(campaign=campaign, task=task)
            by_name = {o.generation.contender.name: o for o in item.outputs.all()}
            for reviewer in (users["reviewer_a"], users["reviewer_b"]):
                review_create(
                    item,
                    reviewer,
                    scores={
                        by_name[name]: {"accuracy": 4.0, "completeness": 4.0}
                        | {f"turn_quality@{t}": float(v) for t, v in enumerate(turns, start=1)}
                        for name, turns in plan.items()
                    },
                )
            item.submitted_count = 2
            item.save(update_fields=["submitted_count"])
            item_settle(item)
        report = campaign_report(campaign=campaign, n_boot=50)
        conv = report["conversation"]
        assert conv["forgetful"]["basis"] == "human" and conv["forgetful"]["basis_reason"] is None
        # (5, 4, 2) on 1..5 normalized: 1, 0.75, 0.25; decay -0.75
        assert [p["mean"] for p in conv["forgetful"]["turn_curve"]] == [1.0, 0.75, 0.25]
        assert conv["forgetful"]["decay"]["value"] == -0.75
        assert conv["steady"]["decay"]["value"] == 0.0
        # and they stay out of the rubric's figures: quality is the rubric's 4 of 1..5
        assert {r["contender"]: r["quality"] for r in report["leaderboard"]} == {
            "steady": 0.75,
            "forgetful": 0.75,
        }
        assert set(report["agreement"]) == {"accuracy", "completeness"}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_turn_chart_fills_its_card_in_a_browser(browser_page):
    personas()
    agentic_campaign(slug="agents-browser")
    Generation.objects.filter(campaign__slug="agents-browser").update(latency_ms=900)
    page = browser_page
    browser_login(page, "lead", PASSWORD)
    page.goto("/campaigns/agents-browser/dashboard/conversation/")
    chart = page.locator("svg.turn-chart")
    chart.wait_for()
    assert chart.get_attribute("width") == "100%"
    svg_width = chart.evaluate("el => el.getBoundingClientRect().width")
    card_width = chart.evaluate("el => el.closest('figure').clientWidth")
    assert svg_width > 600 and abs(svg_width - card_width) < 1
    assert chart.locator("polyline.line").count() == 2
    assert page.js_errors == []
