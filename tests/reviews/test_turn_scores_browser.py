"""A 5-turn conversation scored turn by turn with the keyboard only, in a real Chromium."""

from pathlib import Path

import pytest

from reviews.models import Review, ReviewItem
from tests.conftest import browser_login
from tests.factories import PASSWORD, UserFactory
from tests.reviews.test_review_browser import start_reviewing
from tests.reviews.turn_fixtures import conversation_item, turn_campaign

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def focused(page) -> dict:
    """Which question and output the digits score now, and which turn block is current."""
    return page.evaluate(
        """() => {
          const cell = document.querySelector('#review [data-cell].focused');
          const row = cell.closest('fieldset[data-row]');
          const current = document.querySelector('#review [data-turn-row].current-turn');
          const box = cell.getBoundingClientRect();
          return {turn: row.dataset.turn || null, label: cell.querySelector('.cell-label').textContent,
                  current: current ? current.dataset.turnRow : null,
                  visible: box.top >= 0 && box.bottom <= window.innerHeight + 1};
        }"""
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_reviewer_scores_a_five_turn_conversation_with_the_keyboard_only(browser_page):
    page = browser_page
    campaign = turn_campaign(overlap=1, name="Trip planner")
    item = conversation_item(campaign, turns=5)
    reviewer = UserFactory(username="turn-reviewer", roles=["reviewer"])
    browser_login(page, reviewer.username, PASSWORD)
    page.goto(f"/review/{campaign.slug}/")
    start_reviewing(page)

    # Turn by turn, each output's reply: the question under the turn, then the next turn.
    turn_keys = {"A": ["5", "4", "4", "3", "2"], "B": ["3", "3", "4", "5", "5"]}
    for turn in range(1, 6):
        for label in ("A", "B"):
            where = focused(page)
            assert where == {
                "turn": str(turn),
                "label": label,
                "current": str(turn),
                "visible": True,
            }, where
            page.keyboard.press(turn_keys[label][turn - 1])
        if turn == 3:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "review-turn-scores-1280x900.png"))
    # Then the rubric on the final reply, as on any item, and the preference.
    assert focused(page)["turn"] is None
    for key in ["4", "3", "5", "4", "1"]:  # accuracy A, B; completeness A, B; prefer A
        page.keyboard.press(key)
    # A typo, corrected with the keys alone: up from the preference (completeness, accuracy)
    # to turn 5, over to B.
    for _ in range(3):
        page.keyboard.press("k")
    assert focused(page)["turn"] == "5"
    page.keyboard.press("l")
    assert focused(page) | {"visible": True} == {
        "turn": "5",
        "label": "B",
        "current": "5",
        "visible": True,
    }
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-notice=ok], [data-finished]")
    assert page.js_errors == []

    review = Review.objects.get(item=item, reviewer=reviewer)
    order = review.presented_order
    got = {
        (order.index(s.output_id), s.dimension): s.value
        for s in review.scores.all()
        if "@" in s.dimension
    }
    expected = {
        (i, f"turn_quality@{t}"): float(turn_keys[label][t - 1])
        for i, label in enumerate(("A", "B"))
        for t in range(1, 6)
    }
    expected[(1, "turn_quality@5")] = 1.0  # the corrected one
    assert got == expected
    assert review.preferred_output_id == order[0]
    assert ReviewItem.objects.get(pk=item.pk).state == "agreed"
