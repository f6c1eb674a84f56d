from io import StringIO

from django.test import TestCase
from django.urls import reverse

from tasks.demo import testsets as demo
from tasks.models import Campaign, MonitorAlert, MonitorRun
from tests.factories import personas


class MonitorDemoTests(TestCase):
    def test_the_demo_monitor_has_a_regression_and_a_served_model_change_once(self):
        users = personas()
        out = StringIO()
        demo.load({"users": users}, out)
        demo.load({"users": users}, out)
        runs = MonitorRun.objects.filter(monitor__slug="support-golden").order_by("number")
        assert [r.status for r in runs] == ["done"] * 4
        third = runs[2].comparison["contenders"]["northwind-api"]
        assert [r["task_id"] for r in third["regressions"]] == ["SUP-001", "SUP-007"]
        fourth = runs[3].comparison["contenders"]["zephyr-api"]
        assert fourth["served_model_changed"] is True
        alerts = set(MonitorAlert.objects.values_list("run__number", "contender", "metric"))
        assert (3, "northwind-api", "regressed_tasks") in alerts
        assert (4, "zephyr-api", "served_model") in alerts
        assert not any(n in (1, 2) for n, _, _ in alerts)
        # Hidden run campaigns stay out of the campaign list.
        assert Campaign.objects.filter(kind=Campaign.Kind.MONITOR_RUN).count() == 4
        self.client.force_login(users["lead"])
        page = self.client.get(reverse("monitor_detail", args=["support-golden"])).content.decode()
        assert "Run #4 crossed" in page and "<polyline" in page
        listing = self.client.get(reverse("campaign_list")).content.decode()
        assert "support-golden" not in listing
