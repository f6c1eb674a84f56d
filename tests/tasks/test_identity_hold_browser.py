"""Flag and hold in a real Chromium: an admin approves a held output with one click (htmx,
under the strict CSP) and a reviewer then gets its item, masked."""

import pytest

from tasks.models import Generation
from tests.conftest import browser_login
from tests.factories import PASSWORD, personas
from tests.tasks.test_identity_hold import imported_campaign


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_approves_a_held_output_in_one_click_and_a_reviewer_gets_the_item(
    browser_page, live_server
):
    personas()
    campaign = imported_campaign("held-live")
    page = browser_page

    browser_login(page, "admin", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/")
    page.get_by_text("1 output names a model or vendor and is held").wait_for()
    page.get_by_role("link", name="review and approve").click()
    # The held outputs page: each reason in the masked view, a link to the output's own page.
    page.get_by_role("heading", name=f"Held outputs · {campaign.name}").wait_for()
    assert page.locator("pre.identity-masked mark.masked").first.inner_text() == "[redacted]"
    page.get_by_role("link", name="T-1 · vendor-a · sample 0").click()
    page.get_by_role("heading", name="As reviewers see it").wait_for()
    assert page.locator("pre.identity-original mark").first.inner_text() == "OpenAI"
    assert "OpenAI" not in page.inner_text(".identity-masked")
    url = page.url
    page.get_by_role("button", name="Approve masked view").click()
    page.get_by_text("1 review item opened for review").wait_for()
    assert page.url == url  # swapped in place by htmx, no navigation
    assert page.get_by_role("button", name="Approve masked view").count() == 0
    held = Generation.objects.get(campaign=campaign, contender__name="vendor-a")
    assert not held.identity_held and held.identity_approved_by.username == "admin"
    assert page.js_errors == []

    context = page.context.browser.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 800}
    )
    reviewer = context.new_page()
    reviewer.set_default_timeout(15000)
    browser_login(reviewer, "reviewer_a", PASSWORD)
    reviewer.goto(f"/review/{campaign.slug}/")
    reviewer.get_by_role("button", name="Start reviewing").click()
    reviewer.wait_for_selector("#review-form")
    text = reviewer.inner_text("body")
    assert "[redacted]" in text and "OpenAI" not in text
    context.close()
