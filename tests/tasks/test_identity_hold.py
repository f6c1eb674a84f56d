"""Flag and hold: an output that names a model is flagged with what was found and
why when it is stored, and its items stay out of reviewers' queues until an admin approves the
masked view (campaign setting hold_identity_leaks, on by default)."""

import json

from django.test import TestCase, override_settings
from django.urls import reverse

from evalsite.models import ApiToken
from reviews.models import Assignment, ReviewItem
from tasks.campaigns.definition import DefinitionError, campaign_create
from tasks.generation.outputs_import import outputs_import
from tasks.generation.run import generation_run
from tasks.models import Generation
from tests.factories import TaskFactory, TestSetFactory, personas
from tests.fake_llm import FakeLLM

LEAK = "As an AI developed by OpenAI, I suggest restarting the router."
CLEAN = "Restart the router, then call support."


def imported_campaign(slug: str, **settings) -> object:
    ts = TestSetFactory(name=f"ts-{slug}", frozen=False, task_count=1)
    TaskFactory(testset=ts, position=0, external_id="T-1")
    campaign, _ = campaign_create(
        definition={
            "slug": slug,
            "testset": ts.name,
            "mode": "both",
            "overlap": 1,
            "rubric": [{"key": "accuracy"}],
            "contenders": [
                {"name": "vendor-a", "provider": "imported"},
                {"name": "vendor-b", "provider": "imported"},
            ],
            **settings,
        }
    )
    for name, text in (("vendor-a", LEAK), ("vendor-b", CLEAN)):
        line = json.dumps({"task_id": "T-1", "sample": 0, "output": text})
        outputs_import(campaign=campaign, contender_name=name, raw=line.encode())
    return campaign


class HoldTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = imported_campaign("held")
        cls.leaky = Generation.objects.get(campaign=cls.campaign, contender__name="vendor-a")
        cls.tokens = {
            who: ApiToken.issue(cls.users[who]) for who in ("admin", "lead", "reviewer_a")
        }

    def api(self, who: str, path: str):
        return self.client.post(path, HTTP_AUTHORIZATION=f"Bearer {self.tokens[who]}")

    def approve_url(self) -> str:
        return reverse("campaign_output_approve", args=[self.campaign.slug, self.leaky.pk])

    def claim_in_browser(self) -> bool:
        self.client.force_login(self.users["reviewer_a"])
        self.client.post(reverse("review_next", args=[self.campaign.slug]))
        return Assignment.objects.filter(reviewer=self.users["reviewer_a"]).exists()

    def test_it_stores_findings_and_holds_the_output_at_import(self):
        assert self.leaky.identity_leak and self.leaky.identity_held
        assert {"text": "OpenAI", "reason": "model or vendor name"} in [
            {k: f[k] for k in ("text", "reason")} for f in self.leaky.identity_findings
        ]
        f = self.leaky.identity_findings[0]
        assert LEAK[f["start"] : f["end"]] == f["text"]
        clean = Generation.objects.get(campaign=self.campaign, contender__name="vendor-b")
        assert not clean.identity_leak and clean.identity_findings == [] and not clean.identity_held

    def test_a_held_item_is_not_claimable_until_an_admin_approves_it(self):
        item = ReviewItem.objects.get(campaign=self.campaign)
        assert not item.ready and item.state == "waiting"
        assert not self.claim_in_browser()
        api_next = f"/api/v1/campaigns/{self.campaign.slug}/next"
        assert self.api("reviewer_a", api_next).status_code == 204

        self.client.force_login(self.users["admin"])
        response = self.client.post(self.approve_url())
        assert response.status_code == 302
        self.leaky.refresh_from_db()
        assert not self.leaky.identity_held
        assert self.leaky.identity_approved_by == self.users["admin"]
        assert self.leaky.identity_approved_at is not None
        item.refresh_from_db()
        assert item.ready and item.state == "open"
        answer = self.api("reviewer_a", api_next)
        assert answer.status_code == 200
        texts = [c["text"] for c in answer.json()["candidates"]]
        assert "OpenAI" not in json.dumps(texts) and any("[redacted]" in t for t in texts)

    def test_the_ui_claim_gets_the_item_once_approved(self):
        assert not self.claim_in_browser()
        self.client.force_login(self.users["admin"])
        self.client.post(self.approve_url(), HTTP_HX_REQUEST="true")
        assert self.claim_in_browser()

    def test_approving_with_htmx_swaps_the_decision_in_place(self):
        self.client.force_login(self.users["admin"])
        response = self.client.post(self.approve_url(), HTTP_HX_REQUEST="true")
        body = response.content.decode()
        assert response.status_code == 200 and 'id="identity-decision"' in body
        assert "1 review item opened" in body and "<html" not in body
        again = self.client.post(self.approve_url(), HTTP_HX_REQUEST="true").content.decode()
        assert "not waiting for approval" in again and "Masked view approved by admin" in again

    def test_the_approval_page_shows_the_original_marked_and_the_masked_view(self):
        self.client.force_login(self.users["admin"])
        url = reverse("campaign_output_identity", args=[self.campaign.slug, self.leaky.pk])
        body = self.client.get(url).content.decode()
        assert '<mark title="model or vendor name">OpenAI</mark>' in body
        assert "As reviewers see it" in body and "[redacted]" in body
        assert "Approve masked view" in body and "csrfmiddlewaretoken" in body
        # the masked side is exactly what the review pages render
        from tasks.blinding import render as blinding
        from tasks.blinding.campaign_texts import campaign_identity_terms

        _, html, _ = blinding.render_output(LEAK, campaign_identity_terms(self.campaign))
        assert str(html) in body

    def test_the_outputs_page_lists_held_outputs_with_what_was_found(self):
        self.client.force_login(self.users["lead"])
        url = reverse("campaign_outputs", args=[self.campaign.slug]) + "?only=held"
        body = self.client.get(url).content.decode()
        assert "1 output." in body and "· vendor-a ·" in body and "· vendor-b ·" not in body
        assert "<mark>OpenAI</mark> (model or vendor name)" in body
        detail = self.client.get(reverse("campaign_detail", args=[self.campaign.slug]))
        assert "1 output names a model or vendor and is held" in detail.content.decode()

    def test_leads_read_but_only_admins_approve(self):
        page = reverse("campaign_output_identity", args=[self.campaign.slug, self.leaky.pk])
        self.client.force_login(self.users["lead"])
        body = self.client.get(page).content.decode()
        assert "[redacted]" in body and "Approve masked view" not in body
        assert self.client.post(self.approve_url()).status_code == 403
        for who in ("reviewer_a", "arbiter"):
            self.client.force_login(self.users[who])
            assert self.client.get(page).status_code == 403
            assert self.client.post(self.approve_url()).status_code == 403
        self.leaky.refresh_from_db()
        assert self.leaky.identity_held

    def test_the_api_lists_held_outputs_for_admins_and_leads(self):
        url = f"/api/v1/campaigns/{self.campaign.slug}/held-outputs"
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens['lead']}"}
        (held,) = self.client.get(url, **auth).json()["outputs"]
        assert held["id"] == self.leaky.pk and held["contender"] == "vendor-a"
        assert held["task_id"] == "T-1" and held["sample"] == 0
        assert {"text": "OpenAI", "reason": "model or vendor name"} in held["findings"]
        assert "OpenAI" not in held["masked"] and "[redacted]" in held["masked"]
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens['reviewer_a']}"}
        assert self.client.get(url, **auth).status_code == 403

    def test_the_api_approves_for_admins_only(self):
        url = f"/api/v1/campaigns/{self.campaign.slug}/outputs/{self.leaky.pk}/approve-identity"
        assert self.api("lead", url).status_code == 403
        assert self.api("reviewer_a", url).status_code == 403
        clean = Generation.objects.get(campaign=self.campaign, contender__name="vendor-b")
        other = f"/api/v1/campaigns/{self.campaign.slug}/outputs/{clean.pk}/approve-identity"
        assert self.api("admin", other).status_code == 404
        response = self.api("admin", url)
        assert response.status_code == 200
        assert response.json()["approved_by"] == "admin" and response.json()["items_opened"] == 1
        assert self.api("admin", url).status_code == 409
        assert (
            self.api("reviewer_a", f"/api/v1/campaigns/{self.campaign.slug}/next").status_code
            == 200
        )

    def test_the_schema_documents_the_setting_and_the_endpoint(self):
        schema = self.client.get("/api/v1/schema").json()
        path = "/api/v1/campaigns/{slug}/outputs/{output_id}/approve-identity"
        assert "post" in schema["paths"][path]
        body = schema["paths"]["/api/v1/campaigns"]["post"]["requestBody"]
        props = body["content"]["application/json"]["schema"]["properties"]
        assert props["hold_identity_leaks"]["type"] == "boolean"


class SettingTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_without_hold_a_flagged_item_is_offered_masked_at_once(self):
        campaign = imported_campaign("unheld", hold_identity_leaks=False)
        leaky = Generation.objects.get(campaign=campaign, contender__name="vendor-a")
        assert leaky.identity_leak and leaky.identity_findings and not leaky.identity_held
        assert ReviewItem.objects.get(campaign=campaign).ready
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(reverse("review_next", args=[campaign.slug]))
        page = self.client.get(response.url).content.decode()
        assert "[redacted]" in page and "OpenAI" not in page

    def test_the_definition_defaults_to_holding_and_refuses_a_non_boolean(self):
        ts = TestSetFactory(name="ts-def", frozen=False, task_count=1)
        TaskFactory(testset=ts, position=0, external_id="T-1")
        base = {
            "slug": "def",
            "testset": ts.name,
            "rubric": [{"key": "accuracy"}],
            "contenders": [{"name": "x", "provider": "imported"}],
        }
        campaign, _ = campaign_create(definition=base)
        assert campaign.hold_identity_leaks is True
        try:
            campaign_create(definition={**base, "slug": "def2", "hold_identity_leaks": None})
        except DefinitionError as exc:
            assert "hold_identity_leaks: must be true or false" in exc.errors
        else:
            raise AssertionError("a null was taken")

    def test_the_campaign_form_starts_with_hold_checked(self):
        self.client.force_login(self.users["admin"])
        body = self.client.get(reverse("campaign_new")).content.decode()
        assert 'id="id_hold_identity_leaks" checked' in body


@override_settings(GENERATION_READ_TIMEOUT=2)
class GenerationFindingsTests(TestCase):
    def test_a_generated_output_naming_its_model_is_stored_flagged_and_held(self):
        ts = TestSetFactory(name="ts-gen", frozen=False, task_count=1)
        TaskFactory(testset=ts, position=0, external_id="T-1", prompt="Who are you?")
        with FakeLLM() as fake:
            campaign, _ = campaign_create(
                definition={
                    "slug": "gen",
                    "testset": ts.name,
                    "rubric": [{"key": "accuracy"}],
                    "contenders": [
                        # the fake answers "<model> answers: <prompt>": it names its model id
                        {
                            "name": "acme",
                            "provider": "openai",
                            "model": "zephyr-large-7",
                            "base_url": fake.base_url,
                        },
                        {"name": "other", "provider": "imported"},
                    ],
                }
            )
            row = Generation.objects.get(campaign=campaign, contender__name="acme")
            assert generation_run(generation_id=row.pk).action == "done"
        row.refresh_from_db()
        assert row.output.startswith("zephyr-large-7 answers")
        assert row.identity_leak and row.identity_held
        assert [f["text"] for f in row.identity_findings] == ["zephyr-large-7"]
        assert "model id" in row.identity_findings[0]["reason"]
        outputs_import(
            campaign=campaign,
            contender_name="other",
            raw=json.dumps({"task_id": "T-1", "sample": 0, "output": CLEAN}).encode(),
        )
        # every output is there, but one is held: the item waits for an admin
        assert not ReviewItem.objects.get(campaign=campaign).ready
