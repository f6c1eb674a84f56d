"""Rosters in a real Chromium: an admin names the campaign's reviewers and arbiters on its page,
and a reviewer or arbiter left off sees nothing of it: no campaign in their list, and the 404
of a campaign that does not exist on its review page and from the API."""

import pytest

from evalsite.models import ApiToken
from tests.conftest import browser_login, wait_until
from tests.factories import PASSWORD, UserFactory, campaign_ready, personas
from tests.reviews.test_arbitration import disputed_item


def _as(page, live_server, username: str):
    """A new browser session logged in as `username`."""
    context = page.context.browser.new_context(base_url=live_server.url)
    other = context.new_page()
    other.set_default_timeout(15000)
    browser_login(other, username, PASSWORD)
    return other


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_people_off_the_roster_see_nothing_of_the_campaign(browser_page, live_server):
    users = personas()
    UserFactory(username="arbiter_b", roles=["arbiter"])
    campaign = campaign_ready(items=2, name="Rostered support")
    disputed_item(campaign, UserFactory(roles=["reviewer"]), UserFactory(roles=["reviewer"]))
    page = browser_page
    browser_login(page, "admin", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/")
    section = page.locator("#rosters")
    assert "all: everyone with the reviewer role" in section.inner_text()
    section.get_by_label("All reviewers").uncheck()
    section.get_by_label("reviewer_a").check()
    section.get_by_label("All arbiters").uncheck()
    section.get_by_label("arbiter_b").check()
    section.get_by_role("button", name="Save rosters").click()
    assert wait_until(page, lambda: "Rosters saved." in page.locator("#rosters").inner_text())
    assert page.locator('[data-roster="reviewers"]').inner_text() == "reviewer_a"
    assert page.locator('[data-roster="arbiters"]').inner_text() == "arbiter_b"
    assert page.js_errors == []

    missing = "/review/no-such-campaign/"
    for name, home, entry in (
        ("reviewer_b", "/review/", f"/review/{campaign.slug}/"),
        ("arbiter", "/arbitration/", None),
    ):
        other = _as(page, live_server, name)
        other.goto(home)
        assert "Rostered support" not in other.locator("main").inner_text(), name
        if entry:
            response = other.goto(entry)
            assert response.status == 404
            shown = other.locator("main").inner_text()
            assert other.goto(missing).status == 404
            assert other.locator("main").inner_text() == shown
        other.context.close()
    fresh = page.context.browser.new_context(base_url=live_server.url)  # no session cookie
    api = fresh.request
    for name, path in (
        ("reviewer_b", "next"),
        ("arbiter", "arbitration/next"),
    ):
        headers = {"Authorization": f"Bearer {ApiToken.issue(users[name])}"}
        off = api.post(f"/api/v1/campaigns/{campaign.slug}/{path}", headers=headers)
        none = api.post(f"/api/v1/campaigns/no-such-campaign/{path}", headers=headers)
        assert off.status == none.status == 404, name
        assert off.json() == none.json(), name
    fresh.close()
    # The people on the rosters see it and take its work.
    reviewer = _as(page, live_server, "reviewer_a")
    reviewer.goto("/review/")
    assert "Rostered support" in reviewer.locator("main").inner_text()
    reviewer.context.close()
    arbiter = _as(page, live_server, "arbiter_b")
    arbiter.goto("/arbitration/")
    assert "Rostered support" in arbiter.locator("main").inner_text()
    arbiter.context.close()
