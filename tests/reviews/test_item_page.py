"""The item page: a lead drills into one task; its arbiter sees it blinded."""

from pathlib import Path

import pytest
from django.test import TestCase

from reviews.arbitration.services import arbitration_claim_next, arbitration_resolve
from reviews.models import Arbitration
from reviews.rubric import label_map
from tasks.models import Generation
from tests.conftest import browser_login
from tests.factories import PASSWORD, CampaignFactory, ContenderFactory, personas
from tests.reviews.test_arbitration import disputed_item

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def resolved_case(users):
    contenders = [ContenderFactory(name="alpha-model"), ContenderFactory(name="beta-model")]
    campaign = CampaignFactory(slug="drill", name="Drill", contenders=contenders)
    item = disputed_item(campaign, users["reviewer_a"], users["reviewer_b"])
    Generation.objects.filter(campaign=campaign).update(
        check_results={"must_include": {"passed": False, "detail": "missing 'refund'"}},
        checks_passed=False,
    )
    arbitration = arbitration_claim_next(campaign=campaign, arbiter=users["arbiter"])
    label = next(iter(label_map(arbitration.order)))
    arbitration_resolve(
        token=arbitration.token,
        arbiter=users["arbiter"],
        scores={
            label: {"accuracy": 4},
            **{other: {"accuracy": 3} for other in "AB" if other != label},
        },
        preference="tie",
        note="Both miss the refund policy.",
    )
    return campaign, item, Arbitration.objects.get(item=item)


class ItemPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign, cls.item, cls.arbitration = resolved_case(cls.users)
        cls.url = f"/campaigns/drill/items/{cls.item.task.external_id}"

    def test_it_shows_a_lead_everything_about_the_item(self):
        self.client.force_login(self.users["lead"])
        body = self.client.get(self.url).content.decode()
        for text in (
            self.item.task.prompt,
            "alpha-model",
            "beta-model",
            "reviewer_a",
            "reviewer_b",
            "Both miss the refund policy.",
            "Final values",
            "must_include",
            "missing &#x27;refund&#x27;",
            "arbiter",
        ):
            assert text in body, text

    def test_it_rejects_reviewers_and_unknown_tasks(self):
        self.client.force_login(self.users["reviewer_a"])
        assert self.client.get(self.url).status_code == 403
        self.client.force_login(self.users["admin"])
        assert self.client.get(self.url).status_code == 200
        assert self.client.get("/campaigns/drill/items/NOPE-1").status_code == 404

    def test_it_shows_the_arbiter_their_item_blinded(self):
        self.client.force_login(self.users["arbiter"])
        home = self.client.get("/arbitration/").content.decode()
        url = f"/arbitration/t/{self.arbitration.token}/item/"
        assert url in home
        body = self.client.get(url).content.decode()
        assert "Both miss the refund policy." in body and "Reviewer 1" in body
        assert "must_include" in body
        for hidden in ("alpha-model", "beta-model", "reviewer_a", "reviewer_b", "model-id-"):
            assert hidden not in body, hidden

    def test_it_gives_another_arbiter_a_404(self):
        from tests.factories import UserFactory

        self.client.force_login(UserFactory(username="arbiter_9", roles=["arbiter"]))
        assert self.client.get(f"/arbitration/t/{self.arbitration.token}/item/").status_code == 404


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_lead_drills_into_an_item_from_three_tables(browser_page, live_server):
    users = personas()
    campaign, item, _ = resolved_case(users)
    task_id = item.task.external_id
    page = browser_page
    browser_login(page, "lead", PASSWORD)
    for start, table in (
        (f"/campaigns/{campaign.slug}/disputes/", "table"),
        (f"/campaigns/{campaign.slug}/assignments/", "#items"),
        (f"/campaigns/{campaign.slug}/", "#automatic-checks"),
        (f"/campaigns/{campaign.slug}/generations/", "main"),
    ):
        page.goto(start)
        with page.expect_navigation():
            page.locator(table).get_by_role("link", name=task_id).first.click()
        assert f"/items/{task_id}" in page.url
        assert page.get_by_text("Both miss the refund policy.").is_visible()
        assert page.get_by_text("alpha-model").first.is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    for w, h in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": w, "height": h})
        page.screenshot(path=str(ARTIFACTS / f"item-lead-{w}x{h}.png"), full_page=True)
    assert page.js_errors == []
