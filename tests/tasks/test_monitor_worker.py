"""A monitor run on real Celery workers (Redis + PostgreSQL), with a worker SIGKILLed mid-run."""

import io
import json

import pytest
from django.core.management import call_command

from tasks.generation.reconcile import generation_reconcile
from tasks.models import Generation, MonitorRun
from tasks.monitors.definition import monitor_create
from tasks.monitors.runs import monitor_run_start
from tests.factories import ContenderFactory
from tests.fake_llm import FakeLLM
from tests.services import wait_until
from tests.tasks.test_generation import WORKER_ENV, workers  # noqa: F401 (a fixture)
from tests.tasks.test_monitors import FAILING, definition, make_testset

ENV = {
    **WORKER_ENV,
    "GENERATION_LEASE_SECONDS": "4",
    "GENERATION_READ_TIMEOUT": "3",
    "GENERATION_MAX_ATTEMPTS": "5",
}


@pytest.fixture
def fake():
    server = FakeLLM()
    yield server
    server.close()


def _setup(fake):
    make_testset()
    ContenderFactory(name="oa", provider="openai", model="oa", base_url=fake.base_url)
    return monitor_create(definition=definition(schedule="", alerts={}))


@pytest.mark.postgres
@pytest.mark.redis
def test_run_monitor_wait_on_a_real_worker_exits_3_on_a_regression(workers, fake):  # noqa: F811
    _setup(fake)
    workers(concurrency=2, extra_env=ENV)
    out, err = io.StringIO(), io.StringIO()
    call_command("run_monitor", "golden", "--wait", "--interval", "0.2", "--timeout", "120",
                 stdout=out, stderr=err)  # fmt: skip
    assert json.loads(out.getvalue())["baseline"] is None
    # Not a terminal: progress comes as lines, one per change, never carriage returns.
    progress = [line for line in err.getvalue().splitlines() if line.startswith("golden#1: ")]
    assert "\r" not in err.getvalue() and progress, err.getvalue()
    assert len(progress) == len(set(progress))
    fake.rewrite(
        "oa",
        lambda a: (
            a.replace("answers", "says") if any(a.endswith(f"number {n}?") for n in FAILING) else a
        ),
    )
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("run_monitor", "golden", "--wait", "--interval", "0.2", "--timeout", "120",
                     stdout=out, stderr=io.StringIO())  # fmt: skip
    assert exit_.value.code == 3
    entry = json.loads(out.getvalue())["contenders"]["oa"]
    assert [r["task_id"] for r in entry["regressions"]] == ["T-2", "T-4", "T-6", "T-8"]


@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_killed_mid_run_loses_nothing_and_the_run_is_graded_once(workers, fake):  # noqa: F811
    monitor = _setup(fake)
    fake.set_delay("oa", 1.0)
    first = workers(concurrency=2, extra_env=ENV)
    run = monitor_run_start(monitor=monitor)
    wait_until(
        lambda: Generation.objects.filter(campaign=run.campaign, status="running").count() >= 2,
        timeout=30,
        message="jobs in flight",
    )
    first.kill()
    fake.set_delay("oa", 0.0)
    workers(concurrency=2, extra_env=ENV)

    def graded():
        generation_reconcile(requeue_after=3)  # what beat runs every minute
        run.refresh_from_db()
        return run.status == MonitorRun.Status.DONE

    wait_until(graded, timeout=120, interval=1, message="run graded after the kill")
    rows = Generation.objects.filter(campaign=run.campaign)
    assert rows.count() == 10 and set(rows.values_list("status", flat=True)) == {"done"}
    assert all(1 <= a <= 5 for a in rows.values_list("attempts", flat=True))
    assert run.metrics["oa"]["check_pass_rate"] == 1.0 and run.metrics["oa"]["n_samples"] == 10
