"""The judge demo: `manage.py demo` leaves a judge calibrated on accuracy and not on tone."""

from io import StringIO

from django.core.management import call_command
from django.test import TestCase

from reviews.judges.calibration import judge_calibration
from tasks.models import Campaign, Judge, Monitor


class JudgeDemoTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.out = StringIO()
        call_command("demo", stdout=cls.out)

    def test_it_calibrates_one_dimension_and_not_the_other_with_reasons(self):
        campaign = Campaign.objects.get(slug="judge-demo")
        out = judge_calibration(
            campaign=campaign, judge=Judge.objects.get(name="demo-judge"), n_boot=300
        )
        accuracy, tone = out["dimensions"]["accuracy"], out["dimensions"]["tone"]
        assert accuracy["n"] == 36 and accuracy["verdict"] == "calibrated"
        assert tone["verdict"] == "not_calibrated"
        assert "systematically higher" in tone["reason"]
        assert out["judgements"] == 72

    def test_it_is_idempotent(self):
        again = StringIO()
        call_command("demo", stdout=again)
        assert "judge-demo: already present" in again.getvalue()
        assert Campaign.objects.filter(slug="judge-demo").count() == 1
        assert Monitor.objects.get(slug="support-golden").runs.count() == 5

    def test_the_demo_monitor_grades_with_the_calibrated_judge(self):
        monitor = Monitor.objects.get(slug="support-golden")
        assert (monitor.judge.name, monitor.calibration.slug) == ("demo-judge", "judge-demo")
        assert not monitor.allow_uncalibrated
        assert {"metric": "judge.accuracy", "max_drop": 0.5} in monitor.thresholds
        run = monitor.runs.get(number=5)
        assert run.status == "done" and run.baseline_number == 1
        assert run.judging["judge"] == "demo-judge" and run.judging["failed"] == 0
        assert run.judging["cost"] > 0 and run.judging["note"] == ""
        for contender in ("northwind-api", "zephyr-api"):
            metrics = run.comparison["contenders"][contender]["metrics"]
            accuracy = metrics["judge.accuracy"]
            assert accuracy["baseline"] is not None and accuracy["run"] is not None
            assert accuracy["ci95"] is not None and accuracy["p"] is not None
            # Its preference is not calibrated on judge-demo: the monitor does not grade it.
            assert "judge.preference_win_rate" not in metrics
        assert run.comparison["judge"]["calibrated"] is True
