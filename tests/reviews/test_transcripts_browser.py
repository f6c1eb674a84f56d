"""Transcripts and conversations in Chromium (docs/reviewing.md, "Transcripts and
conversations"): a tool-use transcript reviewed with the keyboard only, and a 3-turn
conversation side by side, at 1280 px and on a phone (390 px)."""

from pathlib import Path

import pytest

from reviews.models import Assignment, Review
from tests.conftest import wait_until
from tests.factories import (
    CampaignFactory,
    ReviewItemFactory,
    TaskFactory,
    transcript_turn,
    with_transcript,
)
from tests.reviews.test_review_browser import review_first_item
from tests.reviews.test_transcripts_review import conversation_turns, tool_use_turns

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

OPEN_STEPS = """label => Array.from(document.querySelectorAll(
  `#review [data-output-label="${label}"] details[data-step]`), d => d.open)"""


def no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def tool_campaign():
    campaign = CampaignFactory(overlap=1)
    item = ReviewItemFactory(campaign=campaign)
    for output, turn in zip(item.outputs.order_by("pk"), tool_use_turns(), strict=True):
        with_transcript(output.generation, turn)
    return campaign


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_tool_use_transcript_is_reviewed_with_the_keyboard_only(browser_page, live_server):
    campaign = tool_campaign()
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    reviewer = review_first_item(page, campaign, "transcript_reviewer")
    labels = ["A", "B"]
    steps = {label: page.evaluate(OPEN_STEPS, label) for label in labels}
    assert sorted(len(s) for s in steps.values()) == [1, 3]  # collapsed at first
    assert not any(any(s) for s in steps.values())
    # `e`: every step of the current output (A, where the first question is) opens...
    page.keyboard.press("e")
    assert wait_until(page, lambda: all(page.evaluate(OPEN_STEPS, "A")))
    assert not any(page.evaluate(OPEN_STEPS, "B"))
    # ...and can be read: the arguments as formatted JSON, results and errors marked.
    output_a = page.locator('#review [data-output-label="A"]')
    shown = output_a.inner_text()
    if "get_order" in shown and "refund" in shown:  # A holds the three-step transcript
        assert '"order_id": "A-17"' in shown and "timeout" in shown
        assert "unmocked" in shown and output_a.locator("pre.json").first.is_visible()
    else:
        assert "not valid JSON" in shown and "{order_id: A-17" in shown
    assert page.evaluate("document.activeElement.matches('[data-cell]')")  # digits still score
    # `→` to output B's column, `e` opens its steps; `E` closes all, `E` opens all.
    page.keyboard.press("ArrowRight")
    page.keyboard.press("e")
    assert wait_until(page, lambda: all(page.evaluate(OPEN_STEPS, "B")))
    page.keyboard.press("E")
    assert wait_until(
        page, lambda: not any(page.evaluate(OPEN_STEPS, "A") + page.evaluate(OPEN_STEPS, "B"))
    )
    page.keyboard.press("E")
    assert wait_until(
        page, lambda: all(page.evaluate(OPEN_STEPS, "A") + page.evaluate(OPEN_STEPS, "B"))
    )
    # `t`: no turns in this task, and the page says so next to the question.
    page.keyboard.press("t")
    assert wait_until(page, lambda: "No turns here" in page.inner_text("#review [data-refused]"))
    # The questions stay beside the outputs (sticky) with the steps open.
    form = page.locator("#review-form").bounding_box()
    output = page.locator("#output-A").bounding_box()
    assert form["x"] > output["x"] + output["width"] - 1
    page.screenshot(path=str(ARTIFACTS / "review-transcript-1280x800.png"))
    # On a phone: stacked, nothing wider than the window.
    page.set_viewport_size({"width": 390, "height": 844})
    assert wait_until(page, lambda: no_sideways_scroll(page))
    page.screenshot(path=str(ARTIFACTS / "review-transcript-390x844.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    # Score: back to the first question, A/B accuracy, A/B completeness, then B is better.
    page.keyboard.press("ArrowLeft")
    for key in ["4", "2", "4", "3", "1"]:
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-finished]")
    review = Review.objects.get(reviewer=reviewer)
    assert sorted(s.value for s in review.scores.all()) == [2, 3, 4, 4]
    assert Assignment.objects.get(reviewer=reviewer).state == "submitted"
    assert page.js_errors == []


def conversation_campaign():
    campaign = CampaignFactory(overlap=1)
    users = conversation_turns("x")[1]
    task = TaskFactory(testset=campaign.testset, prompt="", turns=users)
    item = ReviewItemFactory(campaign=campaign, task=task)
    for tag, output in zip("PQ", item.outputs.order_by("pk"), strict=True):
        turns = conversation_turns(tag)[0]
        if tag == "Q":  # long replies: each box clips and says "More"
            long = "\n\n".join(f"Option {n}: a quiet room near the station." for n in range(40))
            turns[1] = transcript_turn(long, user=turns[1]["user"])
        with_transcript(output.generation, *turns)
    return campaign, users


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_three_turn_conversation_is_shown_side_by_side_turn_by_turn(browser_page, live_server):
    campaign, users = conversation_campaign()
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    reviewer = review_first_item(page, campaign, "conversation_reviewer")
    rows = page.locator("#review [data-turn-row]")
    assert rows.count() == 3
    for n, said in enumerate(users, start=1):
        row = page.locator(f"#turn-{n}")
        assert row.locator(".turn-user").inner_text().count(said) == 1
        assert page.locator("#review").inner_text().count(said) == 1  # shown once
        a = page.locator(f"#output-A-turn-{n}").bounding_box()
        b = page.locator(f"#output-B-turn-{n}").bounding_box()
        assert abs(a["y"] - b["y"]) < 2 and b["x"] > a["x"] + a["width"] - 1  # side by side
        replies = [page.inner_text(f"#output-{x}-turn-{n} .output-body") for x in "AB"]
        assert replies[0] != replies[1] and all(r.strip() for r in replies)
    form = page.locator("#review-form").bounding_box()
    assert form["x"] > page.locator("#turn-1").bounding_box()["x"] + 300  # rubric beside
    # `t` moves from turn to turn (marked, scrolled to), `T` back.
    for key, current in (
        ("t", "turn-1"),
        ("t", "turn-2"),
        ("t", "turn-3"),
        ("t", "turn-3"),
        ("T", "turn-2"),
    ):
        page.keyboard.press(key)
        assert wait_until(
            page,
            lambda c=current: page.evaluate("document.querySelector('.current-turn')?.id") == c,
        )
    assert wait_until(page, lambda: abs(page.locator("#turn-2").bounding_box()["y"]) < 5)
    assert page.evaluate("document.activeElement.matches('[data-cell]')")
    # `m` on turn 2 shows the whole long reply of the current output (B's column).
    page.keyboard.press("ArrowRight")
    clipped = page.locator("#turn-2 .output-body.is-clipped")
    assert clipped.count() == 1
    label = clipped.evaluate("el => el.closest('[data-output-label]').dataset.outputLabel")
    if label == "A":
        page.keyboard.press("ArrowLeft")
    page.keyboard.press("m")
    assert wait_until(page, lambda: page.locator("#turn-2 .output-body.expanded").count() == 1)
    page.keyboard.press("m")
    page.screenshot(path=str(ARTIFACTS / "review-conversation-1280x800.png"))
    # A phone: the replies stacked under the turn, nothing wider than the window.
    page.set_viewport_size({"width": 390, "height": 844})
    a = page.locator("#output-A-turn-1").bounding_box()
    b = page.locator("#output-B-turn-1").bounding_box()
    assert b["y"] >= a["y"] + a["height"] - 1
    assert wait_until(page, lambda: no_sideways_scroll(page))
    page.screenshot(path=str(ARTIFACTS / "review-conversation-390x844.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.keyboard.press("ArrowLeft")
    for key in ["5", "4", "5", "4", "3"]:  # then a tie
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-finished]")
    review = Review.objects.get(reviewer=reviewer)
    assert review.preference == "tie"
    assert page.js_errors == []
