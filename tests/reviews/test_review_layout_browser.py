"""Review page layout: the questions stay beside the text being judged, a clipped
box says "More" (a key reaches it), a refused key is said next to the focus."""

from pathlib import Path

import pytest

from reviews.arbitration.services import arbitration_claim_next
from tests.conftest import browser_login, wait_until
from tests.factories import PASSWORD, CampaignFactory, campaign_ready, personas
from tests.reviews.test_arbitration import disputed_item
from tests.reviews.test_review_browser import review_first_item

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
LONG = "\n\n".join(f"Paragraph {n}: restart the router, then check the lights." for n in range(80))


def in_view(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    size = page.viewport_size
    return bool(box) and box["y"] < size["height"] and box["y"] + box["height"] > 0


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_rubric_stays_in_view_while_an_output_is_scrolled(browser_page, live_server):
    campaign = campaign_ready(items=1, outputs=[LONG, LONG])
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    review_first_item(page, campaign, "wide_reviewer")
    # Side by side: the first question is right of the outputs, on the first screen.
    form = page.locator("#review-form").bounding_box()
    output = page.locator("#output-A").bounding_box()
    assert form["x"] > output["x"] + output["width"] - 1
    assert in_view(page, "#review-form fieldset")
    # Output A scrolled inside its box, then shown whole (`m`) and the page scrolled down
    # it: the questions are still on screen beside the text.
    page.locator("#output-A .output-body").evaluate("el => { el.scrollTop = 400; }")
    assert in_view(page, "#review-form fieldset")
    page.keyboard.press("m")
    assert wait_until(page, lambda: page.locator("#output-A .output-body.expanded").count() == 1)
    page.evaluate("window.scrollTo(0, 1500)")
    page.wait_for_timeout(100)
    assert page.evaluate("window.scrollY") > 300
    assert in_view(page, "#review-form fieldset") and in_view(page, "#output-A")
    page.screenshot(path=str(ARTIFACTS / "review-wide-1280x800.png"))
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_clipped_output_says_more_and_m_shows_it_all(browser_page, live_server):
    campaign = campaign_ready(items=1, outputs=[LONG, "Short answer."])
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    review_first_item(page, campaign, "more_reviewer")
    clipped = page.locator("#review .output-body.is-clipped")
    assert clipped.count() == 1
    cue = page.locator("#review [data-more]")
    assert cue.count() == 1 and cue.is_visible() and "More" in cue.inner_text()
    label = page.locator("#review .output-body.is-clipped").evaluate(
        "el => el.closest('[data-col-output]').id"
    )
    if label != "output-A":
        page.keyboard.press("ArrowRight")  # the clipped one is B: highlight its column
    page.keyboard.press("m")
    assert wait_until(page, lambda: page.locator("#review .output-body.expanded").count() == 1)
    assert "Less" in cue.inner_text()
    page.keyboard.press("m")
    assert wait_until(page, lambda: page.locator("#review .output-body.expanded").count() == 0)
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_refused_key_is_said_next_to_the_focus_in_an_800px_viewport(browser_page, live_server):
    campaign = campaign_ready(items=1, outputs=[LONG, LONG])
    page = browser_page
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        if width == 1280:
            review_first_item(page, campaign, "refused_reviewer")
        else:
            page.reload()
            page.wait_for_selector("#review [data-cell].focused")
        page.keyboard.press("x")  # accuracy has no N/A
        note = page.locator("#review [data-refused]")
        assert note.inner_text() == "N/A is not a choice here"
        assert note.is_visible() and in_view(page, "#review [data-refused]")
        page.screenshot(path=str(ARTIFACTS / f"review-refused-{width}x800.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "review-390x844.png"), full_page=True)
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_arbitration_page_says_a_refused_key_next_to_the_focus(browser_page, live_server):
    users = personas()
    campaign = CampaignFactory(slug="arb-keys")
    disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
    arbitration = arbitration_claim_next(campaign=campaign, arbiter=users["arbiter"])
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    browser_login(page, "arbiter", PASSWORD)
    page.goto(f"/arbitration/t/{arbitration.token}/")
    assert wait_until(
        page, lambda: page.evaluate("document.activeElement?.type === 'radio'"), seconds=15
    )
    page.keyboard.press("x")  # the disputed accuracy has no N/A
    note = page.locator("[data-refused]")
    assert note.inner_text() == "N/A is not a choice here"
    assert in_view(page, "[data-refused]")
    page.screenshot(path=str(ARTIFACTS / "arbitration-refused-1280x800.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "arbitration-390x844.png"), full_page=True)
    assert page.js_errors == []
