"""What a campaign may say: a name, rubric, instruction or category that names a contender,
a model or a vendor is refused at creation with the words found; a rubric or redaction list
past its bounds is refused with the limit; a monitor's blind campaign masks the monitored
contender's own names and model ids."""

import json

import pytest
from django.test import TestCase, override_settings
from django.urls import reverse

from evalsite.models import ApiToken
from reviews import review as services
from reviews.review.readiness import review_items_sync
from reviews.review.selectors import review_screen
from tasks.campaigns.definition import DefinitionError, campaign_create
from tasks.generation.run import generation_run
from tasks.models import Campaign, Contender, Generation
from tasks.monitors.definition import monitor_create
from tasks.monitors.grading import monitor_run_finish
from tasks.monitors.runs import monitor_run_start
from tests.factories import ContenderFactory, TaskFactory, TestSetFactory, personas
from tests.fake_llm import FakeLLM
from tests.tasks.test_monitors import FAILING, definition, make_testset, steady

CONTENDERS = [
    {"name": "orchid-pilot", "provider": "imported"},
    {"name": "bluebird", "provider": "imported"},
]


class RefusalTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.testset = TestSetFactory(name="ts-refusals", frozen=False, task_count=1)
        TaskFactory(testset=cls.testset, position=0, external_id="T-1", category="billing")

    def create(self, **over):
        data = {
            "slug": "neutral",
            "name": "Support answers Q4",
            "testset": self.testset.name,
            "contenders": CONTENDERS,
            "rubric": [{"key": "accuracy", "label": "Accuracy"}],
            **over,
        }
        return campaign_create(definition=data)

    def refused(self, **over) -> list[str]:
        with pytest.raises(DefinitionError) as exc:
            self.create(**over)
        return exc.value.errors

    def test_a_name_naming_a_contender_or_a_vendor_is_refused_with_the_word(self):
        [error] = self.refused(name="Orchid Pilot vs the rest")
        assert error.startswith("name: names a model, a vendor or a redacted term (“Orchid Pilot”)")
        [error] = self.refused(name="OpenAI bake-off")
        assert error.startswith("name: ") and "“OpenAI”" in error

    def test_rubric_keys_labels_and_anchors_naming_one_are_refused(self):
        errors = self.refused(
            rubric=[
                {"key": "tone_orchid_pilot", "label": "Tone"},
                {"key": "style", "label": "Sounds like Claude 3.5 Sonnet"},
                {"key": "depth", "anchors": {"1": "shallow", "5": "as deep as bluebird"}},
            ]
        )
        wheres = sorted(e.split(":")[0] for e in errors)
        assert wheres == ["rubric[0].key", "rubric[1].label", "rubric[2].anchors.5"]
        assert any("“Claude 3.5 Sonnet”" in e for e in errors)

    def test_instructions_and_categories_naming_one_are_refused(self):
        TaskFactory(testset=self.testset, position=1, external_id="T-2", category="gpt-4o_style")
        errors = self.refused(instructions="Prefer answers that sound like bluebird.")
        assert any(e.startswith("instructions: names") and "“bluebird”" in e for e in errors)
        assert any(e.startswith("testset: category 'gpt-4o_style'") for e in errors)

    def test_a_neutral_campaign_is_created(self):
        campaign, warnings = self.create(instructions="Judge accuracy first.")
        assert campaign.pk and not any("names a model" in w for w in warnings)

    def test_a_rubric_past_its_bounds_is_refused_with_the_limit(self):
        many = [{"key": f"d{i}"} for i in range(51)]
        assert self.refused(rubric=many) == ["rubric: at most 50 dimensions (this one has 51)"]
        long = [{"key": "accuracy", "anchors": {"1": "x" * 2001}}]
        assert self.refused(rubric=long) == [
            "rubric[0].anchors.1: at most 2,000 characters (this one has 2,001)"
        ]
        words = [f"word{i}" for i in range(1001)]
        assert self.refused(redact=words) == ["redact: at most 1,000 words (this list has 1,001)"]
        campaign, _ = self.create(rubric=[{"key": f"d{i}"} for i in range(50)])
        assert len(campaign.rubric) == 50

    def test_the_form_and_the_api_refuse_it_too(self):
        users = personas()
        auth = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(users['admin'])}"}
        body = {
            "slug": "neutral-api",
            "name": "Orchid Pilot vs the rest",
            "testset": self.testset.name,
            "contenders": CONTENDERS,
            "rubric": [{"key": "accuracy"}],
        }
        answer = self.client.post("/api/v1/campaigns", json.dumps(body), "application/json", **auth)
        assert answer.status_code == 400
        assert any(e.startswith("name: names") for e in answer.json()["errors"])
        assert not Campaign.objects.filter(slug="neutral-api").exists()
        ContenderFactory(name="orchid-pilot", provider="imported")
        ContenderFactory(name="bluebird", provider="imported")
        self.client.force_login(users["admin"])
        page = self.client.post(
            reverse("campaign_new"),
            {
                "slug": "neutral-form",
                "name": "Orchid Pilot vs the rest",
                "testset": self.testset.pk,
                "contenders": [c.pk for c in Contender.objects.all()],
                "mode": "rubric",
                "rubric": '[{"key": "accuracy"}]',
                "samples_per_task": 1,
                "reviewed_samples": 1,
                "overlap": 2,
                "lease_minutes": 20,
                "pass_threshold": 0.6,
                "reviewers_all": "on",
                "arbiters_all": "on",
            },
        )
        assert "names a model, a vendor or a redacted term (“Orchid Pilot”)" in (
            page.content.decode()
        )
        assert not Campaign.objects.filter(slug="neutral-form").exists()


@override_settings(MONITOR_WEBHOOK_SECRET="s")
class MonitorReviewBlindTests(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLLM()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_the_blind_campaign_masks_the_monitored_contenders_name_and_model_id(self):
        users = personas()
        make_testset()
        # The fake endpoint's answers start with the model id: "orchid-pilot-7b answers: ..."
        ContenderFactory(
            name="oa", provider="openai", model="orchid-pilot-7b", base_url=self.fake.base_url
        )
        monitor = monitor_create(definition=definition(alerts={}))
        steady(monitor)
        monitor.refresh_from_db()
        for n in range(2):
            if n == 1:
                self.fake.rewrite(
                    "orchid-pilot-7b",
                    lambda a: (
                        a.replace("answers", "says")
                        if any(a.endswith(f"number {i}?") for i in FAILING)
                        else a
                    ),
                )
            run = monitor_run_start(monitor=monitor)
            for pk in Generation.objects.filter(campaign=run.campaign).values_list("pk", flat=True):
                assert generation_run(generation_id=pk).action == "done"
            run = monitor_run_finish(run_id=run.pk)
        self.client.force_login(users["admin"])
        self.client.post(
            reverse("monitor_review_blind", args=[monitor.slug, run.number]), {"contender": "oa"}
        )
        campaign = Campaign.objects.get(kind=Campaign.Kind.BLIND)
        assert "orchid-pilot-7b" in campaign.redact
        outputs = list(campaign.generations.values_list("output", flat=True))
        assert any(o.startswith("orchid-pilot-7b answers") for o in outputs)
        Generation.objects.filter(campaign=campaign, identity_held=True).update(identity_held=False)
        review_items_sync(campaign=campaign)
        claim = services.assignment_claim_next(campaign=campaign, reviewer=users["reviewer_a"])
        screen = review_screen(assignment=claim.assignment, campaign=campaign, html=False)
        texts = " ".join(c["text"] for c in screen["candidates"])
        assert "orchid" not in texts.casefold() and "[redacted] answers" in texts
