"""Demo step: the "support-golden" monitor with four past runs, so a newcomer sees a trend, a
regression and a served-model change with their alerts.

The runs are real runs (hidden campaigns, generation rows, graded by monitor_run_finish); only
their answers are written here rather than fetched, from the demo's shipped outputs: no
endpoint is called. Run 3 has two tasks that stop passing their checks; in run 4 the endpoint
serves another model to one contender. The monitor runs on demand ("Run now" calls the
contenders' base_url, http://127.0.0.1:8001/v1: `python -m tests.fake_llm` style endpoints).
Idempotent: a second run finds the monitor and writes nothing.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from tasks.checks.automatic import run_checks
from tasks.models import Contender, Generation
from tasks.monitors.definition import monitor_create
from tasks.monitors.grading import monitor_run_finish
from tasks.monitors.models import Monitor, MonitorRun
from tasks.monitors.runs import monitor_run_create

OUTPUTS = Path(__file__).resolve().parent.parent / "demo" / "demo_data"
SLUG = "support-golden"
CONTENDERS = {
    # monitor contender: (shipped outputs of, served model)
    "northwind-api": ("northwind-large", "northwind-large-2026-10"),
    "zephyr-api": ("northwind-small", "zephyr-7b-instruct"),
}
SAMPLES = 2


def shipped_answers() -> dict:
    out = {}
    for line in (OUTPUTS / "support-demo-outputs.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["sample"] == 0:
            out[(row["contender"], row["task_id"])] = row
    return out


def load(context: dict, stdout) -> dict:
    if Monitor.objects.filter(slug=SLUG).exists():
        stdout.write(f"Monitor {SLUG}: already loaded")
        return {}
    testset = context["testset"]
    _contenders_create()
    monitor = _monitor_create(testset=testset, user=context.get("users", {}).get("admin"))
    answers = shipped_answers()
    rng = random.Random(26)
    now = timezone.now()
    for number in range(1, 5):
        with transaction.atomic():  # the run number is taken under a lock of the monitor row
            run = monitor_run_create(monitor=monitor, scheduled_for=None, baseline=None)
        run_answer(run=run, number=number, answers=answers, rng=rng, now=now)
        monitor_run_finish(run_id=run.pk)
        when = now - timedelta(days=4 - number, hours=2)
        MonitorRun.objects.filter(pk=run.pk).update(created_at=when, finished_at=when)
        run.alerts.update(created_at=when)
    alerts = sum(r.alerts.count() for r in monitor.runs.all())
    stdout.write(
        f"Monitor {SLUG}: 4 past runs, {alerts} alerts (a regression, a served-model change)"
    )
    return {"monitor": monitor}


def _contenders_create() -> None:
    """The monitor's two contenders, pointing at the local fake endpoint."""
    for name in CONTENDERS:
        Contender.objects.get_or_create(
            name=name,
            defaults={
                "provider": "openai",
                "base_url": "http://127.0.0.1:8001/v1",
                "model": name,
                "price_in_per_mtok": Decimal("0.5"),
                "price_out_per_mtok": Decimal("1.5"),
            },
        )


def _monitor_create(*, testset, user) -> Monitor:
    """The support-golden monitor over the demo's test set, with its four thresholds."""
    return monitor_create(
        definition={
            "slug": SLUG,
            "name": "Support golden set",
            "testset": testset.name,
            "version": testset.version,
            "contenders": list(CONTENDERS),
            "samples_per_task": SAMPLES,
            "baseline": "first",
            "thresholds": [
                {"metric": "check_pass_rate", "max_drop": 0.05},
                {"metric": "latency_ms.p95", "max_rise": 0.25},
                {"metric": "served_model", "on_change": True},
                {"metric": "regressed_tasks", "max": 1},
            ],
        },
        user=user,
    )


def run_answer(*, run: MonitorRun, number: int, answers: dict, rng: random.Random, now) -> None:
    """Write run `number`'s answers from the shipped outputs: run 3 regresses two tasks, run 4
    is served another model for one contender."""
    rows = Generation.objects.filter(campaign=run.campaign).select_related("task", "contender")
    for gen in rows:
        source, served = CONTENDERS[gen.contender.name]
        shipped = answers[(source, gen.task.external_id)]
        text = shipped["output"]
        if (
            number == 3
            and source == "northwind-large"
            and gen.task.external_id
            in (
                "SUP-001",
                "SUP-007",
            )
        ):
            # The regression: the answer loses what its check requires.
            text = text.replace("30 days", "a month").replace("carrier", "shop")
        if number == 4 and source == "northwind-small":
            served = "zephyr-3b-lite"  # the endpoint routed to a lighter model
        results, passed = run_checks(text, gen.task.checks)
        latency = int(shipped["latency_ms"] * rng.uniform(0.85, 1.15))
        Generation.objects.filter(pk=gen.pk).update(
            status=Generation.Status.DONE,
            output=text,
            input_tokens=shipped["input_tokens"],
            output_tokens=shipped["output_tokens"],
            latency_ms=latency,
            ttft_ms=int(shipped["ttft_ms"] * rng.uniform(0.85, 1.15)),
            cost=Decimal(shipped["input_tokens"] * 0.5 + shipped["output_tokens"] * 1.5)
            / 1_000_000,
            finish_reason="stop",
            served_model=served,
            check_results=results,
            checks_passed=passed,
            attempts=1,
            finished_at=now,
        )
