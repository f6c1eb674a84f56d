"""Every dashboard tab of the demo, in Chromium at 1280 and 390 px: its first screen shows the
summary and the chart, and nothing scrolls sideways on a phone."""

from io import StringIO

import pytest
from django.core.management import call_command

from evalsite.demo import DEMO_USERS
from tests.conftest import browser_login

SIZES = [(1280, 800), (390, 844)]
# (campaign, tab, what draws its answer): the demo's support campaign has every common tab,
# its agents campaign the tool use and conversation tabs.
TABS = [
    ("support-demo", "", "figure.dash-chart svg.interval-chart"),
    ("support-demo", "agreement", "figure.dash-chart svg.interval-chart"),
    ("support-demo", "reviewers", "figure.dash-chart svg.interval-chart"),
    ("support-demo", "leaderboard", "figure.dash-chart svg.interval-chart"),
    # The category x contender heatmap is the capability tab's chart.
    ("support-demo", "capability", "#table-category-profile td.heat"),
    ("support-demo", "stability", "figure.dash-chart svg.interval-chart"),
    ("support-demo", "cost", "figure.dash-chart svg"),
    ("support-demo", "bias", "figure.dash-chart svg.interval-chart"),
    ("support-demo", "head-to-head", "figure.dash-chart svg.interval-chart"),
    ("agents-demo", "tools", "figure.dash-chart svg.interval-chart"),
    ("agents-demo", "conversation", "figure.dash-chart svg.turn-chart"),
]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_tab_opens_with_its_summary_and_chart_at_both_widths(browser_page):
    call_command("demo", stdout=StringIO())
    password = next(p for name, _, p in DEMO_USERS if name == "lead")
    page = browser_page
    browser_login(page, "lead", password)
    seen = []
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        for slug, tab, chart in TABS:
            page.goto(f"/campaigns/{slug}/dashboard/{tab + '/' if tab else ''}")
            summary = page.locator(".dash-summary li").first
            summary.wait_for()
            where = f"{slug} {tab or 'overview'} at {width} px"
            top, bottom = summary.evaluate(
                "el => [el.getBoundingClientRect().top, el.getBoundingClientRect().bottom]"
            )
            assert 0 <= top and bottom <= height, f"{where}: the summary is below the first screen"
            drawn = page.locator(f"{chart} >> visible=true").first
            assert drawn.is_visible(), f"{where}: no chart"
            chart_top = drawn.evaluate("el => el.getBoundingClientRect().top")
            assert chart_top < height, f"{where}: the chart starts below the first screen"
            # Nothing scrolls sideways: a wide chart scrolls inside its own figure.
            page_width = page.evaluate("document.documentElement.scrollWidth")
            assert page_width <= width, f"{where}: the page is {page_width} px wide"
            seen.append(where)
    assert len(seen) == 2 * len(TABS)
    assert page.js_errors == []
