"""Dashboards on a first look: the report computed ahead and per state (a correction is a new
state), long tables folded after the summaries, and charts that draw what their captions say."""

import pytest

from reviews import review as services
from reviews.dashboards.selectors import campaign_report_warm, report_fingerprint, reports_warm
from reviews.jobs import reports_warm_job
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
