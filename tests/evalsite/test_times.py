"""Times are shown in the reader's own zone, with the zone's name: the server writes each as a
<time> in UTC (saying "UTC", for a page without JavaScript) and static/js/times.js rewrites it
to the browser's local time, on load and after every htmx swap."""

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils import timezone

from reviews import review as services
from tasks.models import Campaign
from tests.conftest import browser_login, wait_until
from tests.factories import PASSWORD, CampaignFactory, campaign_ready, personas

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def render(value, kind: str = "") -> str:
    arg = f':"{kind}"' if kind else ""
    return Template("{% load times %}{{ value|when" + arg + " }}").render(Context({"value": value}))


def test_a_time_is_written_in_utc_saying_so_for_the_script_to_localise():
    moment = datetime(2026, 3, 2, 14, 5, 33, tzinfo=UTC)
    assert render(moment) == (
        '<time datetime="2026-03-02T14:05:33+00:00" data-when="datetime">2026-03-02 14:05 UTC</time>'
    )
    assert render(moment, "time").endswith('data-when="time">14:05 UTC</time>')
    ago = render(timezone.now() - timedelta(minutes=3), "ago")
    assert 'data-when="ago"' in ago and ">3\xa0minutes ago</time>" in ago
    assert render(None) == ""


def test_no_template_shows_a_time_without_its_zone():
    """Every date-and-time goes through `when` (a bare `|date:"... H:i"`, `|time` or
    `|timesince` shows UTC without saying so, or a time the script cannot localise)."""
    bare = re.compile(r'\|date:"[^"]*H:i[^"]*"|\|time:|\|timesince|\|naturaltime')
    found = [
        f"{path.relative_to(TEMPLATES)}:{n}"
        for path in TEMPLATES.rglob("*.html")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if bare.search(line) and "data-when" not in line
    ]
    assert found == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_browser_shows_times_in_its_own_zone_also_after_a_swap(browser_page, live_server):
    users = personas()
    CampaignFactory(name="Zoned", slug="zoned")
    Campaign.objects.filter(slug="zoned").update(created_at=datetime(2026, 3, 2, 14, 5, tzinfo=UTC))
    reviewing = campaign_ready(items=2, overlap=1)
    held = services.assignment_claim_next(campaign=reviewing, reviewer=users["reviewer_a"])
    context = browser_page.context.browser.new_context(
        base_url=live_server.url, timezone_id="Asia/Tokyo", locale="en-US"
    )
    page = context.new_page()
    page.set_default_timeout(15000)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    browser_login(page, "lead", PASSWORD)
    page.goto("/campaigns/")
    row = page.locator("tr", has_text="Zoned").locator("time")
    assert wait_until(page, lambda: row.inner_text() == "2026-03-02 23:05 GMT+9"), row.inner_text()
    assert row.get_attribute("title") == "2026-03-02 14:05 UTC"
    # A region htmx swaps in (the assignments page's item filter) is shown in the zone too.
    page.goto(f"/campaigns/{reviewing.slug}/assignments/")
    until = held.assignment.lease_expires_at.astimezone(UTC) + timedelta(hours=9)
    expected = f"{until:%H:%M} GMT+9"
    lease = page.locator("#items time[data-when=time]").first
    assert wait_until(page, lambda: lease.inner_text() == expected), lease.inner_text()
    page.select_option("select[name=state]", "open")
    assert wait_until(page, lambda: "state=open" in page.url)
    lease = page.locator("#items time[data-when=time]").first
    assert wait_until(page, lambda: lease.inner_text() == expected), lease.inner_text()
    assert errors == []
    context.close()
