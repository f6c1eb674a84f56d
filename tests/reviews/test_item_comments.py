"""The item page says why an item was disputed and what the arbiter set, and carries a
comment thread for leads, admins and the item's arbiter (masked for the arbiter, never shown
to reviewers)."""

import re
from pathlib import Path

import pytest
from django.test import TestCase

from reviews.models import ItemComment
from tasks.models import Campaign
from tests.conftest import browser_login
from tests.factories import PASSWORD, UserFactory, personas
from tests.reviews.test_item_page import resolved_case

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


class ItemPageDisagreementTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign, cls.item, cls.arbitration = resolved_case(cls.users)
        cls.url = f"/campaigns/drill/items/{cls.item.task.external_id}"
        first = cls.item.outputs.order_by("pk").first()
        cls.first_name = first.generation.contender.name

    def test_each_disagreement_names_its_dimension_output_and_both_scores(self):
        self.client.force_login(self.users["lead"])
        page = text_of(self.client.get(self.url).content.decode())
        assert (
            f"Accuracy of {self.first_name}: reviewer_a 5, reviewer_b 2 "
            "(scores 5, 2 differ by 3 (allowed 1))"
        ) in page
        assert "Preference: reviewer_a" in page and "reviewer_b" in page

    def test_it_marks_the_values_the_arbiter_set(self):
        self.client.force_login(self.users["lead"])
        html = self.client.get(self.url).content.decode()
        final = html[html.index('class="final-values"') :]
        final = final[: final.index("</table>")]
        # Both outputs' accuracy (one disputed, one corrected from the agreed 3.5); neither
        # completeness (agreed, kept).
        assert final.count("arbiter-set") == 2
        assert "set by the arbiter" in html
        assert (
            "Preferred: <strong>Tie</strong>" in html or "Preferred: <strong>tie</strong>" in html
        )


class CommentTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign, cls.item, cls.arbitration = resolved_case(cls.users)
        cls.url = f"/campaigns/drill/items/{cls.item.task.external_id}"
        cls.post_url = f"/campaigns/drill/items/{cls.item.pk}/comments"
        contender = cls.item.outputs.first().generation.contender
        cls.contender_name = contender.name

    def test_a_lead_comments_and_the_arbiter_reads_it_masked(self):
        self.client.force_login(self.users["lead"])
        text = f"Is {self.contender_name} right about the refund window?"
        response = self.client.post(self.post_url, {"text": text}, headers={"HX-Request": "true"})
        assert response.status_code == 200
        assert "lead</strong> (lead)" in response.content.decode()
        assert text in self.client.get(self.url).content.decode()

        self.client.force_login(self.users["arbiter"])
        body = self.client.get(f"/arbitration/t/{self.arbitration.token}/item/").content.decode()
        assert "Is [redacted] right about the refund window?" in body
        assert self.contender_name not in body
        assert "a lead" in body and ">lead<" not in body  # by role, not by name

    def test_the_arbiter_answers_from_their_item_page(self):
        self.client.force_login(self.users["arbiter"])
        response = self.client.post(
            f"/arbitration/t/{self.arbitration.token}/comments", {"text": "Agreed.", "back": "item"}
        )
        assert response.status_code == 302
        assert response.url.endswith(f"/arbitration/t/{self.arbitration.token}/item/#arb-comments")
        comment = ItemComment.objects.get()
        assert (comment.author, comment.author_role) == (self.users["arbiter"], "arbiter")
        self.client.force_login(self.users["lead"])
        assert "Agreed." in self.client.get(self.url).content.decode()

    def test_it_refuses_an_empty_comment_and_keeps_nothing(self):
        self.client.force_login(self.users["admin"])
        response = self.client.post(self.post_url, {"text": "  "}, headers={"HX-Request": "true"})
        assert "Write something first." in response.content.decode()
        assert not ItemComment.objects.exists()

    def test_reviewers_and_other_arbiters_cannot_read_or_write(self):
        ItemComment.objects.create(
            item=self.item, author=self.users["lead"], author_role="lead", text="secret note"
        )
        for persona in ("reviewer_a", "reviewer_b"):
            self.client.force_login(self.users[persona])
            assert self.client.post(self.post_url, {"text": "hi"}).status_code == 403
            assert self.client.get(self.url).status_code == 403
            home = self.client.get("/review/").content.decode()
            assert "secret note" not in home
        self.client.force_login(UserFactory(username="arbiter_9", roles=["arbiter"]))
        url = f"/arbitration/t/{self.arbitration.token}/comments"
        assert self.client.post(url, {"text": "x"}).status_code == 404
        assert ItemComment.objects.count() == 1


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_a_lead_comments_on_an_item_and_its_arbiter_answers(browser_page, width):
    users = personas()
    campaign, item, arbitration = resolved_case(users)
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    browser_login(page, "lead", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/items/{item.task.external_id}")
    page.get_by_text("Why it was disputed").wait_for()
    page.fill(f"#item-{item.pk}-comments textarea", "Was the 2 a slip?")
    page.get_by_role("button", name="Comment").click()
    page.locator(".comment-text", has_text="Was the 2 a slip?").wait_for()
    assert page.url.endswith(f"/items/{item.task.external_id}")  # swapped in place (htmx)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"item-comments-lead-{width}.png"), full_page=True)

    page.context.clear_cookies()
    browser_login(page, "arbiter", PASSWORD)
    page.goto(f"/arbitration/t/{arbitration.token}/item/")
    page.locator(".comment-text", has_text="Was the 2 a slip?").wait_for()
    page.fill("#arb-comments textarea", "No: reviewer 2 read the policy wrong.")
    page.get_by_role("button", name="Comment").click()
    page.locator(".comment-text", has_text="reviewer 2 read the policy").wait_for()
    page.screenshot(path=str(ARTIFACTS / f"item-comments-arbiter-{width}.png"), full_page=True)
    assert Campaign.objects.get(pk=campaign.pk).items.get(pk=item.pk).comments.count() == 2
    assert page.js_errors == []


class DisputesBulkTests(TestCase):
    """The disputes list takes a bulk action: the ticked disputes in progress go back to the
    queue under new tokens."""

    @classmethod
    def setUpTestData(cls):
        from reviews.arbitration.services import arbitration_claim_next
        from tests.factories import CampaignFactory
        from tests.reviews.test_arbitration import disputed_item

        cls.users = personas()
        cls.campaign = CampaignFactory(slug="bulk")
        cls.held = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])
        cls.other = disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])
        cls.arbitration = arbitration_claim_next(
            campaign=cls.campaign, arbiter=cls.users["arbiter"]
        )

    def test_a_lead_hands_a_held_dispute_back_to_the_queue(self):
        from reviews.models import Arbitration

        held = self.arbitration
        old_token = held.token
        self.client.force_login(self.users["lead"])
        html = self.client.get("/campaigns/bulk/disputes/").content.decode()
        assert f'name="ids" value="{held.item_id}" form="bulk-requeue"' in html
        response = self.client.post("/campaigns/bulk/disputes/requeue", {"ids": [held.item_id]})
        assert response.status_code == 302
        held.refresh_from_db()
        assert held.state == Arbitration.State.OPEN and held.arbiter is None
        assert held.token != old_token
        # The arbiter's old page has nothing left to save.
        self.client.force_login(self.users["arbiter"])
        assert self.client.get(f"/arbitration/t/{old_token}/").status_code == 404

    def test_reviewers_and_arbiters_may_not(self):
        for persona in ("reviewer_a", "arbiter"):
            self.client.force_login(self.users[persona])
            url = "/campaigns/bulk/disputes/requeue"
            assert self.client.post(url, {"ids": [self.arbitration.item_id]}).status_code == 403
