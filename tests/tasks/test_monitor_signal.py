"""Monitors alert on signal: thresholds with a confidence fire only when the interval of the
difference lies wholly past the limit; comparisons read each task's own regime."""

from django.test import TestCase
from django.urls import reverse

from tasks.generation.run import generation_run
from tasks.models import Generation, MonitorAlert
from tasks.monitors.definition import monitor_create, threshold_crossed
from tasks.monitors.grading import monitor_run_finish
from tasks.monitors.metrics import compare_tables, run_table
from tasks.monitors.runs import campaign_tables, monitor_run_start, run_rows
from tests.factories import CampaignFactory, ContenderFactory, TaskFactory, personas
from tests.fake_llm import FakeLLM
from tests.tasks.test_monitors import FAILING, _rows, definition, make_testset

TASKS = [f"T-{i}" for i in range(1, 11)]


def _entry(failing):
    base = run_table(_rows(), tasks=TASKS, samples=1)
    run = run_table(_rows(failing=failing), tasks=TASKS, samples=1)
    return compare_tables(base, run, levels=(0.8,))["metrics"]


def test_an_unchanged_model_moving_within_its_noise_alerts_only_on_the_point_estimate():
    """The reported case: pass rate -0.053, 95% interval [-0.184, 0.066]."""
    entry = {"baseline": 0.711, "run": 0.658, "delta": -0.053, "ci95": [-0.184, 0.066]}
    point = {"metric": "check_pass_rate", "max_drop": 0.05}
    assert threshold_crossed(point, entry, False)
    assert not threshold_crossed({**point, "confidence": 0.95}, entry, False)


def test_a_real_drop_alerts_with_a_confidence_when_its_interval_clears_the_limit():
    """4 of 10 tasks fail: delta -0.4, 95% interval [-0.7, -0.1] (hand-computed in
    test_monitors: X ~ Binomial(10, 0.4))."""
    metric = _entry({2, 4, 6, 8})["check_pass_rate"]
    assert metric["ci95"] == [-0.7, -0.1]
    sure = {"metric": "check_pass_rate", "max_drop": 0.05, "confidence": 0.95}
    assert threshold_crossed(sure, metric, False)  # even the upper bound drops 0.1 > 0.05
    wide = {"metric": "check_pass_rate", "max_drop": 0.2, "confidence": 0.95}
    assert threshold_crossed({"metric": "check_pass_rate", "max_drop": 0.2}, metric, False)
    assert not threshold_crossed(wide, metric, False)  # -0.1 is within 0.2: not certain
    # Another level has its own interval from the same rounds, inside the 95% one.
    lo, hi = metric["intervals"]["0.8"]
    assert -0.7 <= lo <= hi <= -0.1 and (lo, hi) != (-0.7, -0.1)


def test_a_relative_rise_with_a_confidence_uses_the_interval_over_the_baseline():
    entry = {"baseline": 100.0, "run": 150.0, "ci95": [20.0, 80.0]}
    rise = {"metric": "latency_ms.p95", "max_rise": 0.25, "confidence": 0.95}
    assert not threshold_crossed(rise, entry, False)  # the lower bound is +20%
    assert threshold_crossed({**rise, "max_rise": 0.15}, entry, False)
    assert not threshold_crossed(rise, {**entry, "ci95": None}, False)  # no interval: no alert


class RegimeTests(TestCase):
    def test_single_turn_rows_never_replace_the_conversation_rows(self):
        campaign = CampaignFactory()
        contender = ContenderFactory(name="oa")
        campaign.contenders.set([contender])
        tasks = [
            TaskFactory(testset=campaign.testset, external_id=f"C-{i}", position=i)
            for i in range(3)
        ]
        for task in tasks:  # the conversation fails, its single-turn statement passes
            for single_turn, passed in ((False, False), (True, True)):
                Generation.objects.create(
                    campaign=campaign, task=task, contender=contender, sample_index=0,
                    single_turn=single_turn, status="done", output="x", checks_passed=passed,
                    check_results={"regex": {"passed": passed}},
                )  # fmt: skip
        rows = run_rows(campaign.pk)["oa"]
        assert len(rows) == 3 and {r["checks_passed"] for r in rows} == {False}
        table = campaign_tables(campaign)["oa"]
        assert table.arrays["passed"].sum() == 0


class PageStatesTheDefaultTests(TestCase):
    def test_the_monitor_page_says_how_thresholds_compare(self):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")
        monitor_create(
            definition=definition(
                alerts={},
                thresholds=[
                    {"metric": "check_pass_rate", "max_drop": 0.05, "confidence": 0.95},
                    {"metric": "latency_ms.p95", "max_rise": 0.25},
                ],
            )
        )
        self.client.force_login(personas()["lead"])
        page = self.client.get(reverse("monitor_detail", args=["golden"])).content.decode()
        assert "without a confidence compares the point estimates" in page
        assert "may drop by at most 0.05 (absolute)" in page
        assert "whole 0.95 interval of the difference lies past the limit" in page
        assert "may rise by at most 25%" in page


class ConfidenceAlertsTests(TestCase):
    """Two graded runs on the fake endpoint, 4 of 10 tasks failing in the second: delta -0.4,
    95% interval [-0.7, -0.1]."""

    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLLM()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def _graded_run(self, monitor):
        run = monitor_run_start(monitor=monitor)
        for pk in Generation.objects.filter(campaign=run.campaign).values_list("pk", flat=True):
            generation_run(generation_id=pk)
        return monitor_run_finish(run_id=run.pk)

    def test_only_the_thresholds_whose_interval_clears_the_limit_alert(self):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url=self.fake.base_url)
        monitor = monitor_create(
            definition=definition(
                alerts={},
                thresholds=[
                    {"metric": "check_pass_rate", "max_drop": 0.05, "confidence": 0.95},
                    {"metric": "pass_at_1", "max_drop": 0.2, "confidence": 0.95},
                    {"metric": "pass_hat_k", "max_drop": 0.2},
                    {"metric": "pass_at_k", "max_drop": 0.05, "confidence": 0.9},
                ],
            )
        )
        self._graded_run(monitor)
        self.fake.rewrite(
            "oa",
            lambda a: (
                a.replace("answers", "says")
                if any(a.endswith(f"number {n}?") for n in FAILING)
                else a
            ),
        )
        run = self._graded_run(monitor)
        crossed = sorted(a["metric"] for a in run.comparison["alerts"])
        # pass_at_1 dropped 0.4 too, but its interval reaches -0.1: not certainly past 0.2.
        assert crossed == ["check_pass_rate", "pass_at_k", "pass_hat_k"]
        assert "0.9" in run.comparison["contenders"]["oa"]["metrics"]["pass_at_k"]["intervals"]
        alert = MonitorAlert.objects.get(metric="check_pass_rate")
        assert alert.threshold["confidence"] == 0.95 and alert.rule == "max_drop"
