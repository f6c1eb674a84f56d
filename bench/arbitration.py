"""Benchmark: disputes at scale. The lead's disputes view, settling, and racing arbiters.

Builds (once, with bulk inserts) a campaign of N disputed items (2 contenders, 2 reviewers,
2 rubric dimensions, dispute reasons as `item_settle` writes them, an open Arbitration each),
then measures:

* the lead's disputes view (`/campaigns/<slug>/disputes/`): first page, filtered by dimension,
  by reviewer and by status (best and median of R runs, through Django's test client);
* `item_settle` on 500 of the items (re-settling is idempotent);
* claim + resolve with T arbiter threads, each with its own connection, until C arbitrations
  are resolved: claim and resolve latency (p50/p95) and throughput, and a check that no item
  was handed to two arbiters.

    createdb -h 127.0.0.1 -U postgres evalsite_bench_arb   # once
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite_bench_arb .venv/bin/python bench/arbitration.py

Options: --items N (default 10000), --threads T (4), --claims C (400), --repeat R (5).
"""

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from reviews.arbitration.services import arbitration_claim_next, arbitration_resolve  # noqa: E402
from reviews.disputes.rules import item_settle  # noqa: E402
from reviews.models import Arbitration, ItemOutput, Review, ReviewItem, Score  # noqa: E402
from reviews.rubric import label_map  # noqa: E402
from tasks.models import Campaign, Contender, Generation, Task, TestSet  # noqa: E402

BATCH = 5000
RUBRIC = [
    {"key": "accuracy", "min": 1, "max": 5, "max_gap": 1},
    {"key": "completeness", "min": 1, "max": 5, "max_gap": 1, "allow_na": True},
]


def user(name: str, role: str):
    u, _ = get_user_model().objects.get_or_create(username=name)
    u.groups.add(Group.objects.get_or_create(name=role)[0])
    return u


def build(items: int) -> Campaign:
    slug = f"bench-arb-{items}"
    existing = Campaign.objects.filter(slug=slug).first()
    if existing is not None:
        Arbitration.objects.filter(item__campaign=existing).update(
            state="open",
            arbiter=None,
            lease_expires_at=None,
            note="",
            final_values=None,
            resolved_at=None,
        )
        ReviewItem.objects.filter(campaign=existing).update(state="disputed")
        return existing
    t0 = time.perf_counter()
    r1, r2 = user("bench_rev1", "reviewer"), user("bench_rev2", "reviewer")
    with transaction.atomic():
        ts = TestSet.objects.create(name=slug, checksum="0" * 64, frozen=True, task_count=items)
        Task.objects.bulk_create(
            [
                Task(
                    testset=ts,
                    position=i,
                    external_id=f"T-{i:05d}",
                    category="support",
                    prompt=f"Summarize ticket {i}.",
                )
                for i in range(items)
            ],
            batch_size=BATCH,
        )
        tasks = list(Task.objects.filter(testset=ts).order_by("position"))
        cs = [Contender.objects.create(name=f"{slug}-{n}", provider="imported") for n in ("x", "y")]
        campaign = Campaign.objects.create(
            slug=slug, name=slug, testset=ts, rubric=RUBRIC, mode="both", status="reviewing"
        )
        campaign.contenders.set(cs)
        Generation.objects.bulk_create(
            [
                Generation(
                    campaign=campaign,
                    task=t,
                    contender=c,
                    sample_index=0,
                    status="done",
                    output=f"Answer from {c.pk} to {t.external_id}: restart the router.",
                )
                for t in tasks
                for c in cs
            ],
            batch_size=BATCH,
        )
        gens = {
            (g.task_id, g.contender_id): g.pk for g in Generation.objects.filter(campaign=campaign)
        }
        ReviewItem.objects.bulk_create(
            [
                ReviewItem(
                    campaign=campaign,
                    task=t,
                    sample_index=0,
                    overlap=2,
                    ready=True,
                    state="open",
                    submitted_count=2,
                    shuffle_key=(i * 7919) % 100003,
                )
                for i, t in enumerate(tasks)
            ],
            batch_size=BATCH,
        )
        items_ = list(ReviewItem.objects.filter(campaign=campaign).order_by("pk"))
        ItemOutput.objects.bulk_create(
            [
                ItemOutput(item=it, generation_id=gens[(it.task_id, c.pk)])
                for it in items_
                for c in cs
            ],
            batch_size=BATCH,
        )
        outs: dict[int, list[int]] = {}
        for pk, item_id in (
            ItemOutput.objects.filter(item__campaign=campaign)
            .order_by("pk")
            .values_list("pk", "item_id")
        ):
            outs.setdefault(item_id, []).append(pk)
        now = timezone.now()
        Review.objects.bulk_create(
            [
                Review(
                    item=it,
                    reviewer=r,
                    preference="output",
                    preferred_output_id=outs[it.pk][n],
                    submitted_at=now,
                    presented_order=outs[it.pk],
                )
                for it in items_
                for n, r in enumerate((r1, r2))
            ],
            batch_size=BATCH,
        )
        reviews = Review.objects.filter(item__campaign=campaign).values_list(
            "pk", "item_id", "reviewer_id"
        )
        scores = []
        for pk, item_id, reviewer_id in reviews:
            o1, o2 = outs[item_id]
            far = (
                5 if reviewer_id == r1.pk else (2 if item_id % 2 else 4)
            )  # half disputed on accuracy
            scores += [
                Score(review_id=pk, output_id=o1, dimension="accuracy", value=far),
                Score(review_id=pk, output_id=o1, dimension="completeness", value=4),
                Score(review_id=pk, output_id=o2, dimension="accuracy", value=3),
                Score(review_id=pk, output_id=o2, dimension="completeness", value=3),
            ]
        Score.objects.bulk_create(scores, batch_size=BATCH)
    t1 = time.perf_counter()
    for it in ReviewItem.objects.filter(campaign=campaign).select_related("campaign"):
        item_settle(it)
    print(f"built {items} items in {t1 - t0:.1f} s, settled in {time.perf_counter() - t1:.1f} s")
    return campaign


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm-up
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return min(runs), statistics.median(runs)


def bench_view(campaign: Campaign, repeat: int) -> None:
    client = Client()
    client.force_login(user("bench_lead", "lead"))
    base = f"/campaigns/{campaign.slug}/disputes/"
    print("\n| disputes view | best | median |\n|---|---:|---:|")
    for label, query in [
        ("first page", ""),
        ("dimension=accuracy", "?dimension=accuracy"),
        ("reviewer=bench_rev1", "?reviewer=bench_rev1"),
        ("status=open", "?status=open"),
        ("page 100", "?page=100"),
    ]:

        def get(q=query):
            response = client.get(base + q)
            assert response.status_code == 200, response.status_code

        best, median = timed(get, repeat)
        print(f"| {label} | {best * 1000:.0f} ms | {median * 1000:.0f} ms |")


def bench_settle(campaign: Campaign) -> None:
    items = list(
        ReviewItem.objects.filter(campaign=campaign).select_related("campaign").order_by("pk")[:500]
    )
    t = time.perf_counter()
    for it in items:
        item_settle(it)
    took = time.perf_counter() - t
    print(f"\nitem_settle: 500 items in {took:.2f} s ({took / 500 * 1000:.1f} ms per item)")


def bench_claims(campaign: Campaign, threads: int, claims: int) -> None:
    arbiters = [user(f"bench_arb{i}", "arbiter") for i in range(threads)]
    claim_ms, resolve_ms, got = [], [], []
    lock = threading.Lock()
    remaining = [claims]

    def work(arbiter):
        try:
            while True:
                with lock:
                    if remaining[0] <= 0:
                        return
                    remaining[0] -= 1
                t = time.perf_counter()
                arbitration = arbitration_claim_next(campaign=campaign, arbiter=arbiter)
                t1 = time.perf_counter()
                if arbitration is None:
                    return
                label = label_map(arbitration.order)
                item = arbitration.item
                scores = {}
                for part in item.dispute_reasons:
                    if part["part"] in ("accuracy", "completeness"):
                        out_label = next(k for k, v in label.items() if v == part["output"])
                        scores.setdefault(out_label, {})[part["part"]] = 4
                arbitration_resolve(
                    token=arbitration.token,
                    arbiter=arbiter,
                    scores=scores,
                    preference="tie",
                    note="bench",
                )
                t2 = time.perf_counter()
                with lock:
                    claim_ms.append((t1 - t) * 1000)
                    resolve_ms.append((t2 - t1) * 1000)
                    got.append(arbitration.item_id)
        finally:
            connection.close()

    t = time.perf_counter()
    pool = [threading.Thread(target=work, args=(a,)) for a in arbiters]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    wall = time.perf_counter() - t
    assert len(got) == len(set(got)), "an item was handed to two arbiters"
    q = statistics.quantiles
    print(
        f"\n{threads} arbiters resolved {len(got)} disputes in {wall:.1f} s ({len(got) / wall:.0f}/s); "
        f"claim p50 {statistics.median(claim_ms):.1f} ms p95 {q(claim_ms, n=20)[18]:.1f} ms; "
        f"resolve p50 {statistics.median(resolve_ms):.1f} ms p95 {q(resolve_ms, n=20)[18]:.1f} ms; "
        f"duplicates: 0"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--claims", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("run on PostgreSQL: set DATABASE_URL")
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    call_command("migrate", verbosity=0)
    campaign = build(args.items)
    disputed = Arbitration.objects.filter(item__campaign=campaign).count()
    print(f"campaign {campaign.slug}: {args.items} items, {disputed} disputes")
    bench_view(campaign, args.repeat)
    bench_settle(campaign)
    bench_claims(campaign, args.threads, args.claims)


if __name__ == "__main__":
    main()
