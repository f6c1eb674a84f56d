"""Search a campaign's tasks and outputs by text (leads and admins): full-text on PostgreSQL,
a plain scan elsewhere; both find what a user typed."""

from pathlib import Path

import pytest
from django.db import connection
from django.test import TestCase

from tasks.campaigns.search import campaign_search
from tasks.models import Generation
from tests.conftest import browser_login
from tests.factories import PASSWORD, campaign_ready, personas

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def searchable_campaign():
    campaign = campaign_ready(
        items=3,
        overlap=1,
        outputs=["Refunds take 30 days to arrive.", "Restart the router first."],
    )
    tasks = list(campaign.testset.tasks.order_by("position"))
    tasks[0].prompt = "Where is my refund for order 60331?"
    tasks[0].save(update_fields=["prompt"])
    tasks[1].prompt = ""
    tasks[1].messages = [{"role": "user", "content": "My parcel never arrived in Lisbon."}]
    tasks[1].save(update_fields=["prompt", "messages"])
    return campaign, tasks


class SearchTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign, cls.tasks = searchable_campaign()

    def test_it_finds_tasks_by_prompt_and_by_a_message(self):
        found = campaign_search(campaign=self.campaign, query="refund")
        assert [t["id"] for t in found.tasks] == [self.tasks[0].external_id]
        assert "refund for order 60331" in found.tasks[0]["snippet"]
        found = campaign_search(campaign=self.campaign, query="Lisbon")
        assert [t["id"] for t in found.tasks] == [self.tasks[1].external_id]

    def test_it_finds_outputs_with_their_contender(self):
        found = campaign_search(campaign=self.campaign, query="router")
        contenders = {o["contender"] for o in found.outputs}
        expected = set(
            Generation.objects.filter(
                campaign=self.campaign, output__contains="router"
            ).values_list("contender__name", flat=True)
        )
        assert contenders == expected and len(found.outputs) == 3  # one per task
        assert all("Restart the router" in o["snippet"] for o in found.outputs)

    def test_it_says_which_search_ran_and_finds_nothing_for_other_words(self):
        found = campaign_search(campaign=self.campaign, query="zebra")
        assert found.tasks == [] and found.outputs == []
        assert found.full_text == (connection.vendor == "postgresql")

    def test_the_page_is_for_leads_and_admins(self):
        url = f"/campaigns/{self.campaign.slug}/search/?q=refund"
        self.client.force_login(self.users["lead"])
        html = self.client.get(url).content.decode()
        assert self.tasks[0].external_id in html and "60331" in html
        for persona in ("reviewer_a", "arbiter"):
            self.client.force_login(self.users[persona])
            assert self.client.get(url).status_code == 403


@pytest.mark.postgres
class FullTextTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.campaign, cls.tasks = searchable_campaign()

    def test_it_takes_web_search_syntax(self):
        # Every word, in any order; -word leaves out.
        assert campaign_search(campaign=self.campaign, query="60331 refund").tasks
        assert not campaign_search(campaign=self.campaign, query="refund -60331").tasks
        assert campaign_search(campaign=self.campaign, query='"30 days"').outputs


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_a_lead_searches_a_campaign_as_they_type(browser_page, width):
    personas()
    campaign, tasks = searchable_campaign()
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    browser_login(page, "lead", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/")
    page.get_by_role("link", name="Search").click()
    page.fill("input[name=q]", "Lisbon")
    page.locator(".search-hits a", has_text=tasks[1].external_id).wait_for()
    assert "q=Lisbon" in page.url
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"campaign-search-{width}.png"), full_page=True)
    assert page.js_errors == []
