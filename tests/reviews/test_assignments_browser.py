"""An admin or lead works the assignments page in a real Chromium, keyboard included."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews import review as services
from reviews.models import Assignment, ReviewItem
from tests.conftest import browser_login, wait_until
from tests.factories import PASSWORD, campaign_ready, personas


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_arrow_keys_go_through_the_item_states(browser_page, live_server):
    """The state filter swapped itself away on its first change: the focus fell to the
    table, so the next arrow key scrolled the page instead of picking the next state."""
    personas()
    campaign = campaign_ready(items=3)
    ReviewItem.objects.filter(pk=campaign.items.order_by("pk")[0].pk).update(state="disputed")
    page = browser_page
    browser_login(page, "lead", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/assignments/")
    page.focus("select[name=state]")
    page.keyboard.press("ArrowDown")  # waiting for outputs
    assert wait_until(page, lambda: "state=waiting" in page.url)
    page.keyboard.press("ArrowDown")  # waiting for the judge (campaigns with a review policy)
    assert wait_until(page, lambda: "state=judging" in page.url)
    page.keyboard.press("ArrowDown")  # in review
    assert wait_until(page, lambda: "state=open" in page.url)
    assert wait_until(page, lambda: page.locator("#items tbody tr").count() == 2)
    assert page.evaluate("document.activeElement.name") == "state"
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_releasing_a_lease_in_use_asks_first(browser_page, live_server):
    """A click on "release" took a live lease from a reviewer at work, unasked (their
    answers are then not saved); a lapsed lease is released without a question."""
    users = personas()
    campaign = campaign_ready(items=2, overlap=1)
    live = services.assignment_claim_next(campaign=campaign, reviewer=users["reviewer_a"])
    lapsed = services.assignment_claim_next(campaign=campaign, reviewer=users["reviewer_b"])
    Assignment.objects.filter(pk=lapsed.assignment.pk).update(
        lease_expires_at=timezone.now() - timedelta(minutes=1)
    )
    page = browser_page
    asked = []

    def answer(dialog):
        asked.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", answer)
    browser_login(page, "lead", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/assignments/")
    row = page.locator("#items .row", has_text="reviewer_a")
    row.get_by_role("button", name="release").click()
    assert wait_until(page, lambda: len(asked) == 1)
    assert "reviewer_a" in asked[0] and "not saved" in asked[0]
    page.wait_for_timeout(300)  # declined: nothing is sent
    assert Assignment.objects.get(pk=live.assignment.pk).state == "active"
    page.on("dialog", lambda dialog: dialog.accept())
    page.remove_listener("dialog", answer)
    with page.expect_navigation():
        row.get_by_role("button", name="release").click()
    assert page.get_by_text("Lease released").is_visible()
    assert Assignment.objects.get(pk=live.assignment.pk).state == "released"
    with page.expect_navigation():
        page.locator("#items .row", has_text="reviewer_b").get_by_role("button").click()
    assert Assignment.objects.get(pk=lapsed.assignment.pk).state == "released"
    assert len(asked) == 1
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_actions_are_in_view_and_task_ids_whole(browser_page, live_server):
    """At 390 px the tables scrolled sideways: Remove and release were out of view, and
    the task ids broke at their hyphen ("T-" over "1000")."""
    users = personas()
    campaign = campaign_ready(items=2, overlap=1)
    services.assignment_claim_next(campaign=campaign, reviewer=users["reviewer_a"])
    page = browser_page
    browser_login(page, "admin", PASSWORD)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/campaigns/{campaign.slug}/assignments/")
    # Nothing to scroll sideways, so each row's action is on screen with the row.
    widths = (
        "Array.from(document.querySelectorAll('.table-wrap'), (w) => w.scrollWidth - w.clientWidth)"
    )
    assert page.evaluate(widths) == [0, 0]  # the reviewers and the items
    for button in (
        page.get_by_role("button", name="Remove from campaign"),
        page.locator("#items").get_by_role("button", name="release"),
    ):
        box = button.bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= 390, box
    task_lines = page.locator("#items tbody td:first-child").first.evaluate(
        """el => { const r = document.createRange(); r.selectNodeContents(el);
        return new Set(Array.from(r.getClientRects(), (b) => Math.round(b.top))).size; }"""
    )
    assert task_lines == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.js_errors == []
