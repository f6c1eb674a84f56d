"""The judge demo: `manage.py demo` leaves a judge calibrated on accuracy and not on tone."""

from io import StringIO

from django.core.management import call_command
from django.test import TestCase

from reviews.judges.calibration import judge_calibration
from tasks.models import Campaign, Judge


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
