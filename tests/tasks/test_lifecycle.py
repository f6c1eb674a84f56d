"""Campaign lifecycle: the stage read from the data, its progress, blockers and
the primary action, through a whole campaign in Chromium."""

from pathlib import Path

import pytest
from django.test import TestCase

from reviews.arbitration.services import arbitration_claim_next, arbitration_resolve
from reviews.disputes.rules import item_settle
from reviews.models import ReviewItem
from tasks.campaigns.lifecycle import campaign_lifecycle
from tasks.models import Campaign
from tests.conftest import browser_login, wait_until
from tests.factories import (
    PASSWORD,
    CampaignFactory,
    ContenderFactory,
    ReviewItemFactory,
    personas,
    review_create,
)
from tests.reviews.test_arbitration import disputed_item

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def agreed_item(campaign, first, second):
    item = ReviewItemFactory(campaign=campaign)
    for reviewer in (first, second):
        review_create(
            item,
            reviewer,
            scores={o: {"accuracy": 4, "completeness": 4} for o in item.outputs.all()},
            preference="tie",
        )
    ReviewItem.objects.filter(pk=item.pk).update(submitted_count=2)
    item_settle(item)
    return item


def reviewed(item):
    ReviewItem.objects.filter(pk=item.pk).update(submitted_count=2)


class LifecycleTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_it_is_draft_until_outputs_exist_and_warns_of_an_imported_contender(self):
        imported = ContenderFactory(name="offline", provider="imported", base_url="", model="")
        campaign = CampaignFactory(status="draft", contenders=[ContenderFactory(), imported])
        state = campaign_lifecycle(campaign)
        assert state["stage"] == "draft"
        assert any(
            "offline is an imported contender without outputs" in b for b in state["blockers"]
        )

    def test_it_says_zero_items_ready(self):
        campaign = CampaignFactory(status="reviewing")
        ReviewItemFactory(campaign=campaign, ready=False, state="waiting")
        state = campaign_lifecycle(campaign)
        assert state["stage"] == "reviewing"
        assert any(b.startswith("0 items ready") for b in state["blockers"])

    def test_it_goes_reviewing_arbitrating_complete(self):
        u = self.users
        campaign = CampaignFactory(status="reviewing")
        agreed_item(campaign, u["reviewer_a"], u["reviewer_b"])
        disputed = disputed_item(campaign, u["reviewer_a"], u["reviewer_b"])
        assert campaign_lifecycle(campaign)["stage"] == "reviewing"
        reviewed(disputed)
        state = campaign_lifecycle(campaign)
        assert state["stage"] == "arbitrating"
        assert state["review"] == {"done": 2, "total": 2, "pct": 100}
        assert state["arbitration"] == {"done": 0, "total": 1, "pct": 0}
        arbitration = arbitration_claim_next(campaign=campaign, arbiter=u["arbiter"])
        arbitration_resolve(
            token=arbitration.token,
            arbiter=u["arbiter"],
            scores={"A": {"accuracy": 4}, "B": {"accuracy": 4}},
            preference="tie",
            note="ok",
        )
        assert campaign_lifecycle(campaign)["stage"] == "complete"

    def test_only_an_admin_closes_and_reopens(self):
        campaign = CampaignFactory(status="reviewing", slug="to-close")
        self.client.force_login(self.users["lead"])
        assert self.client.post("/campaigns/to-close/close").status_code == 403
        self.client.force_login(self.users["admin"])
        assert self.client.post("/campaigns/to-close/close").status_code == 302
        campaign.refresh_from_db()
        assert campaign.status == "closed" and campaign_lifecycle(campaign)["stage"] == "closed"
        self.client.post("/campaigns/to-close/reopen")
        campaign.refresh_from_db()
        assert campaign.status == "reviewing"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_stages_of_a_whole_campaign(browser_page, live_server):
    u = personas()
    imported = ContenderFactory(name="offline", provider="imported", base_url="", model="")
    live = ContenderFactory(name="live-model")
    campaign = CampaignFactory(
        slug="whole", name="Whole", status="draft", contenders=[live, imported]
    )
    page = browser_page
    browser_login(page, "admin", PASSWORD)
    ARTIFACTS.mkdir(exist_ok=True)

    def stage_shot(expected: str, primary: str | None):
        page.goto("/campaigns/whole/")
        assert page.inner_text("#campaign-status") == expected
        assert page.locator(".stages li.current").inner_text() == expected
        primaries = page.locator(".campaign-actions .primary")
        if primary is None:
            assert primaries.count() == 0
        else:
            assert primaries.count() == 1 and primaries.inner_text() == primary
        page.screenshot(path=str(ARTIFACTS / f"campaign-{expected.lower()}-1280x800.png"))

    stage_shot("Draft", "Generate")
    assert page.get_by_text("offline is an imported contender without outputs").is_visible()
    # Nothing queued, running or failed: no Cancel, no Retry failed on a draft.
    assert page.get_by_role("button", name="Cancel").count() == 0
    assert page.get_by_role("button", name="Retry failed").count() == 0

    agreed_item(campaign, u["reviewer_a"], u["reviewer_b"])
    disputed = disputed_item(campaign, u["reviewer_a"], u["reviewer_b"])
    ReviewItem.objects.filter(pk=disputed.pk).update(submitted_count=1)
    Campaign.objects.filter(pk=campaign.pk).update(status="reviewing")
    stage_shot("Reviewing", "Follow the review")
    assert "1 of 2 items" in page.inner_text("#lifecycle-progress")
    # Every output is in and nothing is left to queue: Generate would do nothing, so it is gone.
    assert page.get_by_role("button", name="Generate").count() == 0

    reviewed(disputed)
    stage_shot("Arbitrating", "Follow the disputes")
    assert "0 of 1 disputes" in page.inner_text("#lifecycle-progress")
    page.goto("/campaigns/")
    row = page.locator("tr", has_text="Whole")
    assert "Arbitrating" in row.inner_text() and "2/2" in row.inner_text()

    arbitration = arbitration_claim_next(campaign=campaign, arbiter=u["arbiter"])
    arbitration_resolve(
        token=arbitration.token,
        arbiter=u["arbiter"],
        scores={"A": {"accuracy": 4}, "B": {"accuracy": 4}},
        preference="tie",
        note="ok",
    )
    stage_shot("Complete", "Open the dashboards")
    assert page.get_by_role("button", name="Generate").count() == 0
    page.get_by_role("button", name="Close campaign").click()
    assert wait_until(page, lambda: page.inner_text("#campaign-status") == "Closed", 5)
    assert page.get_by_role("button", name="Reopen").is_visible()
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "campaign-closed-390x844.png"), full_page=True)
    page.goto("/campaigns/")
    page.screenshot(path=str(ARTIFACTS / "campaign-list-390x844.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.screenshot(path=str(ARTIFACTS / "campaign-list-1280x800.png"), full_page=True)
    assert page.js_errors == []
