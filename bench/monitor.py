"""Benchmark: a monitor run on real Celery workers, and its comparison with the baseline.

300 tasks x 3 contenders x 3 samples = 2,700 generations against one local endpoint
(tests/fake_llm.py, streaming) that answers after a fixed 200 ms and allows 16 requests at once:
the contenders' own limits add up to 16 (6 + 5 + 5), so the run can finish at most
16 / 0.2 s = 80 generations per second. Run 1 is the baseline; before run 2 the endpoint starts
failing a tenth of the tasks' checks and serving another model to one contender. Reported: each
run's time from start to graded (metrics, comparison, alerts recorded) as a fraction of the
endpoint bound (target >= 85%), the most concurrent requests the endpoint saw (<= 16), and the
comparison of run 2 with run 1 (3 contenders, ~20 metrics each, paired bootstrap of 1,000
rounds over the tasks) timed alone (target < 2 s).

    createdb -h 127.0.0.1 -U postgres evalsite_bench   # once
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite_bench REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/monitor.py [--tasks 300] [--workers 2] [--concurrency 10]
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench.generation import start_workers, stop_workers  # noqa: E402
from evalsite.celery import app  # noqa: E402
from tasks.models import Campaign, Contender, Generation, Monitor, MonitorRun, Task, TestSet  # noqa: E402
from tasks.monitors.compare import compare_runs  # noqa: E402
from tasks.monitors.definition import monitor_create  # noqa: E402
from tasks.monitors.runs import monitor_run_start  # noqa: E402
from tests.fake_llm import FakeLLM  # noqa: E402

LATENCY = 0.2
LIMITS = (6, 5, 5)  # one endpoint's 16 concurrent requests, shared by the three contenders
NAME = "bench-mon"


def setup(fake: FakeLLM, tasks: int, samples: int) -> Monitor:
    for monitor in Monitor.objects.filter(slug=NAME):
        campaigns = list(monitor.runs.values_list("campaign_id", flat=True))
        monitor.delete()
        Generation.objects.filter(campaign_id__in=campaigns).delete()
        Campaign.objects.filter(pk__in=campaigns).delete()
    Contender.objects.filter(name__startswith=NAME).delete()
    TestSet.objects.filter(name=NAME).delete()
    ts = TestSet.objects.create(name=NAME, checksum="0" * 64, task_count=tasks)
    Task.objects.bulk_create(
        Task(
            testset=ts,
            position=i,
            external_id=f"M-{i:03d}",
            category=f"cat-{i % 5}",
            prompt=f"Question {i}?",
            checks={"regex": "answers", "max_chars": 200},
        )
        for i in range(tasks)
    )
    contenders = [
        {
            "name": f"{NAME}-{letter}",
            "provider": "openai",
            "base_url": fake.base_url,
            "model": f"{NAME}-{letter}",
            "max_concurrency": limit,
            "params": {"max_tokens": 64},
            "price_in_per_mtok": 0.1,
            "price_out_per_mtok": 0.4,
        }
        for letter, limit in zip("abc", LIMITS, strict=True)
    ]
    return monitor_create(
        definition={
            "slug": NAME,
            "testset": NAME,
            "contenders": contenders,
            "samples_per_task": samples,
            "thresholds": [
                {"metric": "check_pass_rate", "max_drop": 0.05},
                {"metric": "served_model", "on_change": True},
            ],
        }
    )


def timed_run(monitor: Monitor) -> tuple[MonitorRun, float]:
    started = time.monotonic()
    run = monitor_run_start(monitor=monitor)
    while True:
        run.refresh_from_db()
        if run.status != MonitorRun.Status.GENERATING:
            return run, time.monotonic() - started
        if time.monotonic() - started > 900:
            raise SystemExit("gave up after 900 s")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--pool", default="threads", choices=["threads", "prefork"])
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("set DATABASE_URL (PostgreSQL) and REDIS_URL")
    call_command("migrate", verbosity=0)
    app.control.purge()
    fake = FakeLLM(latency=LATENCY)
    monitor = setup(fake, args.tasks, args.samples)
    total = args.tasks * 3 * args.samples
    bound = sum(LIMITS) / LATENCY
    # Each contender has a third of the work but its own share of the slots: the 5-slot ones
    # finish last, so with this split the run cannot beat 3 x min(limit) / latency = 75/s.
    split_bound = 3 * min(LIMITS) / LATENCY
    procs = start_workers(args.workers, args.pool, args.concurrency, 1)
    try:
        first, t1 = timed_run(monitor)
        failing = {f"Question {i}?" for i in range(0, args.tasks, 10)}
        fake.rewrite(
            f"{NAME}-a",
            lambda a: a.replace("answers", "says") if a.split(": ", 1)[1] in failing else a,
        )
        fake.serve(f"{NAME}-b", f"{NAME}-b-lite")
        second, t2 = timed_run(monitor)
    finally:
        stop_workers(procs)
        fake.close()
    peak = sum(fake.max_active.values())
    print(
        f"{args.workers} workers x {args.pool} {args.concurrency}; {total} generations per run, "
        f"endpoint bound {bound:.0f}/s"
    )
    for run, elapsed in ((first, t1), (second, t2)):
        rate = total / elapsed
        print(
            f"run {run.number}: start -> graded {elapsed:.1f} s = {rate:.1f}/s = "
            f"{rate / bound:.1%} of the endpoint bound, {rate / split_bound:.1%} of the "
            f"6/5/5 split's {split_bound:.0f}/s; "
            f"alerts {len((run.comparison or {}).get('alerts', []))}"
        )
    print(
        f"endpoint peak concurrent requests (sum of per-model peaks) {peak} (limit {sum(LIMITS)})"
    )
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        comparison = compare_runs(first, second)
        timings.append(time.perf_counter() - started)
    entry = comparison["contenders"][f"{NAME}-a"]
    print(
        f"comparison (3 contenders, bootstrap {comparison['bootstrap']['rounds']} rounds): "
        f"best {min(timings):.2f} s, worst {max(timings):.2f} s; "
        f"{NAME}-a regressions {len(entry['regressions'])}, check_pass_rate "
        f"{entry['metrics']['check_pass_rate']}"
    )


if __name__ == "__main__":
    main()
