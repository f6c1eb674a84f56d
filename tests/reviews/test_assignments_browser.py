"""An admin or lead works the assignments page in a real Chromium, keyboard included."""

import pytest

from reviews.models import ReviewItem
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
    page.keyboard.press("ArrowDown")  # in review
    assert wait_until(page, lambda: "state=open" in page.url)
    assert wait_until(page, lambda: page.locator("#items tbody tr").count() == 2)
    assert page.evaluate("document.activeElement.name") == "state"
    assert page.js_errors == []
