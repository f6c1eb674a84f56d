"""Benchmark: a slow contender at its concurrency limit must not hold up another contender.

One campaign, two contenders on a local endpoint (tests/fake_llm.py): "slow" answers after
1 s with a concurrency limit of 1, "fast" after 0.2 s with a limit of 2. Both have one row
per task (60 by default), so the slow contender always has a long queue of rows whose claim
finds its only slot taken. The fast contender could finish in 60 / 2 x 0.2 s = 6 s (12 s
when the worker has only 2 slots: the slow call always holds one);
the bench times enqueue -> the fast contender's last row done on real `celery worker`
processes over Redis and PostgreSQL, and reports how many slow rows were done by then (about
one per second is all its limit allows) and the worker CPU spent meanwhile (busy claims that
re-queue cost a broker round trip each). The campaign is cancelled afterwards.

    createdb -h 127.0.0.1 -U postgres evalsite_bench   # once
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite_bench REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/generation_fairness.py --pool prefork --concurrency 2
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from generation import (  # noqa: E402 - sets Django up
    fresh_testset,
    session_cpu_seconds,
    start_workers,
    stop_workers,
)

from evalsite.celery import app  # noqa: E402
from tasks.campaigns.definition import campaign_create  # noqa: E402
from tasks.generation.services import generation_cancel, generation_enqueue  # noqa: E402
from tasks.models import Campaign, Generation  # noqa: E402
from tests.fake_llm import FakeLLM  # noqa: E402


def setup(fake: FakeLLM, tasks: int, fast_limit: int) -> Campaign:
    fresh_testset("bench-fair", tasks)
    stamp = int(time.time())
    campaign, _ = campaign_create(
        definition={
            "slug": f"bench-fair-{stamp}",
            "testset": "bench-fair",
            "mode": "pairwise",
            "rubric": [],
            "contenders": [
                {
                    "name": f"bench-fair-{name}-{stamp}",
                    "provider": "openai",
                    "base_url": fake.base_url,
                    "model": name,
                    "max_concurrency": limit,
                    "params": {"max_tokens": 16},
                }
                for name, limit in (("slow", 1), ("fast", fast_limit))
            ],
        }
    )
    return campaign


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--pool", default="prefork", choices=["threads", "prefork"])
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--slow", type=float, default=1.0, help="slow contender's latency, s")
    parser.add_argument("--fast", type=float, default=0.2, help="fast contender's latency, s")
    parser.add_argument("--fast-limit", type=int, default=2)
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("set DATABASE_URL (PostgreSQL) and REDIS_URL")
    call_command("migrate", verbosity=0)
    app.control.purge()
    fake = FakeLLM()
    fake.set_delay("slow", args.slow)
    fake.set_delay("fast", args.fast)
    campaign = setup(fake, args.tasks, args.fast_limit)
    rows = Generation.objects.filter(campaign=campaign)
    fast = rows.filter(contender__model="fast")
    slow = rows.filter(contender__model="slow")
    procs = start_workers(args.workers, args.pool, args.concurrency, 1)
    sessions = {proc.pid for proc in procs}
    try:
        cpu_before = session_cpu_seconds(sessions)
        started = time.monotonic()
        generation_enqueue(campaign=campaign)
        while fast.filter(status__in=["done", "failed"]).count() < args.tasks:
            if time.monotonic() - started > 600:
                raise SystemExit("gave up after 600 s")
            time.sleep(0.1)
        elapsed = time.monotonic() - started
        worker_cpu = session_cpu_seconds(sessions) - cpu_before
        slow_done = slow.filter(status="done").count()
        generation_cancel(campaign=campaign)
    finally:
        stop_workers(procs)
        fake.close()
    # The slow contender's call always holds one of the worker slots.
    lanes = min(args.fast_limit, args.workers * args.concurrency - 1)
    ideal = args.tasks / lanes * args.fast
    print(
        f"pool={args.pool} workers={args.workers} x concurrency={args.concurrency}; "
        f"{args.tasks} rows each: slow (limit 1, {args.slow} s), "
        f"fast (limit {args.fast_limit}, {args.fast} s)"
    )
    print(
        f"fast contender done in {elapsed:.1f} s (its limit and the free slots allow "
        f"{ideal:.1f} s, "
        f"{elapsed / ideal:.1f}x); slow rows done by then: {slow_done}; "
        f"endpoint max concurrent slow {fake.max_active['slow']} fast {fake.max_active['fast']}"
    )
    print(
        f"fast failed {fast.filter(status='failed').count()}; worker CPU {worker_cpu:.1f} s; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
