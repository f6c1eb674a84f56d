"""Monitors: definitions, runs through the generation pipeline, comparison, alerts, schedule."""

import hashlib
import hmac
import io
import json
import threading
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from django.test import TestCase, TransactionTestCase, override_settings

from tasks.campaigns.definition import DefinitionError
from tasks.generation.run import generation_run
from tasks.models import (
    AlertDelivery,
    Campaign,
    Contender,
    Generation,
    Monitor,
    MonitorAlert,
    MonitorRun,
)
from tasks.monitors import alerts as monitor_alerts
from tasks.monitors.definition import monitor_create
from tasks.monitors.grading import monitor_campaign_finished
from tasks.monitors.metrics import compare_tables, run_table, sign_test
from tasks.monitors.schedule import monitor_schedule_tick
from tests.factories import ContenderFactory, TaskFactory, TestSetFactory
from tests.fake_llm import FakeLLM
from tests.services import need, postgres_available

SECRET = "test-secret"
FAILING = (2, 4, 6, 8)  # the tasks (T-2 ...) whose answers stop passing in the second run


def make_testset(name="golden", tasks=10):
    ts = TestSetFactory(name=name, version=2, frozen=False, task_count=tasks)
    for i in range(1, tasks + 1):
        TaskFactory(
            testset=ts,
            position=i,
            external_id=f"T-{i}",
            category="support",
            prompt=f"Question number {i}?",
            checks={"regex": "answers"},
        )
    return ts


def steady(monitor) -> None:
    """Drop the latency threshold: the fake endpoint's few-millisecond latencies move by more
    than 25% from run to run on their own."""
    thresholds = [t for t in monitor.thresholds if not t["metric"].startswith("latency")]
    Monitor.objects.filter(pk=monitor.pk).update(thresholds=thresholds)


def definition(**over):
    data = {
        "slug": "golden",
        "name": "Golden set",
        "testset": "golden",
        "version": 2,
        "contenders": ["oa"],
        "samples_per_task": 1,
        "schedule": "*/5 * * * *",
        "baseline": "first",
        "thresholds": [
            {"metric": "check_pass_rate", "max_drop": 0.05},
            {"metric": "latency_ms.p95", "max_rise": 0.25},
            {"metric": "cost_per_task", "max_rise": 0.10},
            {"metric": "served_model", "on_change": True},
            {"metric": "regressed_tasks", "max": 2},
        ],
        "alerts": {"webhook": "https://hooks.example.com/eval", "email": ["lead@example.com"]},
    }
    data.update(over)
    return data


class DefinitionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa")

    def _errors(self, **over) -> list[str]:
        with pytest.raises(DefinitionError) as info:
            monitor_create(definition=definition(**over))
        assert Monitor.objects.count() == 0
        return info.value.errors

    def test_it_creates_a_monitor_and_freezes_the_test_set(self):
        monitor = monitor_create(definition=definition())
        assert monitor.testset.frozen and list(
            monitor.contenders.values_list("name", flat=True)
        ) == ["oa"]

    def test_it_rejects_each_bad_field_by_name_and_creates_nothing(self):
        contenders = Contender.objects.count()
        assert any(
            e.startswith("contenders[0]: no contender named 'nope'")
            for e in self._errors(contenders=["nope"])
        )
        assert any(e.startswith("testset:") for e in self._errors(testset="missing"))
        assert any(e.startswith("testset:") for e in self._errors(version=9))
        bad_metric = self._errors(thresholds=[{"metric": "vibes", "max_drop": 0.1}])
        assert bad_metric == ["thresholds[0].metric: unknown metric 'vibes'"]
        assert self._errors(schedule="61 * * * *")[0].startswith("schedule:")
        assert self._errors(schedule="* * * *")[0].startswith("schedule:")
        assert self._errors(baseline=4) == [
            "baseline: run 4 does not exist (the monitor has no runs yet)"
        ]
        assert self._errors(alerts={"webhook": "ftp://x.example/hook"}) == [
            "alerts.webhook: must be an http(s) URL"
        ]
        both = self._errors(thresholds=[{"metric": "regressed_tasks", "max_drop": 1, "max": 2}])
        assert both == [
            "thresholds[0]: exactly one of max_drop, max_rise, max, on_change "
            "(got both max_drop and max)"
        ]
        # Several problems at once, an inline contender not created either.
        many = self._errors(
            contenders=[{"name": "new-one", "provider": "openai", "model": "m"}],
            schedule="bad",
            alerts={"webhook": "javascript:alert(1)"},
        )
        assert len(many) == 2 and Contender.objects.count() == contenders

    def test_create_monitor_command_reports_errors_and_exit_1(self):
        path = self._tmp(definition(schedule="nope"))
        with pytest.raises(CommandError) as info:
            call_command("create_monitor", path)
        assert "schedule: 'nope' is not a valid 5-field cron expression" in str(info.value)
        out = io.StringIO()
        call_command("create_monitor", self._tmp(definition()), stdout=out)
        assert "Created monitor golden" in out.getvalue()

    def test_run_monitor_and_compare_exit_1_on_errors(self):
        monitor_create(definition=definition())
        for args, message in (
            (("run_monitor", "nope"), "no monitor 'nope'"),
            (("run_monitor", "golden", "--baseline", "9"), "run 9 of golden does not exist"),
            (("compare", "golden#1", "x"), "no run 1"),
            (("compare", "nope", "x"), "no campaign 'nope'"),
        ):
            with pytest.raises(CommandError, match=message):
                call_command(*args, stdout=io.StringIO(), stderr=io.StringIO())
        assert MonitorRun.objects.count() == 0

    def _tmp(self, data) -> str:
        import tempfile

        handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(data, handle)
        handle.close()
        return handle.name


# -- statistics: a fixture computed by hand -----------------------------------------------------


def _rows(failing=(), latency=100):
    return [
        {
            "task": f"T-{i}",
            "sample": 0,
            "status": "done",
            "output": "ok",
            "checks_passed": i not in failing,
            "check_results": {"regex": {"passed": i not in failing}},
            "latency_ms": latency,
            "ttft_ms": 10,
            "cost": 0.001,
            "served_model": "m",
        }
        for i in range(1, 11)
    ]


def test_it_matches_the_hand_computed_ci_and_p():
    """10 tasks, 1 sample; all pass in the baseline, 4 fail in the run. Every bootstrap round
    draws 10 tasks, so delta = -X/10 with X ~ Binomial(10, 0.4): its 2.5% and 97.5% quantiles
    are 1 and 7 (cdf 0.0464 > 0.025 > cdf(0) = 0.0060; cdf(6) = 0.9452 < 0.975 < cdf(7) =
    0.9877), so the 95% CI is [-0.7, -0.1]. The metric's paired p reads the same rounds:
    twice the share of rounds with delta >= 0, P(X = 0) = 0.6^10 = 0.0060, so p = 0.0121 (a
    Monte Carlo estimate from 1,000 rounds: SD about 0.005), below 0.05 as the interval says.
    The regressed_tasks count keeps its exact sign test: 4 changed, all down: p = 2 x 0.5^4."""
    tasks = [f"T-{i}" for i in range(1, 11)]
    base = run_table(_rows(), tasks=tasks, samples=1)
    run = run_table(_rows(failing={2, 4, 6, 8}), tasks=tasks, samples=1)
    out = compare_tables(base, run)
    m = out["metrics"]["check_pass_rate"]
    assert (m["baseline"], m["run"], m["delta"]) == (1.0, 0.6, -0.4)
    assert m["ci95"] == [-0.7, -0.1] and m["p"] == pytest.approx(2 * 0.6**10, abs=0.01)
    assert out["metrics"]["regressed_tasks"]["p"] == 0.125
    assert [r["task_id"] for r in out["regressions"]] == ["T-2", "T-4", "T-6", "T-8"]
    assert out["regressions"][0] == {
        "task_id": "T-2",
        "baseline_pass_rate": 1.0,
        "run_pass_rate": 0.0,
        "failed_checks": ["regex"],
    }
    assert out["improvements"] == [] and not out["served_model_changed"]
    # McNemar's exact test with 6 regressions and 1 improvement: 2 x (1 + 7) / 128.
    assert sign_test(1, 6) == 0.125 and sign_test(0, 0) == 1.0


# -- a run end to end against the fake endpoint, with a webhook receiver -------------------------


class _Receiver:
    def __init__(self):
        self.posts = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.posts.append((dict(self.headers), body))
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def inline_pipeline():
    """The broker boundary played in process: each generation message runs its row at once,
    the finish and delivery jobs call their services."""
    with (
        mock.patch(
            "tasks.generation.services._send", lambda pk, unsent: generation_run(generation_id=pk)
        ),
        mock.patch(
            "tasks.generation.services._monitor_run_grade",
            lambda cid: monitor_campaign_finished(campaign_id=cid),
        ),
        mock.patch.object(
            monitor_alerts,
            "_send",
            lambda pk, countdown=0: monitor_alerts.alert_deliver(delivery_id=pk),
        ),
    ):
        yield


@override_settings(MONITOR_WEBHOOK_SECRET=SECRET)
class RunTests(TransactionTestCase):
    def setUp(self):
        self.fake = FakeLLM()
        self.receiver = _Receiver()
        make_testset()
        ContenderFactory(
            name="oa", provider="openai", model="oa", base_url=self.fake.base_url,
            price_in_per_mtok=1, price_out_per_mtok=2,
        )  # fmt: skip
        self.monitor = monitor_create(
            definition=definition(schedule="", alerts={"webhook": self.receiver.url})
        )

    def tearDown(self):
        self.fake.close()
        self.receiver.close()

    def _run(self) -> tuple[int, dict, str]:
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with inline_pipeline():
            try:
                call_command("run_monitor", "golden", "--wait", "--interval", "0.01",
                             stdout=out, stderr=err)  # fmt: skip
            except SystemExit as exc:
                code = exc.code
        return code, json.loads(out.getvalue()), err.getvalue()

    def test_a_regression_latency_rise_and_served_model_change_exit_3_with_signed_alerts(self):
        code, first, _ = self._run()
        assert code == 0 and first["baseline"] is None and first["alerts"] == []
        assert first["metrics"]["oa"]["check_pass_rate"] == 1.0
        assert self.receiver.posts == []

        self.fake.rewrite(
            "oa",
            lambda a: (
                a.replace("answers", "says")
                if any(a.endswith(f"number {n}?") for n in FAILING)
                else a
            ),
        )
        self.fake.set_delay("oa", 0.15)
        self.fake.serve("oa", "oa-small", "fp-small")
        code, second, summary = self._run()
        assert code == 3, summary
        entry = second["contenders"]["oa"]
        assert [r["task_id"] for r in entry["regressions"]] == ["T-2", "T-4", "T-6", "T-8"]
        assert all(r["failed_checks"] == ["regex"] for r in entry["regressions"])
        assert entry["improvements"] == []
        m = entry["metrics"]["check_pass_rate"]
        assert (m["baseline"], m["run"], m["ci95"]) == (1.0, 0.6, [-0.7, -0.1])
        # the metric's own paired test reads the rounds of its interval: an interval that
        # leaves out 0 has p < 0.05 (the sign test on the 4 flipped tasks, 0.125, sits with
        # the regressed_tasks count it tests)
        assert m["p"] < 0.05
        assert entry["metrics"]["regressed_tasks"]["p"] == 0.125
        assert entry["metrics"]["latency_ms.p95"]["run"] >= 150
        assert entry["served_models"] == {"baseline": {"oa": 10}, "run": {"oa-small": 10}}
        assert entry["served_model_changed"] is True
        crossed = sorted(a["metric"] for a in second["alerts"])
        assert crossed == ["check_pass_rate", "latency_ms.p95", "regressed_tasks", "served_model"]
        # One signed POST per crossed threshold, each recorded with its response code.
        assert len(self.receiver.posts) == 4
        for headers, body in self.receiver.posts:
            expected = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            assert headers["X-Evalsite-Signature"] == f"sha256={expected}"
            assert json.loads(body)["monitor"] == "golden"
        deliveries = AlertDelivery.objects.all()
        assert {(d.status, d.response_code) for d in deliveries} == {("sent", 204)}
        # Grading again records nothing twice (the unique constraint).
        run = MonitorRun.objects.get(number=2)
        assert monitor_campaign_finished(campaign_id=run.campaign_id) is None
        assert MonitorAlert.objects.count() == 4
        # The hidden campaign is the pipeline's and nobody's review.
        assert run.campaign.kind == Campaign.Kind.MONITOR_RUN
        assert Generation.objects.filter(campaign=run.campaign, status="done").count() == 10
        assert "regressed 4" in summary and "4 threshold(s) crossed" in summary

    @override_settings(MONITOR_WEBHOOK_ATTEMPTS=2)
    def test_a_failing_webhook_is_retried_and_its_response_recorded(self):
        steady(self.monitor)
        self._run()
        self.fake.serve("oa", "oa-small")
        Monitor.objects.filter(pk=self.monitor.pk).update(
            alerts={"webhook": "http://127.0.0.1:9/hook"}  # nothing listens there
        )
        code, _, _ = self._run()
        assert code == 3
        delivery = AlertDelivery.objects.get()
        assert delivery.status == "pending" and delivery.attempts == 1 and delivery.error
        # Not due yet (its backoff): a second message does nothing.
        assert monitor_alerts.alert_deliver(delivery_id=delivery.pk) == ("skip", 0.0)
        AlertDelivery.objects.update(next_attempt_at=delivery.last_attempt_at)
        assert monitor_alerts.alert_deliver(delivery_id=delivery.pk) == ("failed", 0.0)
        delivery.refresh_from_db()
        assert delivery.status == "failed" and delivery.attempts == 2
        assert monitor_alerts.alert_deliver(delivery_id=delivery.pk) == ("skip", 0.0)

    def test_an_alert_is_emailed_through_the_django_backend(self):
        from django.core import mail

        Monitor.objects.filter(pk=self.monitor.pk).update(alerts={"email": ["lead@example.com"]})
        steady(self.monitor)
        self._run()
        self.fake.serve("oa", "oa-small")
        code, _, _ = self._run()
        assert code == 3 and len(mail.outbox) == 1
        assert mail.outbox[0].to == ["lead@example.com"]
        assert "golden run 2, oa: served_model" in mail.outbox[0].subject
        assert AlertDelivery.objects.get().status == "sent"

    def test_compare_two_runs_and_an_unknown_run(self):
        self._run()
        self._run()
        out = io.StringIO()
        call_command("compare", "golden#1", "golden#2", stdout=out, stderr=io.StringIO())
        data = json.loads(out.getvalue())
        assert data["baseline"] == 1 and data["run"] == 2
        assert data["contenders"]["oa"]["metrics"]["check_pass_rate"]["delta"] == 0.0
        with pytest.raises(CommandError, match="no run 7"):
            call_command("compare", "golden#1", "golden#7", stderr=io.StringIO())


# -- schedule -------------------------------------------------------------------------------------


@pytest.mark.postgres
class ScheduleRaceTests(TransactionTestCase):
    """Two beat-like callers at the same minute on PostgreSQL: one run per due time."""

    def setUp(self):
        need(postgres_available(), "the race needs PostgreSQL")
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")
        self.monitor = monitor_create(definition=definition(schedule="* * * * *", alerts={}))
        Monitor.objects.filter(pk=self.monitor.pk).update(
            created_at=datetime(2026, 1, 1, 11, 0, tzinfo=UTC)
        )

    def _tick_twice(self, now) -> list[dict]:
        barrier = threading.Barrier(2)
        results = []

        def beat():
            try:
                barrier.wait()
                results.append(monitor_schedule_tick(now=now))
            finally:
                connections.close_all()

        threads = [threading.Thread(target=beat) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def _finish_all(self):
        Generation.objects.update(status="done", queued_at=None)
        for run in MonitorRun.objects.filter(status="generating"):
            monitor_campaign_finished(campaign_id=run.campaign_id)

    def test_one_run_per_due_time_a_busy_run_delays_and_downtime_catches_up_once(self):
        t0 = datetime(2026, 1, 1, 12, 0, 20, tzinfo=UTC)
        with mock.patch(
            "tasks.generation.services._send"
        ):  # nobody works the rows: the run goes on
            for minute in range(3):
                results = self._tick_twice(t0 + timedelta(minutes=minute))
                if minute == 0:
                    assert sorted(len(r["started"]) for r in results) == [0, 1]
                    first = MonitorRun.objects.get()
                    assert first.scheduled_for == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
                else:  # run 1 is still going: the due times wait, never doubled
                    assert all(r["started"] == [] for r in results)
            assert MonitorRun.objects.count() == 1
            self._finish_all()
            # Down for three minutes: the next tick starts one catch-up run, for the latest.
            results = self._tick_twice(t0 + timedelta(minutes=5))
            assert sorted(len(r["started"]) for r in results) == [0, 1]
            assert list(MonitorRun.objects.values_list("scheduled_for", flat=True)) == [
                datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
                datetime(2026, 1, 1, 12, 5, tzinfo=UTC),
            ]
            self._finish_all()
            assert monitor_schedule_tick(now=t0 + timedelta(minutes=5, seconds=30))["started"] == []


@pytest.mark.postgres
class DemoOutsideATransactionTests(TransactionTestCase):
    """`manage.py demo` on PostgreSQL, as docker compose runs it: no test transaction around
    it, so a row lock taken outside one fails as it would for a user."""

    def test_the_demo_loads_its_monitor_runs(self):
        call_command("demo", stdout=io.StringIO())
        monitor = Monitor.objects.get()
        # Four past runs, and run 5 graded by the demo judge (reviews/judges/demo_monitor.py).
        assert sorted(monitor.runs.values_list("number", flat=True)) == [1, 2, 3, 4, 5]
        assert monitor.judge.name == "demo-judge"
