"""Dashboards on a first look: the report computed ahead and per state (a correction is a new
state), long tables folded after the summaries, and charts that draw what their captions say."""

import pytest

from reviews import review as services
from reviews.jobs import reports_warm_job
from reviews.report.cache import campaign_report_warm, report_fingerprint, reports_warm
from tests.factories import UserFactory, campaign_ready
from tests.reviews.helpers import full_review
from tests.reviews.test_review_corrections import claim_and_submit


@pytest.mark.django_db
def test_the_warm_up_computes_each_changed_campaign_once():
    campaign = campaign_ready(items=2, overlap=1)
    untouched = campaign_ready(items=1, overlap=1)
    claim_and_submit(campaign, UserFactory(username="w1", roles=["reviewer"]), value=3)
    assert reports_warm_job() == 1  # the campaign with a review; not the untouched one
    assert reports_warm() == 0  # nothing changed since
    report, computed = campaign_report_warm(campaign)
    assert not computed and report["progress"]["reviews_done"] == 1
    assert campaign_report_warm(untouched)[1]  # never warmed: computed on demand


@pytest.mark.django_db
def test_a_correction_is_a_new_state_of_the_report():
    campaign = campaign_ready(items=1, overlap=2)
    reviewer = UserFactory(username="w2", roles=["reviewer"])
    assignment = claim_and_submit(campaign, reviewer, value=2)
    before = report_fingerprint(campaign)
    result = services.review_correct(
        token=assignment.token,
        reviewer=reviewer,
        data=full_review(assignment, value=4, preference="tie"),
    )
    assert result.ok
    assert report_fingerprint(campaign) != before


@pytest.mark.django_db
def test_a_long_dashboard_table_is_folded_after_the_summaries(client):
    from django.template.loader import render_to_string

    from reviews.dashboards.tables import Column, Table

    campaign = campaign_ready(items=1, overlap=1)
    short = Table("summary", "Summary", [Column("contender", "name")], [["a"], ["b"]])
    long = Table("per-task", "Per task", [Column("task")], [[f"T-{i}"] for i in range(200)])
    html = render_to_string(
        "reviews/dashboard_stability.html",
        {
            "campaign": campaign,
            "page": "stability",
            "page_title": "Stability",
            "pages": [],
            "tables": [long, short],
        },
    )
    assert html.index('id="table-summary"') < html.index('id="table-per-task"')
    folded = html[html.index('id="table-per-task"') :]
    assert "<details" in folded and "200 rows: show them" in folded
    assert (
        "<details" not in html[html.index('id="table-summary"') : html.index('id="table-per-task"')]
    )


def test_the_turn_chart_draws_the_interval_its_caption_promises():
    from reviews.dashboards.agentic import turn_chart

    def conversation(ci95):
        return {
            "alpha": {
                "basis": "human",
                "turn_curve": [
                    {"turn": 1, "mean": 0.8, "ci95": ci95, "n": 12},
                    {"turn": 2, "mean": 0.6, "ci95": None, "reason": "too few", "n": 4},
                ],
            }
        }

    # One turn with an interval: no band (it needs two), but a whisker, and the caption says so.
    chart = turn_chart(conversation([0.7, 0.9]))
    line = chart.lines[0]
    assert line["band"] == "" and len(line["whiskers"]) == 1
    assert line["whiskers"][0]["y1"] > line["whiskers"][0]["y2"]  # 0.7 is drawn below 0.9
    assert chart.title == "Mean score per turn with 95% interval"
    # No interval anywhere: the caption does not promise one.
    chart = turn_chart(conversation(None))
    assert chart.lines[0]["whiskers"] == []
    assert chart.title == "Mean score per turn (no 95% interval: too few test cases)"


def test_the_cost_chart_labels_its_quarter_ticks_as_they_are():
    from reviews.dashboards.extras import pareto_chart

    rows = [
        {"contender": "a", "quality": 0.5, "cost_per_task": 0.01, "pareto": True},
        {"contender": "b", "quality": 0.7, "cost_per_task": 0.02, "pareto": True},
    ]
    labels = [t["label"] for t in pareto_chart({"leaderboard": rows}).y_ticks]
    # Python's "{:.1f}" rounds 0.25 and 0.75 to even: the ticks read 0.2 and 0.8.
    assert labels == ["0.00", "0.25", "0.50", "0.75", "1.00"]


def test_an_interval_chart_promises_an_interval_only_where_it_draws_one():
    from reviews.dashboards.tables import interval_chart

    both = interval_chart([("a", 0.5, [0.4, 0.6]), ("b", 0.7, [0.6, 0.8])], title="Quality")
    assert both.title == "Quality with 95% interval"
    part = interval_chart(
        [("a", 0.5, [0.4, 0.6]), ("b", 0.7, "too few items (n=7)")], title="Quality"
    )
    assert part.title == "Quality with 95% interval (none for b: too few items (n=7))"
    assert [r["x_lo"] is None for r in part.rows] == [False, True]
    none = interval_chart([("a", 0.5, None), ("b", 0.7, None)], title="Quality")
    assert none.title == "Quality (no 95% interval: too few test cases)"


def test_the_phone_s_interval_chart_keeps_every_point_and_label_inside_its_width():
    from reviews.dashboards.tables import interval_chart

    chart = interval_chart(
        [("a-rather-long-contender-name", 1224.4, [1100.0, 1350.0]), ("b", 775.6, None)],
        title="Rating",
        marks=[(1000.0, "1000")],
    ).narrow
    assert chart.width == 360
    for row in chart.rows:
        assert row["x_lo"] is None or chart.left <= row["x_lo"] <= row["x_hi"] <= chart.width
        assert chart.left <= row["x"] <= chart.width and row["lx"] == chart.left
        assert row["ly"] < row["y"]  # the label sits above its row


def _row(name, rating, ci, rank, **more):
    return {"contender": name, "rating": rating, "ci95": ci, "rank": rank, **more}


def test_the_summary_names_the_leader_only_as_surely_as_the_ranks_allow():
    from reviews.dashboards.summary import leader_sentence

    rating = {"ci_reason": None, "reason": None}
    alone = [_row("a", 1200.0, [1100.0, 1300.0], 1), _row("b", 800.0, [700.0, 900.0], 2)]
    assert leader_sentence({"leaderboard": alone, "rating": rating}) == (
        "Ahead: a, rating 1200 (95% interval 1,100.0 – 1,300.0), the only contender ranked 1."
    )
    undefeated = [_row("a", 1400.0, [1262.0, None], 1), _row("b", 800.0, [700.0, 900.0], 2)]
    assert leader_sentence({"leaderboard": undefeated, "rating": rating}) == (
        "Ahead: a, rating 1400 (95% interval ≥ 1,262.0), the only contender ranked 1."
    )
    shared = [_row("a", 1050.0, [900.0, 1200.0], 1), _row("b", 950.0, [800.0, 1100.0], 1)]
    assert leader_sentence({"leaderboard": shared, "rating": rating}) == (
        "No clear leader: a and b share rank 1 (their 95% intervals overlap)."
    )
    unranked = [_row("a", 1224.4, None, None), _row("b", 775.6, None, None)]
    said = leader_sentence(
        {"leaderboard": unranked, "rating": {"ci_reason": "no ranks: too few items (n=7)"}}
    )
    assert said == "Highest rating so far: a (1224); no rank yet: too few items (n=7)."


def test_the_cost_summary_never_names_a_contender_below_the_quality_floor_best():
    from reviews.dashboards.summary import cost_summary

    lb = [
        {
            "contender": "cheap-bad",
            "decision_score": 0.9,
            "below_floor": True,
            "gates_pass": False,
            "cost_per_task": 0.001,
        },
        {
            "contender": "good",
            "decision_score": 0.4,
            "decision_ci95": [0.3, 0.5],
            "decision_rank": 1,
            "below_floor": False,
            "gates_pass": True,
            "cost_per_task": 0.01,
        },
    ]
    said = cost_summary({"leaderboard": lb, "decision": {"pareto_front": ["cheap-bad", "good"]}})
    assert said[0] == "Best decision score: good, 0.400 (95% interval 0.300 – 0.500)."
    assert said[1] == "On the cost-quality Pareto front: cheap-bad and good."
    assert said[2].startswith("Cheapest: cheap-bad, ")


def test_the_overview_gives_the_dispute_rate_its_interval_or_says_why_not():
    from reviews.dashboards.selectors import dashboard_page

    report = {
        "progress": {
            "items": 12,
            "ready": 12,
            "reviews_done": 16,
            "reviews_needed": 24,
            "settled": 8,
            "agreed": 5,
            "disputed": 1,
            "resolved": 2,
            "open": 4,
            "dispute_rate": 0.375,
        },
        "disputes": {
            "disputed_items": 3,
            "rate": 0.375,
            "ci95": None,
            "ci_reason": "too few items (n=8)",
            "n_cases": 8,
            "reasons": {},
        },
        "leaderboard": [],
        "rating": {"reason": "no pairwise outcomes yet"},
        "warnings": [],
    }
    page = dashboard_page(report, "overview")
    assert page["dispute_interval"] == "no interval: too few items (n=8)"
    report["disputes"]["ci95"] = [0.2, 0.55]
    page = dashboard_page(report, "overview")
    assert page["dispute_interval"] == "95% interval 20.0% – 55.0%"
    assert page["summary"][1] == "No contender is rated yet: no pairwise outcomes yet."
