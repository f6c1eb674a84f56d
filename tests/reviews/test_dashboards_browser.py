"""A lead reads the leaderboard and dashboards in a real Chromium under the strict CSP."""

from pathlib import Path

import pytest

from reviews.records import reviews_import
from tests.conftest import browser_login
from tests.factories import PASSWORD, personas
from tests.reviews.test_records import SECRET_NAMES, jsonl, make_campaign, sample_records

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_lead_opens_the_leaderboard_and_the_dashboards(browser_page):
    personas()
    campaign = make_campaign()
    reviews_import(campaign=campaign, data=jsonl(*sample_records()), fmt="jsonl")
    page = browser_page
    errors = page.js_errors
    ARTIFACTS.mkdir(exist_ok=True)

    browser_login(page, "lead", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/dashboard/leaderboard/")
    page.get_by_role("heading", name="Leaderboard").first.wait_for()
    chart = page.locator("svg.interval-chart").first
    assert chart.is_visible()
    # One interval and one point per contender, drawn where the report says.
    assert chart.locator("circle.point").count() == 2
    assert SECRET_NAMES[0] in chart.text_content()
    box = chart.bounding_box()
    assert box["width"] > 300 and box["height"] > 60
    page.screenshot(path=str(ARTIFACTS / "dashboard-leaderboard.png"), full_page=True)
    narrow = page.locator("svg.interval-chart.narrow-chart").first
    assert not narrow.is_visible()
    # On a phone the chart is drawn at the phone's width, each label above its row: legible,
    # every point on the screen, nothing to scroll.
    page.set_viewport_size({"width": 390, "height": 844})
    assert narrow.is_visible() and not chart.is_visible()
    assert narrow.locator("circle.point").count() == 2
    assert SECRET_NAMES[0] in narrow.text_content()
    figure = page.locator("figure.dash-chart").first
    assert figure.evaluate("el => el.scrollWidth <= el.clientWidth")
    box = narrow.bounding_box()
    assert box["width"] <= 390 and box["x"] >= 0
    page.goto(f"/campaigns/{campaign.slug}/dashboard/")
    cards = page.locator(".dash-stats > .card")
    first, second = cards.nth(0).bounding_box(), cards.nth(1).bounding_box()
    assert first["y"] == second["y"]  # the figures sit two a row, not one screen each
    page.goto(f"/campaigns/{campaign.slug}/dashboard/leaderboard/")
    page.set_viewport_size({"width": 1280, "height": 800})

    page.get_by_role("link", name="Capability profile").click()
    page.get_by_role("heading", name="Category x contender").wait_for()
    cell = page.locator("td.heat-8").first
    # The heatmap colour comes from the stylesheet (no inline styles under the CSP).
    assert cell.evaluate("el => getComputedStyle(el).backgroundColor") != "rgba(0, 0, 0, 0)"
    page.screenshot(path=str(ARTIFACTS / "dashboard-capability.png"), full_page=True)

    page.get_by_role("link", name="Head-to-head").click()
    page.select_option("select[name=a]", SECRET_NAMES[0])
    page.select_option("select[name=b]", SECRET_NAMES[1])
    page.get_by_role("button", name="Compare").click()
    page.get_by_role("heading", name=f"Tasks where {SECRET_NAMES[1]} regressed").wait_for()
    assert "T-1" in page.inner_text("#table-regressions")
    assert f"a={SECRET_NAMES[0]}" in page.url  # htmx pushed the choice into the address bar
    page.screenshot(path=str(ARTIFACTS / "dashboard-head-to-head.png"), full_page=True)
    assert errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_record_file_over_the_limit_is_refused_before_it_is_sent(
    browser_page, settings, tmp_path
):
    from reviews.models import Review
    from tests.reviews.test_records import rec

    personas()
    campaign = make_campaign()
    good = jsonl(*sample_records())
    settings.REVIEWS_IMPORT_MAX_BYTES = len(good)
    big, small, bad = tmp_path / "big.jsonl", tmp_path / "records.jsonl", tmp_path / "bad.jsonl"
    big.write_bytes(good + b"\n")
    small.write_bytes(good)
    bad.write_bytes(jsonl(rec(task="T-99")))
    page = browser_page
    browser_login(page, "lead", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/dashboard/")
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/import") else None)
    refused = (
        f"The file is larger than {len(good):,} bytes (REVIEWS_IMPORT_MAX_BYTES). "
        "Choose a smaller file."
    )
    file_input = "#import-form input[name=file]"

    def message() -> str:
        return page.eval_on_selector(file_input, "el => el.validationMessage")

    page.set_input_files(file_input, str(big))
    assert message() == refused
    page.get_by_role("button", name="Import").click()
    page.wait_for_timeout(300)
    assert sent == [] and page.locator(".import-errors").count() == 0  # not sent
    # The form htmx swaps in after the server's refusal checks the size too.
    page.set_input_files(file_input, str(bad))
    assert message() == ""
    page.get_by_role("button", name="Import").click()
    page.get_by_text("Nothing was imported from bad.jsonl").wait_for()
    page.set_input_files(file_input, str(big))
    assert message() == refused
    page.get_by_role("button", name="Import").click()
    page.wait_for_timeout(300)
    assert len(sent) == 1 and page.get_by_text("Nothing was imported from bad.jsonl").count() == 1
    page.set_input_files(file_input, str(small))
    assert message() == ""
    page.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 8 reviews").wait_for()
    assert Review.objects.count() == 8
    assert page.js_errors == []
