"""The charts demo step: a chart image in the tasks and a reasoning contender, loaded through
the real services, as reviewers and the report see them."""

from io import StringIO

from django.test import TestCase

from evalsite.demo import load_users
from reviews.report.campaign import campaign_report
from tasks.demo import vision as vision_demo
from tasks.models import Generation


class VisionDemoTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = load_users()
        cls.campaign = vision_demo.load({"users": cls.users}, StringIO())["charts_campaign"]

    def test_the_chart_is_stored_and_the_reasoning_model_reasoned(self):
        task = self.campaign.testset.tasks.order_by("position").first()
        image = task.messages[0]["content"][1]
        assert image["type"] == "image" and (image["width"], image["height"]) == (640, 400)
        assert "revenue-2026" not in str(task.messages)
        thinker = Generation.objects.filter(
            campaign=self.campaign, contender__name="northwind-large"
        )
        assert thinker.count() == 2 and all(g.reasoning and g.reasoning_tokens for g in thinker)
        report = campaign_report(campaign=self.campaign, n_boot=50)
        assert report["usage"]["northwind-large"]["reasoning_tokens"] == 58 + 71
        assert report["usage"]["northwind-small"]["reasoning_tokens"] is None
        # 58 reasoning tokens x 10 per million (billed as output), then 71: per task mean.
        assert report["usage"]["northwind-large"]["reasoning_cost_per_task"] == 0.000645

    def test_reviewers_see_the_chart_and_the_reasoning_masked(self):
        self.client.force_login(self.users["reviewer1"])
        body = self.client.get(self.client.post("/review/charts-demo/next").url).content.decode()
        assert 'class="task-image"' in body and "/task-images/" in body
        # Every item shows all three outputs: the reasoning model's with its reasoning.
        assert body.count("Reasoning of output") == 1
        assert "support-large-2026-10" not in body
        assert "As [redacted] I compare them" in body or "about 68.4%" in body

    def test_a_second_load_changes_nothing(self):
        before = list(
            Generation.objects.filter(campaign=self.campaign).values_list("id", "finished_at")
        )
        again = vision_demo.load({"users": self.users}, StringIO())["charts_campaign"]
        assert again.pk == self.campaign.pk
        after = list(
            Generation.objects.filter(campaign=self.campaign).values_list("id", "finished_at")
        )
        assert after == before
