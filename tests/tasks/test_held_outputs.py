"""Held outputs in bulk: only outputs reviewers will be shown are held, the API lists them with
their reasons and approves them in bulk (or one with spans masked by hand), and the admin page
shows each reason in the masked view with bulk approve and a hand mask."""

import json

from django.test import TestCase
from django.urls import reverse

from evalsite.models import ApiToken
from reviews.models import ReviewItem
from tasks.campaigns.definition import campaign_create
from tasks.generation.outputs_import import outputs_import
from tasks.models import Generation
from tests.factories import TaskFactory, TestSetFactory, personas

# "Orchid Pilot" is a name the masking does not know: an admin masks it by hand.
LEAK = "Orchid Pilot here. As an AI developed by OpenAI, I suggest restarting the router."
CLEAN = "Restart the router, then call support."


def campaign_with_outputs(slug: str, *, tasks: int = 2) -> object:
    """Two tasks, two samples of which reviewers see one; vendor-a leaks in every sample."""
    ts = TestSetFactory(name=f"ts-{slug}", frozen=False, task_count=tasks)
    for i in range(tasks):
        TaskFactory(testset=ts, position=i, external_id=f"T-{i}")
    campaign, _ = campaign_create(
        definition={
            "slug": slug,
            "testset": ts.name,
            "mode": "both",
            "overlap": 1,
            "samples_per_task": 2,
            "reviewed_samples": 1,
            "rubric": [{"key": "accuracy"}],
            "contenders": [
                {"name": "vendor-a", "provider": "imported"},
                {"name": "vendor-b", "provider": "imported"},
            ],
        }
    )
    for name, text in (("vendor-a", LEAK), ("vendor-b", CLEAN)):
        lines = [
            json.dumps({"task_id": f"T-{i}", "sample": s, "output": text})
            for i in range(tasks)
            for s in (0, 1)
        ]
        outputs_import(campaign=campaign, contender_name=name, raw="\n".join(lines).encode())
    return campaign


class HeldOutputsTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_with_outputs("bulk")
        cls.tokens = {who: ApiToken.issue(u) for who, u in cls.users.items()}
        cls.held = list(
            Generation.objects.filter(campaign=cls.campaign, identity_held=True).order_by("pk")
        )

    def api(self, who: str, path: str, body=None):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens[who]}"}
        if body is None:
            return self.client.get(path, **auth)
        return self.client.post(path, json.dumps(body), "application/json", **auth)

    @property
    def list_url(self) -> str:
        return f"/api/v1/campaigns/{self.campaign.slug}/held-outputs"

    def test_it_holds_only_the_samples_reviewers_will_be_shown(self):
        leaks = Generation.objects.filter(campaign=self.campaign, contender__name="vendor-a")
        assert leaks.count() == 4 and all(g.identity_leak for g in leaks)
        assert sorted(g.sample_index for g in leaks if g.identity_held) == [0, 0]
        assert len(self.held) == 2

    def test_the_list_gives_each_reason_with_its_offsets(self):
        answer = self.api("lead", self.list_url)
        assert answer.status_code == 200
        outputs = answer.json()["outputs"]
        assert [o["id"] for o in outputs] == [g.pk for g in self.held]
        reasons = outputs[0]["reasons"]
        assert reasons and set(reasons[0]) == {"text", "reason", "part", "start", "end"}
        for r in reasons:
            assert r["part"] == "answer" and LEAK[r["start"] : r["end"]] == r["text"]
        assert "OpenAI" in [r["text"] for r in reasons]
        assert "OpenAI" not in outputs[0]["masked"]

    def test_reviewers_arbiters_and_outsiders_may_not_list_or_approve(self):
        for who in ("reviewer_a", "arbiter", "outsider"):
            assert self.api(who, self.list_url).status_code == 403
            assert self.api(who, self.list_url + "/approve", {"all": True}).status_code == 403
        assert self.api("lead", self.list_url + "/approve", {"all": True}).status_code == 403
        assert Generation.objects.filter(campaign=self.campaign, identity_held=True).count() == 2

    def test_an_admin_approves_by_ids_and_the_items_open(self):
        first = self.held[0]
        answer = self.api("admin", self.list_url + "/approve", {"ids": [first.pk]})
        assert answer.status_code == 200
        assert answer.json() == {"approved": [first.pk], "items_opened": 1}
        first.refresh_from_db()
        assert not first.identity_held and first.identity_approved_by == self.users["admin"]
        assert ReviewItem.objects.filter(campaign=self.campaign, ready=True).count() == 1
        again = self.api("admin", self.list_url + "/approve", {"ids": [first.pk]})
        assert again.status_code == 404 and str(first.pk) in again.json()["error"]

    def test_an_admin_approves_all_at_once(self):
        answer = self.api("admin", self.list_url + "/approve", {"all": True})
        assert answer.status_code == 200
        assert sorted(answer.json()["approved"]) == [g.pk for g in self.held]
        assert answer.json()["items_opened"] == 2
        assert self.api("admin", self.list_url).json()["outputs"] == []

    def test_it_rejects_a_body_without_ids_or_all(self):
        for body in ({}, {"all": False}, {"ids": []}, {"ids": [1], "all": True}, {"id": 3}):
            answer = self.api("admin", self.list_url + "/approve", body)
            assert answer.status_code == 400, body
        assert Generation.objects.filter(campaign=self.campaign, identity_held=True).count() == 2

    def test_a_hand_mask_is_recorded_and_reviewers_get_it_masked(self):
        target = self.held[0]
        start = LEAK.index("Orchid Pilot")
        answer = self.api(
            "admin",
            self.list_url + "/approve",
            {"ids": [target.pk], "mask": [[start, start + len("Orchid Pilot")]]},
        )
        assert answer.status_code == 200 and answer.json()["approved"] == [target.pk]
        target.refresh_from_db()
        [mask] = target.identity_masks
        assert mask["text"] == "Orchid Pilot" and mask["by"] == "admin" and mask["at"]
        assert target.output == LEAK  # the original is kept for admins
        claim = self.api("reviewer_a", f"/api/v1/campaigns/{self.campaign.slug}/next", {})
        assert claim.status_code == 200
        texts = json.dumps([c["text"] for c in claim.json()["candidates"]])
        assert "Orchid" not in texts and "Pilot" not in texts and "OpenAI" not in texts
        assert "[redacted] here." in texts

    def test_it_rejects_a_mask_that_does_not_fit_and_approves_nothing(self):
        target = self.held[0]
        url = self.list_url + "/approve"
        for mask in ([[5, 2]], [[0, len(LEAK) + 1]], [["a", 3]], [[1]]):
            answer = self.api("admin", url, {"ids": [target.pk], "mask": mask})
            assert answer.status_code == 400 and answer.json()["errors"], mask
        both = self.api("admin", url, {"ids": [g.pk for g in self.held], "mask": [[0, 3]]})
        assert both.status_code == 400
        target.refresh_from_db()
        assert target.identity_held and target.identity_masks == []


class HeldPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_with_outputs("page")
        cls.held = list(
            Generation.objects.filter(campaign=cls.campaign, identity_held=True).order_by("pk")
        )

    def url(self, name: str, *args) -> str:
        return reverse(name, args=[self.campaign.slug, *args])

    def test_it_shows_each_reason_highlighted_in_the_masked_view(self):
        self.client.force_login(self.users["admin"])
        body = self.client.get(self.url("campaign_held")).content.decode()
        assert "2 outputs that reviewers will be shown are held" in body
        assert body.count('class="card held-output"') == 2
        # what the masking hides reads as the mask, marked with its reason
        assert '<mark class="masked" title="model or vendor name">[redacted]</mark>' in body
        assert "Orchid Pilot here." in body  # not known: readable until masked by hand
        assert 'name="ids"' in body and 'id="approve-all"' in body and 'name="words"' in body

    def test_leads_read_without_the_forms_and_reviewers_are_refused(self):
        self.client.force_login(self.users["lead"])
        body = self.client.get(self.url("campaign_held")).content.decode()
        assert "[redacted]" in body and 'name="ids"' not in body and 'name="words"' not in body
        assert self.client.post(self.url("campaign_held_approve"), {"all": "1"}).status_code == 403
        for who in ("reviewer_a", "arbiter"):
            self.client.force_login(self.users[who])
            assert self.client.get(self.url("campaign_held")).status_code == 403

    def test_ticked_outputs_are_approved_and_all_approves_the_rest(self):
        self.client.force_login(self.users["admin"])
        first, second = self.held
        response = self.client.post(self.url("campaign_held_approve"), {"ids": [first.pk]})
        assert response.status_code == 302
        assert list(Generation.objects.filter(campaign=self.campaign, identity_held=True)) == [
            second
        ]
        self.client.post(self.url("campaign_held_approve"), {"all": "1"})
        assert not Generation.objects.filter(campaign=self.campaign, identity_held=True).exists()
        page = self.client.get(self.url("campaign_held")).content.decode()
        assert "No output is held." in page

    def test_masking_words_by_hand_masks_every_occurrence_and_approves(self):
        self.client.force_login(self.users["admin"])
        target = self.held[0]
        response = self.client.post(
            self.url("campaign_held_mask", target.pk), {"words": "orchid pilot"}, follow=True
        )
        assert "Masked 1 span and approved" in response.content.decode()
        target.refresh_from_db()
        assert not target.identity_held
        assert [m["text"] for m in target.identity_masks] == ["Orchid Pilot"]
        missing = self.client.post(
            self.url("campaign_held_mask", self.held[1].pk), {"words": "Zebra"}, follow=True
        )
        assert "does not occur in this output" in missing.content.decode()
        self.held[1].refresh_from_db()
        assert self.held[1].identity_held
