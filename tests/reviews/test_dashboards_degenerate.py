"""Every dashboard page and CSV renders for the campaigns at the edges of what the report can
describe: all ties, an undefeated and a winless contender, one contender, no reviews, free
contenders, missing costs, everything passing. These are exactly the campaigns where one model
clearly wins (or nothing can be told apart), so a page that fails on them fails when it matters.
"""

import html
import math

import pytest
from django.test import TestCase

from reviews.records import reviews_import
from tasks.models import Contender, Generation
from tests.factories import personas
from tests.reviews.test_dashboards import page_urls
from tests.reviews.test_records import jsonl, make_campaign

N_TASKS = 12  # at least 10 test cases: the campaigns have intervals (the HTTP 500 needed them)


def contenders(*names):
    return [
        Contender.objects.get_or_create(name=n, defaults={"provider": "imported"})[0] for n in names
    ]


def scored(task: int, judge: str, models: dict, scores: dict, preference="A") -> dict:
    return {
        "task_id": f"T-{task}",
        "candidates": sorted(models),
        "judge": judge,
        "models": models,
        "scores": scores,
        "preference": preference,
        "sample": 0,
    }


def rubric_campaign(slug: str, names: tuple, score_of) -> object:
    """A 'both' campaign over N_TASKS tasks; two judges agree on every item: contender
    ``names[j]`` gets ``score_of(task, name)`` on both dimensions, and the higher score is
    preferred (a tie when equal)."""
    campaign = make_campaign(slug=slug, contenders=contenders(*names), n_tasks=N_TASKS)
    records = []
    for t in range(1, N_TASKS + 1):
        labels = {chr(ord("A") + j): n for j, n in enumerate(names)}
        values = {label: score_of(t, n) for label, n in labels.items()}
        best = max(values.values())
        winners = [label for label, v in values.items() if v == best]
        preference = winners[0] if len(winners) == 1 else "tie"
        scores = {label: {"accuracy": v, "completeness": v} for label, v in values.items()}
        for judge in ("j1", "j2"):
            records.append(scored(t, judge, labels, scores, preference))
    reviews_import(campaign=campaign, data=jsonl(*records), fmt="jsonl")
    return campaign


def set_costs(campaign, costs: dict) -> None:
    """{contender name: cost of one answer, or None for unknown (no tokens either)}."""
    for name, cost in costs.items():
        Generation.objects.filter(campaign=campaign, contender__name=name).update(
            cost=cost, input_tokens=None, output_tokens=None
        )


class DegenerateCampaignDashboardTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.slugs = []

        def make(slug, names, score_of, costs=None):
            campaign = rubric_campaign(slug, names, score_of)
            set_costs(campaign, costs or dict.fromkeys(names, 0.002))
            cls.slugs.append(slug)
            return campaign

        make("all-ties", ("tie-a", "tie-b"), lambda t, n: 3)
        # undefeated beats both every time, winless loses every time, the middle one in between
        make(
            "undefeated",
            ("top", "middle", "bottom"),
            lambda t, n: {"top": 5, "middle": 3 + t % 2, "bottom": 1}[n],
        )
        # one contender cannot be reviewed blind (an item needs two outputs): it has its
        # generations, checked, and nothing else
        alone = make_campaign(slug="one-contender", contenders=contenders("alone"), n_tasks=N_TASKS)
        for task in alone.testset.tasks.all():
            Generation.objects.create(
                campaign=alone,
                task=task,
                contender=alone.contenders.get(),
                sample_index=0,
                status="done",
                output="ok",
                checks_passed=True,
                check_results={"regex": {"passed": True}},
                cost=0.001,
                latency_ms=500,
            )
        cls.slugs.append("one-contender")
        make(
            "free",
            ("free-a", "free-b"),
            lambda t, n: 4 if n == "free-a" else 2 + t % 2,
            costs={"free-a": 0.0, "free-b": 0.0},
        )
        make(
            "free-and-paid",
            ("gratis", "paid"),
            lambda t, n: 3 + (t + (n == "paid")) % 2,
            costs={"gratis": 0.0, "paid": 0.01},
        )
        make(
            "missing-costs",
            ("known", "unknown"),
            lambda t, n: 3 + (t + (n == "known")) % 2,
            costs={"known": 0.003, "unknown": None},
        )
        make("all-pass", ("ace", "pro"), lambda t, n: 5)
        make_campaign(slug="no-reviews", contenders=contenders("idle-a", "idle-b"), n_tasks=N_TASKS)
        cls.slugs.append("no-reviews")

    def test_every_page_and_every_csv_renders(self):
        self.client.force_login(self.users["lead"])
        for slug in self.slugs:
            for url in page_urls(slug):
                response = self.client.get(url)
                assert response.status_code == 200, url
                page = response.context["page"]
                for table in response.context["tables"]:
                    csv_url = f"/campaigns/{slug}/dashboard/{page}/{table.key}.csv"
                    assert self.client.get(csv_url).status_code == 200, csv_url

    def test_the_undefeated_and_winless_contenders_show_exact_bounds_on_the_leaderboard(self):
        self.client.force_login(self.users["lead"])
        response = self.client.get("/campaigns/undefeated/dashboard/leaderboard/")
        board = {r["contender"]: r for r in response.context["report"]["leaderboard"]}
        top, bottom = board["top"], board["bottom"]
        assert top["ci95"][1] is None and top["rating_bound"].startswith(">= ")
        assert bottom["ci95"][0] is None and bottom["rating_bound"].startswith("<= ")
        body = response.content.decode()
        assert html.escape(top["rating_bound"]) in body
        # 24 games won of 24 (12 test cases x 2 opponents): p >= 0.05 ** (1 / 24) = 0.8827,
        # 400 log10(p / (1 - p)) = +350.6 over the one opponent rated from data (middle)
        p = 0.05 ** (1 / 24)
        expected = board["middle"]["rating"] + 400 * math.log10(p / (1 - p))
        assert top["ci95"][0] == pytest.approx(expected, abs=0.2)

    def test_all_ties_split_p_best_and_say_all_equal(self):
        self.client.force_login(self.users["lead"])
        report = self.client.get("/campaigns/all-ties/dashboard/leaderboard/").context["report"]
        board = {r["contender"]: r for r in report["leaderboard"]}
        assert board["tie-a"]["p_best"] == board["tie-b"]["p_best"] == 0.5
        assert board["tie-a"]["ci95"] is None
        assert board["tie-a"]["rating_ci_reason"] == f"all equal (n={N_TASKS})"

    def test_free_beside_paid_is_zero_and_missing_costs_are_named(self):
        self.client.force_login(self.users["lead"])
        report = self.client.get("/campaigns/free-and-paid/dashboard/cost/").context["report"]
        board = {r["contender"]: r for r in report["leaderboard"]}
        assert board["gratis"]["normalized_cost"] == 0.0 and board["paid"]["normalized_cost"] == 1.0
        response = self.client.get("/campaigns/missing-costs/dashboard/cost/")
        board = {r["contender"]: r for r in response.context["report"]["leaderboard"]}
        assert board["unknown"]["normalized_cost"] is None
        assert board["unknown"]["cost_reason"].startswith("no cost data")
        chart = response.context["pareto_chart"]
        # with one known cost there is no chart of two; the row says why instead
        assert chart is None or any(p.get("unknown_cost") for p in chart.points)
        assert "no cost data for unknown" in response.content.decode()


@pytest.mark.parametrize("page", ["leaderboard"])
def test_an_open_interval_side_does_not_break_the_chart(page):
    from reviews.dashboards.tables import interval_chart

    chart = interval_chart(
        [
            ("top", 1400.0, [1262.0, None]),
            ("mid", 1000.0, [950.0, 1050.0]),
            ("low", 600, [None, 738.0]),
        ],
        title="Rating with 95% interval",
        marks=[(1000.0, "1000")],
    )
    rows = {r["label"]: r for r in chart.rows}
    assert rows["top"]["x_hi"] == chart.left + (chart.width - chart.left - 30)  # open to the edge
    assert rows["low"]["x_lo"] == chart.left
