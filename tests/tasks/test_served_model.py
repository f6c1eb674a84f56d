"""Served model and fingerprint: stored from both streams, counted per contender, flagged."""

from django.test import TestCase
from django.urls import reverse

from reviews.report.campaign import campaign_report
from tasks.generation.run import generation_run
from tasks.models import Generation
from tests.factories import personas
from tests.fake_llm import FakeLLM
from tests.tasks.test_generation import make_campaign


class ServedModelTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def setUp(self):
        self.fake.served.clear()
        self.people = personas()

    def _run_all(self, campaign):
        for pk in (
            Generation.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True)
        ):
            assert generation_run(generation_id=pk).action == "done"

    def test_it_stores_the_served_model_and_fingerprint_of_both_providers(self):
        self.fake.serve("oa", "oa-2026-01-15", "fp_abc123")
        self.fake.serve("an", "an-20260101")
        campaign = make_campaign(self.fake, tasks=1, slug="served")
        self._run_all(campaign)
        rows = {g.contender.name: g for g in Generation.objects.filter(campaign=campaign)}
        assert (rows["oa"].served_model, rows["oa"].fingerprint) == ("oa-2026-01-15", "fp_abc123")
        assert (rows["an"].served_model, rows["an"].fingerprint) == ("an-20260101", "")

    def test_it_flags_a_contender_served_two_models_in_the_report_and_page(self):
        campaign = make_campaign(self.fake, tasks=3, slug="drift")
        rows = list(Generation.objects.filter(campaign=campaign).order_by("task__position", "pk"))
        for row in rows:
            if row.task.position == 2:
                self.fake.serve("oa", "oa-small")
            assert generation_run(generation_id=row.pk).action == "done"
        report = campaign_report(campaign=campaign, n_boot=50)
        assert report["served_models"] == {"an": {"an": 3}, "oa": {"oa": 2, "oa-small": 1}}
        url = reverse("campaign_detail", args=[campaign.slug])
        for who in ("admin", "lead"):
            self.client.force_login(self.people[who])
            page = self.client.get(url).content.decode()
            assert "served more than one model" in page and "oa-small × 1" in page
        outputs = self.client.get(reverse("campaign_outputs", args=[campaign.slug])).content
        assert b"served oa-small" in outputs and b"served oa (fp-oa)" in outputs
        self.client.force_login(self.people["reviewer_a"])
        assert self.client.get(url).status_code in (403, 404)

    def test_a_single_served_model_is_not_flagged(self):
        campaign = make_campaign(self.fake, tasks=2, slug="nodrift")
        self._run_all(campaign)
        self.client.force_login(self.people["admin"])
        page = self.client.get(reverse("campaign_detail", args=[campaign.slug])).content.decode()
        assert "served more than one model" not in page
