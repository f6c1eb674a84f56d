"""Monitor API and pages: allowed and denied personas, the run API, charts, review blind."""

import json

from django.test import TestCase, override_settings
from django.urls import reverse

from evalsite.models import ApiToken
from tasks.generation.run import generation_run
from tasks.models import Campaign, Generation, MonitorRun
from tasks.monitors.definition import monitor_create
from tasks.monitors.grading import monitor_run_finish
from tasks.monitors.runs import monitor_run_start
from tests.factories import ContenderFactory, personas
from tests.fake_llm import FakeLLM
from tests.tasks.test_monitors import FAILING, definition, make_testset, steady


@override_settings(MONITOR_WEBHOOK_SECRET="s")
class MonitorApiAndPagesTests(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLLM()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url=cls.fake.base_url)

    def setUp(self):
        self.fake.served.clear()
        self.fake.rewrites.clear()

    def _auth(self, persona):
        return {"Authorization": f"Bearer {self.tokens[persona]}"}

    def _graded_run(self, monitor):
        run = monitor_run_start(monitor=monitor)
        for pk in Generation.objects.filter(campaign=run.campaign).values_list("pk", flat=True):
            assert generation_run(generation_id=pk).action == "done"
        return monitor_run_finish(run_id=run.pk)

    def _two_runs(self):
        monitor = monitor_create(definition=definition(alerts={}))
        steady(monitor)
        monitor.refresh_from_db()
        self._graded_run(monitor)
        self.fake.rewrite(
            "oa",
            lambda a: (
                a.replace("answers", "says")
                if any(a.endswith(f"number {n}?") for n in FAILING)
                else a
            ),
        )
        self.fake.serve("oa", "oa-small")
        return monitor, self._graded_run(monitor)

    def test_the_api_creates_starts_and_reads_runs(self):
        url = reverse("api_monitors")
        body = json.dumps(definition(alerts={}))
        denied = self.client.post(url, body, "application/json", headers=self._auth("lead"))
        assert denied.status_code == 403
        bad = self.client.post(
            url,
            json.dumps(definition(schedule="x")),
            "application/json",
            headers=self._auth("admin"),
        )
        assert bad.status_code == 400 and any("schedule" in e for e in bad.json()["errors"])
        created = self.client.post(url, body, "application/json", headers=self._auth("admin"))
        assert created.status_code == 201 and created.json()["slug"] == "golden"
        detail = self.client.get(
            reverse("api_monitor_detail", args=["golden"]), headers=self._auth("lead")
        )
        assert detail.status_code == 200 and detail.json()["contenders"] == ["oa"]
        assert (
            self.client.get(
                reverse("api_monitor_detail", args=["golden"]), headers=self._auth("reviewer_a")
            ).status_code
            == 403
        )
        runs = reverse("api_monitor_runs", args=["golden"])
        assert self.client.post(runs, headers=self._auth("lead")).status_code == 403
        missing = self.client.post(
            runs, json.dumps({"baseline": 9}), "application/json", headers=self._auth("admin")
        )
        assert missing.status_code == 400 and "baseline" in missing.json()["error"]
        started = self.client.post(runs, headers=self._auth("admin"))
        assert started.status_code == 202 and started.json()["run"] == 1
        run_url = reverse("api_monitor_run_detail", args=["golden", 1])
        data = self.client.get(run_url, headers=self._auth("lead")).json()
        assert data["status"] == "generating" and data["progress"]["total"] == 10
        assert (
            self.client.get(
                reverse("api_monitor_run_detail", args=["golden", 5]), headers=self._auth("admin")
            ).status_code
            == 404
        )

    def test_the_run_api_shows_metrics_comparison_and_alerts(self):
        monitor, run = self._two_runs()
        data = self.client.get(
            reverse("api_monitor_run_detail", args=[monitor.slug, run.number]),
            headers=self._auth("lead"),
        ).json()
        assert data["status"] == "done" and data["baseline"] == 1
        assert data["metrics"]["oa"]["served_models"] == {"oa-small": 10}
        assert {a["metric"] for a in data["alerts"]} == {
            "check_pass_rate", "regressed_tasks", "served_model",
        }  # fmt: skip
        assert len(data["comparison"]["contenders"]["oa"]["regressions"]) == 4

    def test_pages_for_admins_and_leads_only(self):
        monitor, run = self._two_runs()
        urls = [
            reverse("monitor_list"),
            reverse("monitor_detail", args=[monitor.slug]),
            reverse("monitor_run", args=[monitor.slug, run.number]),
            reverse("monitor_task", args=[monitor.slug, run.number, "T-2"]),
        ]
        for who in ("admin", "lead"):
            self.client.force_login(self.users[who])
            for url in urls:
                assert self.client.get(url).status_code == 200, url
        for who in ("reviewer_a", "arbiter", "outsider"):
            self.client.force_login(self.users[who])
            for url in urls:
                assert self.client.get(url).status_code in (403, 404), (who, url)
        self.client.force_login(self.users["lead"])
        page = self.client.get(urls[1]).content.decode()
        assert "<svg" in page and "<polyline" in page and "crossed 3 thresholds" in page
        run_page = self.client.get(urls[2]).content.decode()
        assert "served model changed" in run_page and urls[3] in run_page
        task_page = self.client.get(urls[3]).content.decode()
        assert (
            "oa answers: Question number 2?" in task_page
            and "oa says: Question number 2?" in task_page
        )
        # Leads read; only admins start runs and make campaigns.
        assert (
            self.client.post(reverse("monitor_run_start", args=[monitor.slug])).status_code == 403
        )

    def test_review_blind_makes_a_campaign_of_the_regressed_tasks(self):
        monitor, run = self._two_runs()
        self.client.force_login(self.users["admin"])
        response = self.client.post(
            reverse("monitor_review_blind", args=[monitor.slug, run.number]), {"contender": "oa"}
        )
        assert response.status_code == 302
        campaign = Campaign.objects.get(kind=Campaign.Kind.BLIND)
        assert sorted(campaign.testset.tasks.values_list("external_id", flat=True)) == [
            "T-2", "T-4", "T-6", "T-8",
        ]  # fmt: skip
        assert campaign.contenders.count() == 2
        texts = set(campaign.generations.filter(status="done").values_list("output", flat=True))
        assert "oa answers: Question number 2?" in texts and "oa says: Question number 2?" in texts
        assert campaign.items.filter(ready=True).count() >= 1 or campaign.items.count() == 4
        assert MonitorRun.objects.count() == 2
