"""Benchmark: streamed review-record export (JSONL and CSV) at 10,000 items / 20,000 reviews.

Builds (once, with bulk inserts) a campaign of N items x 2 contenders x 2 reviewers x 3 rubric
dimensions, then times `records_export` end to end (every byte produced and written to
/dev/null), and measures the peak Python heap with tracemalloc in a separate pass (tracemalloc
slows the code, so it never runs during the timed pass). The same is done at 2x the size to
show that memory does not grow with the campaign.

    createdb -h 127.0.0.1 -U postgres evalsite_bench   # once
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite_bench .venv/bin/python bench/export.py

Options: --items N (default 10000), --no-double (skip the 2x campaign), --repeat R (timed runs).
"""

import argparse
import os
import resource
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from reviews.models import Assignment, ItemOutput, Review, ReviewItem, Score  # noqa: E402
from reviews.records import records_export  # noqa: E402
from tasks.models import Campaign, Contender, Generation, Task, TestSet  # noqa: E402

DIMS = ["accuracy", "completeness", "tone"]
SAMPLES = 4
BATCH = 5000


def build(items: int) -> Campaign:
    slug = f"bench-export-{items}"
    existing = Campaign.objects.filter(slug=slug).first()
    if existing is not None and ReviewItem.objects.filter(campaign=existing).count() == items:
        return existing
    if existing is not None:
        raise SystemExit(
            f"campaign {slug} exists but is incomplete; drop the database and run again"
        )
    n_tasks = items // SAMPLES
    t0 = time.perf_counter()
    with transaction.atomic():
        testset = TestSet.objects.create(
            name=slug, checksum="0" * 64, frozen=True, task_count=n_tasks
        )
        Task.objects.bulk_create(
            [
                Task(
                    testset=testset,
                    position=i,
                    external_id=f"T-{i:05d}",
                    category=f"cat_{i % 7}",
                    tier=("base", "advanced", "boundary")[i % 3],
                    prompt=f"Summarize ticket {i} for the support lead, in two sentences.",
                )
                for i in range(n_tasks)
            ],
            batch_size=BATCH,
        )
        tasks = list(Task.objects.filter(testset=testset).order_by("position"))
        contenders = [
            Contender.objects.get_or_create(
                name=f"bench-model-{c}", defaults={"provider": "imported"}
            )[0]
            for c in "xy"
        ]
        campaign = Campaign.objects.create(
            slug=slug,
            name=slug,
            testset=testset,
            samples_per_task=SAMPLES,
            reviewed_samples=SAMPLES,
            overlap=2,
            mode="both",
            status="reviewing",
            rubric=[{"key": d, "min": 1, "max": 5, "level": "ordinal", "max_gap": 1} for d in DIMS],
        )
        campaign.contenders.set(contenders)
        Generation.objects.bulk_create(
            [
                Generation(
                    campaign=campaign,
                    task=t,
                    contender=c,
                    sample_index=s,
                    status="done",
                    output=f"Answer {s} of {c.name} to {t.external_id}.",
                    latency_ms=800 + s,
                )
                for t in tasks
                for c in contenders
                for s in range(SAMPLES)
            ],
            batch_size=BATCH,
        )
        gens = {
            (g.task_id, g.contender_id, g.sample_index): g.pk
            for g in Generation.objects.filter(campaign=campaign).only(
                "id", "task_id", "contender_id", "sample_index"
            )
        }
        ReviewItem.objects.bulk_create(
            [
                ReviewItem(
                    campaign=campaign,
                    task=t,
                    sample_index=s,
                    overlap=2,
                    ready=True,
                    state="agreed",
                    submitted_count=2,
                    live_count=2,
                    shuffle_key=(t.position * 7919 + s) % 100003,
                )
                for t in tasks
                for s in range(SAMPLES)
            ],
            batch_size=BATCH,
        )
        item_rows = list(
            ReviewItem.objects.filter(campaign=campaign).values_list(
                "id", "task_id", "sample_index"
            )
        )
        ItemOutput.objects.bulk_create(
            [
                ItemOutput(item_id=i, generation_id=gens[(t, c.pk, s)])
                for i, t, s in item_rows
                for c in contenders
            ],
            batch_size=BATCH,
        )
        outputs: dict[int, list[int]] = {}
        for oid, iid in (
            ItemOutput.objects.filter(item__campaign=campaign)
            .order_by("id")
            .values_list("id", "item_id")
        ):
            outputs.setdefault(iid, []).append(oid)
        User = get_user_model()
        reviewers = [User.objects.get_or_create(username=f"bench_reviewer_{r}")[0] for r in (1, 2)]
        start = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
        Assignment.objects.bulk_create(
            [
                Assignment(
                    item_id=i,
                    campaign=campaign,
                    reviewer=reviewers[r],
                    slot=r,
                    overlap=2,
                    state="submitted",
                    order=outputs[i] if (i + r) % 2 == 0 else outputs[i][::-1],
                    lease_expires_at=start,
                    submitted_at=start,
                )
                for i, _t, _s in item_rows
                for r in (0, 1)
            ],
            batch_size=BATCH,
        )
        assignments = {
            (a_item, a_rev): (a_id, order)
            for a_id, a_item, a_rev, order in Assignment.objects.filter(
                item__campaign=campaign
            ).values_list("id", "item_id", "reviewer_id", "order")
        }
        reviews = []
        for n, (i, _t, _s) in enumerate(item_rows):
            for r, reviewer in enumerate(reviewers):
                a_id, order = assignments[(i, reviewer.pk)]
                reviews.append(
                    Review(
                        item_id=i,
                        assignment_id=a_id,
                        reviewer=reviewer,
                        preference="output",
                        preferred_output_id=outputs[i][n % 2],
                        flags={str(outputs[i][1]): ["hallucination"]} if n % 13 == 0 else {},
                        comment="=looks fine"
                        if n % 17 == 0
                        else ("" if n % 3 else "Clear and correct, slightly long."),
                        seconds_spent=30 + (n * 7 + r) % 90,
                        submitted_at=start + timedelta(seconds=n * 3 + r),
                        presented_order=order,
                    )
                )
        Review.objects.bulk_create(reviews, batch_size=BATCH)
        review_rows = Review.objects.filter(item__campaign=campaign).values_list(
            "id", "item_id", "reviewer_id"
        )
        Score.objects.bulk_create(
            [
                Score(review_id=rid, output_id=o, dimension=d, value=float(1 + (rid + k + j) % 5))
                for rid, iid, _rev in review_rows
                for k, o in enumerate(outputs[iid])
                for j, d in enumerate(DIMS)
            ],
            batch_size=BATCH,
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"built {slug}: {items} items, {Review.objects.filter(item__campaign=campaign).count()} reviews, "
        f"{Score.objects.filter(review__item__campaign=campaign).count()} scores in {time.perf_counter() - t0:.1f} s"
    )
    return campaign


def run_export(campaign: Campaign, fmt: str, unblind: bool) -> tuple[int, int]:
    lines = size = 0
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for chunk in records_export(campaign=campaign, fmt=fmt, unblind=unblind):
            sink.write(chunk)
            lines += 1
            size += len(chunk)
    return lines, size


def measure(campaign: Campaign, repeat: int) -> list[dict]:
    results = []
    for fmt in ("jsonl", "csv"):
        for unblind in (False, True):
            run_export(campaign, fmt, unblind)  # warm the database cache and imports
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                lines, size = run_export(campaign, fmt, unblind)
                times.append(time.perf_counter() - t0)
            tracemalloc.start()
            run_export(campaign, fmt, unblind)
            _current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            results.append(
                {
                    "fmt": fmt,
                    "unblind": unblind,
                    "lines": lines,
                    "mb": size / 1e6,
                    "best_s": min(times),
                    "median_s": sorted(times)[len(times) // 2],
                    "peak_mib": peak / 2**20,
                }
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--no-double", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("run this on PostgreSQL: set DATABASE_URL=postgres://...")
    call_command("migrate", verbosity=0)
    sizes = [args.items] if args.no_double else [args.items, args.items * 2]
    campaigns = [build(n) for n in sizes]
    print(
        f"\n{'items':>6} {'reviews':>7} {'format':<12} {'lines':>6} {'MB':>6} {'best s':>7} {'median s':>8} {'peak heap MiB':>13}"
    )
    for n, campaign in zip(sizes, campaigns, strict=True):
        for r in measure(campaign, args.repeat):
            label = r["fmt"] + (" unblind" if r["unblind"] else "")
            print(
                f"{n:>6} {2 * n:>7} {label:<12} {r['lines']:>6} {r['mb']:>6.1f} {r['best_s']:>7.2f} "
                f"{r['median_s']:>8.2f} {r['peak_mib']:>13.1f}"
            )
    print(
        f"\nprocess max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB "
        "(includes building the campaigns)"
    )


if __name__ == "__main__":
    main()
