"""A campaign's instructions: defined with the campaign, edited by admins while it runs, and
shown to reviewers and arbiters (pages and API), masked where they would name a contender."""

import json

import pytest
from django.test import TestCase

from evalsite.models import ApiToken
from reviews.arbitration.services import arbitration_claim_next
from tasks.campaigns.definition import DefinitionError, campaign_create
from tasks.models import Campaign
from tests.factories import CampaignFactory, ContenderFactory, campaign_ready, personas
from tests.reviews.test_arbitration import disputed_item
from tests.tasks.test_campaigns import make_testset

SECRET = "zz-secret-model-9"
TEXT = f"Score **accuracy** first. Ignore style.\n\nDo not reward answers like {SECRET}'s."


def definition(**extra) -> dict:
    return {
        "slug": "with-instructions",
        "testset": "support-v3",
        "contenders": [
            {"name": SECRET, "provider": "imported"},
            {"name": "other-model", "provider": "imported"},
        ],
        "mode": "pairwise",
        **extra,
    }


class DefinitionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        make_testset()

    def test_a_definition_carries_instructions_and_refuses_them_when_they_name_a_contender(self):
        # Reviewers read the instructions: naming a contender there is refused, with the word
        # for the admin who wrote it, and nothing is created.
        with pytest.raises(DefinitionError) as refused:
            campaign_create(definition=definition(instructions=TEXT))
        assert any(
            e.startswith(f"instructions: names a model, a vendor or a redacted term (“{SECRET}”)")
            for e in refused.value.errors
        ), refused.value.errors
        assert not Campaign.objects.exists()
        campaign, warnings = campaign_create(
            definition=definition(slug="plain", instructions="Be strict.")
        )
        assert campaign.instructions == "Be strict."
        assert not any("instructions" in w for w in warnings)

    def test_it_refuses_a_name_or_rubric_that_names_a_model(self):
        rubric = [{"key": "accuracy", "label": "Better than GPT?", "min": 1, "max": 5}]
        with pytest.raises(DefinitionError) as refused:
            campaign_create(
                definition=definition(name=f"{SECRET} bake-off", rubric=rubric, mode="both")
            )
        # tests/tasks/test_campaign_refusals.py has the rest: keys, anchors, categories.
        fields = sorted(e.split(":")[0] for e in refused.value.errors)
        assert fields == ["name", "rubric[0].label"], refused.value.errors

    def test_it_refuses_instructions_that_are_not_text_or_too_long(self):
        for value, message in ((["a"], "must be a string"), ("x" * 20_001, "longer than")):
            try:
                campaign_create(definition=definition(instructions=value))
            except DefinitionError as exc:
                assert any(e.startswith("instructions:") and message in e for e in exc.errors)
            else:
                raise AssertionError("accepted")


class ReviewerSideTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(
            items=2,
            contenders=[ContenderFactory(name=SECRET), ContenderFactory(name="other-model")],
            instructions=TEXT,
        )

    def test_the_start_page_and_the_review_page_show_them_masked(self):
        self.client.force_login(self.users["reviewer_a"])
        start = self.client.get(f"/review/{self.campaign.slug}/").content.decode()
        assert "<strong>accuracy</strong>" in start and "[redacted]" in start
        page = self.client.post(f"/review/{self.campaign.slug}/next", follow=True)
        html = page.content.decode()
        assert "data-instructions" in html and "<strong>accuracy</strong>" in html
        assert SECRET not in start and SECRET not in html

    def test_the_api_sends_them_masked(self):
        token = ApiToken.issue(self.users["reviewer_a"])
        body = self.client.post(
            f"/api/v1/campaigns/{self.campaign.slug}/next",
            headers={"Authorization": f"Bearer {token}"},
        ).json()
        assert body["instructions"].startswith("Score **accuracy** first.")
        assert "[redacted]" in body["instructions"] and SECRET not in json.dumps(body)

    def test_a_campaign_without_instructions_shows_none(self):
        plain = campaign_ready(items=1)
        self.client.force_login(self.users["reviewer_a"])
        html = self.client.post(f"/review/{plain.slug}/next", follow=True).content.decode()
        assert "data-instructions" not in html


class ArbiterSideTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory(
            contenders=[ContenderFactory(name=SECRET), ContenderFactory(name="other-model")],
            instructions=TEXT,
        )
        disputed_item(cls.campaign, cls.users["reviewer_a"], cls.users["reviewer_b"])

    def test_the_arbiter_sees_them_masked_on_the_page_and_in_the_api(self):
        arbitration = arbitration_claim_next(campaign=self.campaign, arbiter=self.users["arbiter"])
        self.client.force_login(self.users["arbiter"])
        html = self.client.get(f"/arbitration/t/{arbitration.token}/").content.decode()
        assert "<strong>accuracy</strong>" in html and SECRET not in html
        token = ApiToken.issue(self.users["arbiter"])
        body = self.client.post(
            f"/api/v1/campaigns/{self.campaign.slug}/arbitration/next",
            headers={"Authorization": f"Bearer {token}"},
        ).json()
        assert "[redacted]" in body["instructions"] and SECRET not in json.dumps(body)


class EditingTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(
            items=1, contenders=[ContenderFactory(name=SECRET), ContenderFactory()]
        )

    def test_an_admin_edits_them_on_the_campaign_page(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get(f"/campaigns/{self.campaign.slug}/").content.decode()
        assert "Save instructions" in page and "None yet" in page
        response = self.client.post(
            f"/campaigns/{self.campaign.slug}/instructions",
            {"instructions": "Prefer *short* answers."},
            headers={"HX-Request": "true"},
        )
        html = response.content.decode()
        assert html.lstrip().startswith('<section class="card instructions" id="instructions"')
        assert "Saved." in html and "<em>short</em>" in html
        self.campaign.refresh_from_db()
        assert self.campaign.instructions == "Prefer *short* answers."
        # Naming a contender is saved, with a warning that reviewers see it masked.
        response = self.client.post(
            f"/campaigns/{self.campaign.slug}/instructions", {"instructions": f"Unlike {SECRET}."}
        )
        assert response.status_code == 302
        follow = self.client.get(response.url).content.decode()
        assert "reviewers and arbiters see [redacted]" in follow

    def test_without_javascript_an_invalid_text_comes_back_in_the_whole_page(self):
        self.client.force_login(self.users["admin"])
        response = self.client.post(
            f"/campaigns/{self.campaign.slug}/instructions", {"instructions": "x" * 20_001}
        )
        html = response.content.decode()
        assert response.status_code == 200 and "<html" in html and "at most 20000" in html
        self.campaign.refresh_from_db()
        assert self.campaign.instructions == ""

    def test_leads_read_them_and_only_admins_change_them(self):
        self.campaign.instructions = "Read the *whole* answer."
        self.campaign.save()
        self.client.force_login(self.users["lead"])
        page = self.client.get(f"/campaigns/{self.campaign.slug}/").content.decode()
        assert "<em>whole</em>" in page and "Save instructions" not in page
        for persona in ("lead", "reviewer_a", "arbiter"):
            self.client.force_login(self.users[persona])
            response = self.client.post(
                f"/campaigns/{self.campaign.slug}/instructions", {"instructions": "x"}
            )
            assert response.status_code == 403
        self.campaign.refresh_from_db()
        assert self.campaign.instructions == "Read the *whole* answer."

    def test_an_admin_sets_them_over_the_api(self):
        url = f"/api/v1/campaigns/{self.campaign.slug}"
        admin = {"Authorization": f"Bearer {ApiToken.issue(self.users['admin'])}"}
        response = self.client.patch(
            url, {"instructions": f"Check {SECRET}"}, "application/json", headers=admin
        )
        assert response.status_code == 200
        body = response.json()
        assert body["instructions"] == f"Check {SECRET}" and "[redacted]" in body["warnings"][0]
        bad = self.client.patch(url, {"name": "x"}, "application/json", headers=admin)
        assert bad.status_code == 400
        lead = {"Authorization": f"Bearer {ApiToken.issue(self.users['lead'])}"}
        assert self.client.get(url, headers=lead).json()["instructions"] == f"Check {SECRET}"
        refused = self.client.patch(url, {"instructions": ""}, "application/json", headers=lead)
        assert refused.status_code == 403
