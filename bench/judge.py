"""Benchmark: judging throughput on real Celery workers, and the calibration's time.

A local OpenAI-compatible endpoint (tests/fake_llm.py, streaming) answers every judgement
after a fixed 200 ms; a judge with a concurrency limit of 16 can therefore finish at most
16 / 0.2 s = 80 judgements per second. The bench makes a settled campaign of 1,000 items (two
outputs each, two reviewers, final outcomes written directly), queues 1,000 x 2 samples x 2
orders = 4,000 judgements and times enqueue -> last row done on real worker processes over
Redis and PostgreSQL. Reported: throughput as a fraction of 80/s (target >= 85%), the largest
number of concurrent requests the endpoint saw (must be <= 16), then the time of the judge's
calibration over the 1,000 settled items (target < 3 s; 1,000 bootstrap rounds).

    createdb -h 127.0.0.1 -U postgres evalsite_bench   # once
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite_bench REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/judge.py [--items 1000] [--workers 2 --concurrency 10]

`--no-judging` writes the 4,000 judgements directly and times only the calibration.
"""

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402
from generation import (  # noqa: E402
    fresh_testset,
    session_cpu_seconds,
    start_workers,
    stop_workers,
)

from evalsite.celery import app  # noqa: E402
from reviews.judges.calibration import judge_calibration  # noqa: E402
from reviews.judges.models import Judgement  # noqa: E402
from reviews.judges.services import judging_enqueue  # noqa: E402
from reviews.models import ItemOutput, Review, ReviewItem, Score  # noqa: E402
from tasks.models import Campaign, Contender, Generation, Judge  # noqa: E402
from tests.fake_llm import FakeLLM  # noqa: E402

LATENCY = 0.2
LIMIT = 16
RUBRIC = [{"key": "accuracy", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1}]


def truth(i: int) -> tuple[int, int]:
    return 1 + (i * 3) % 5, 1 + (i * 7 + 2) % 5


def setup(items: int) -> Campaign:
    """A settled campaign: each output says its quality; two reviewers agree (one of them a
    point higher on every fifth output)."""
    testset = fresh_testset("bench-judge", items)
    Judge.objects.filter(name__startswith="bench-judge").delete()
    contenders = []
    for name in ("bench-judge-x", "bench-judge-y"):
        Contender.objects.filter(name=name).delete()
        contenders.append(Contender.objects.create(name=name, provider="openai", model=name))
    campaign = Campaign.objects.create(
        slug=f"bench-judge-{int(time.time())}",
        name="bench judge",
        testset=testset,
        rubric=RUBRIC,
        mode="both",
        status="reviewing",
    )
    campaign.contenders.set(contenders)
    users = [
        get_user_model().objects.get_or_create(username=f"bench-judge-r{n}")[0] for n in (1, 2)
    ]
    tasks = list(testset.tasks.order_by("position"))
    gens = Generation.objects.bulk_create(
        Generation(
            campaign=campaign,
            task=task,
            contender=c,
            sample_index=0,
            status="done",
            output=f"Quality {truth(i)[k]} of 5. Restart the router.",
        )
        for i, task in enumerate(tasks)
        for k, c in enumerate(contenders)
    )
    item_rows = ReviewItem.objects.bulk_create(
        ReviewItem(
            campaign=campaign,
            task=task,
            sample_index=0,
            overlap=2,
            ready=True,
            state="agreed",
            submitted_count=2,
            live_count=2,
            shuffle_key=random.randrange(100000),
        )
        for task in tasks
    )
    outputs = ItemOutput.objects.bulk_create(
        ItemOutput(item=item, generation=gens[2 * i + k])
        for i, item in enumerate(item_rows)
        for k in range(2)
    )
    now = timezone.now()
    reviews = Review.objects.bulk_create(
        Review(item=item, reviewer=u, submitted_at=now, preference="tie")
        for item in item_rows
        for u in users
    )
    scores, finals = [], []
    for i, item in enumerate(item_rows):
        pair = outputs[2 * i : 2 * i + 2]
        final = {}
        for k, output in enumerate(pair):
            value = truth(i)[k]
            bump = 1 if (2 * i + k) % 5 == 4 and value < 5 else 0
            scores.append(
                Score(review=reviews[2 * i], output=output, dimension="accuracy", value=value)
            )
            scores.append(
                Score(
                    review=reviews[2 * i + 1],
                    output=output,
                    dimension="accuracy",
                    value=value + bump,
                )
            )
            final[str(output.pk)] = {"accuracy": value + bump / 2}
        item.final = {"scores": final, "preference": "tie", "flags": {}}
        finals.append(item)
    Score.objects.bulk_create(scores, batch_size=5000)
    ReviewItem.objects.bulk_update(finals, ["final"], batch_size=1000)
    return campaign


def agreeing(request):
    import re

    values = {k: int(re.search(r"Quality (\d)", t).group(1)) for k, t in request.answers.items()}
    return {
        "reasoning": "compared",
        "scores": {k: {"accuracy": v} for k, v in values.items()},
        "preference": "tie",
    }


def judged_directly(campaign: Campaign, judge: Judge) -> None:
    """The 4,000 rows as if judged (for timing the calibration alone)."""
    rows = []
    for item in ReviewItem.objects.filter(campaign=campaign).prefetch_related(
        "outputs__generation"
    ):
        outs = list(item.outputs.all())
        for sample in range(judge.samples):
            for swapped in (False, True):
                scores = {
                    str(o.pk): {"accuracy": int(o.generation.output.split()[1])} for o in outs
                }
                rows.append(
                    Judgement(
                        judge=judge,
                        campaign=campaign,
                        item=item,
                        sample=sample,
                        swapped=swapped,
                        order=[o.pk for o in outs],
                        status="done",
                        scores=scores,
                        preference="tie",
                    )
                )
    Judgement.objects.bulk_create(rows, batch_size=2000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--pool", default="threads", choices=["threads", "prefork"])
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency", type=float, default=LATENCY)
    parser.add_argument("--no-judging", action="store_true")
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("set DATABASE_URL (PostgreSQL) and REDIS_URL")
    call_command("migrate", verbosity=0)
    app.control.purge()
    fake = FakeLLM(latency=args.latency)
    fake.judge("bench-judge-model", agreeing)
    campaign = setup(args.items)
    judge = Judge.objects.create(
        name=f"bench-judge-{int(time.time())}",
        provider="openai",
        base_url=fake.base_url,
        model="bench-judge-model",
        max_concurrency=LIMIT,
        samples=args.samples,
        position_swap=True,
    )
    total = args.items * args.samples * 2
    if args.no_judging:
        judged_directly(campaign, judge)
    else:
        procs = start_workers(args.workers, args.pool, args.concurrency, 1)
        sessions = {p.pid for p in procs}
        load_before = os.getloadavg()[0]
        cpu_before = session_cpu_seconds(sessions)
        try:
            started = time.monotonic()
            judging_enqueue(campaign=campaign, judge=judge)
            rows = Judgement.objects.filter(judge=judge)
            while rows.filter(status__in=["pending", "running"]).exists():
                time.sleep(0.5)
            elapsed = time.monotonic() - started
            cpu = session_cpu_seconds(sessions) - cpu_before
        finally:
            stop_workers(procs)
        done = rows.filter(status="done").count()
        bound = LIMIT / args.latency
        print(
            f"judging: {done} of {total} done in {elapsed:.1f} s = {done / elapsed:.1f}/s, "
            f"{done / elapsed / bound:.0%} of the endpoint-bound {bound:.0f}/s; "
            f"largest concurrency seen {fake.max_active['bench-judge-model']} (limit {LIMIT}); "
            f"failed {rows.filter(status='failed').count()}; worker CPU {cpu:.1f} s = "
            f"{cpu / max(done, 1) * 1000:.1f} ms per judgement; load average {load_before:.1f} "
            f"-> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
    started = time.perf_counter()
    out = judge_calibration(campaign=campaign, judge=judge)
    elapsed = time.perf_counter() - started
    accuracy = out["dimensions"]["accuracy"]
    print(
        f"calibration of {accuracy['n']} settled items ({out['judgements']} judgements, 1000 "
        f"bootstrap rounds): {elapsed:.2f} s; accuracy {accuracy['verdict']}"
    )
    fake.close()


if __name__ == "__main__":
    main()
