"""A reviewer corrects a submitted review before its item settles, in a real Chromium, with
the keyboard: "item n of N", digits choose, `u` undoes the last choice, Enter submits."""

from pathlib import Path

import pytest

from reviews.models import Assignment, Review, ReviewVersion
from tests.conftest import browser_login
from tests.factories import PASSWORD, UserFactory, campaign_ready
from tests.reviews.test_review_browser import start_reviewing

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def checked(page, name: str) -> str | None:
    return page.evaluate(f"document.querySelector('input[name=\"{name}\"]:checked')?.value ?? null")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_a_reviewer_corrects_a_review_before_the_item_is_settled(browser_page, width):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    campaign = campaign_ready(items=2, overlap=2, name="Support answers")
    reviewer = UserFactory(username="fixer", roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    page.goto(f"/review/{campaign.slug}/")
    start_reviewing(page)
    assert page.inner_text("[data-position]") == "Item 1 of 2"

    # A mistyped 1 is undone with `u`: the question is empty again and highlighted.
    page.keyboard.press("1")
    assert checked(page, "score-A-accuracy") == "1"
    page.keyboard.press("u")
    assert checked(page, "score-A-accuracy") is None
    assert "Undone" in page.inner_text("#review [data-status]")
    for key in ("2", "2", "2", "2", "3"):  # accuracy A B, completeness A B, then "Tie"
        page.keyboard.press(key)
    assert checked(page, "preference") == "tie"
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-position]:text('Item 2 of 2')")
    first = Assignment.objects.get(reviewer=reviewer, state="submitted")

    # Your reviews: the first one, not settled, with Correct.
    page.get_by_role("link", name="Your reviews").click()
    page.get_by_text("waiting for the other reviews").wait_for()
    if width == 390:
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"review-history-{width}.png"), full_page=True)
    page.get_by_role("link", name="Correct").click()
    page.get_by_text("Correcting your review").wait_for()
    # The saved answers are filled in; the keyboard works as on a new item.
    assert checked(page, "score-A-accuracy") == "2"
    page.locator("input[name='score-A-accuracy'][value='5']").focus()
    page.keyboard.press("5")
    page.keyboard.press("Enter")
    page.get_by_text("Corrected. Your earlier answers are kept.").wait_for()
    page.screenshot(path=str(ARTIFACTS / f"review-corrected-{width}.png"), full_page=True)
    review = Review.objects.get(assignment=first)
    values = dict(((s.output_id, s.dimension), s.value) for s in review.scores.all())
    assert values[(first.order[0], "accuracy")] == 5.0
    assert ReviewVersion.objects.get(review=review).version == 1
    assert page.js_errors == []
