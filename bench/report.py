"""Benchmark: the full campaign report (every statistic, 1,000 bootstrap rounds).

Builds a synthetic campaign: 300 tasks x 4 contenders x 5 samples, every sample reviewed by
2 of 6 reviewers on 5 rubric dimensions (~60,000 scores), with preferences, disputes and
arbitrations; then times `reviews.report.campaign.build_report` on in-memory frames (the statistics
core), at 1x and 10x. With ``--database-url`` it also writes the 1x campaign to that database
and times `campaign_report(campaign=...)` end to end (bulk reads + statistics).

    .venv/bin/python bench/report.py
    .venv/bin/python bench/report.py --database-url postgres://postgres@127.0.0.1:5432/evalsite_bench
    .venv/bin/python bench/report.py --scales 1 --database-url sqlite

Use a throwaway database: the script migrates it and deletes the campaign it made.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUBRIC = [
    {"key": "accuracy", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1},
    {"key": "completeness", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1},
    {"key": "clarity", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1},
    {
        "key": "hallucination",
        "min": 1,
        "max": 5,
        "level": "ordinal",
        "max_gap": 1,
        "direction": "lower",
    },
    {"key": "format", "min": 0, "max": 10, "level": "interval", "max_gap": 2},
]
CATEGORIES = ["summary", "extraction", "classification", "reasoning", "drafting", "qa"]
TIERS = ["base", "advanced", "boundary"]
POSITIONS = ["start", "middle", "end"]
BUCKETS = ["short", "medium", "long", "very_long"]
# every kind of gate, so the benchmark times all of them
GATES = {
    "min_quality": 0.5,
    "min_tier": {"boundary": 0.4},
    "min_category": {"summary": 0.5},
    "max_flag_rate": {"unsafe": 0.05},
    "max_latency_ms": {"p95": 4000},
    "max_cost_per_task": 0.01,
    "min_stability": 0.5,
}


def synthetic(
    tasks: int = 300, contenders: int = 4, samples: int = 5, reviewers: int = 6, seed: int = 7
):
    """(frames dict, meta) for a synthetic campaign, built with numpy (no database)."""
    rng = np.random.default_rng(seed)
    k, d = contenders, len(RUBRIC)
    skill = np.linspace(-0.6, 0.6, k)
    task_ids = np.arange(1, tasks + 1)
    task_frame = pd.DataFrame(
        {
            "id": task_ids,
            "external_id": [f"T-{i:05d}" for i in task_ids],
            "category": [CATEGORIES[i % len(CATEGORIES)] for i in range(tasks)],
            "tier": [TIERS[i % len(TIERS)] for i in range(tasks)],
            # the metadata keys the campaign slices by (slice_by)
            "meta:position": [POSITIONS[i % len(POSITIONS)] for i in range(tasks)],
            "meta:doc_length_bucket": [BUCKETS[(i // 3) % len(BUCKETS)] for i in range(tasks)],
        }
    )
    contender_frame = pd.DataFrame(
        {
            "id": np.arange(1, k + 1),
            "name": [f"model-{c}" for c in range(k)],
            "price_in": [0.15 * (c + 1) for c in range(k)],
            "price_out": [0.6 * (c + 1) for c in range(k)],
            "params": [{"temperature": 0.7, "seed": 7 + c} for c in range(k)],
        }
    )
    # generations: (task, contender, sample)
    t, c, s = np.meshgrid(task_ids, np.arange(k), np.arange(samples), indexing="ij")
    t, c, s = t.ravel(), c.ravel(), s.ravel()
    n_gen = len(t)
    gens = pd.DataFrame(
        {
            "id": np.arange(1, n_gen + 1),
            "task": t,
            "contender": c + 1,
            "sample": s,
            "status": np.where(rng.random(n_gen) < 0.01, "failed", "done"),
            "cost": np.nan,
            "input_tokens": rng.integers(200, 2000, n_gen).astype(float),
            "output_tokens": rng.integers(50, 800, n_gen).astype(float),
            "latency_ms": rng.gamma(4, 300, n_gen).round(),
            "ttft_ms": rng.gamma(2, 120, n_gen).round(),
            # answer length in characters: stronger contenders write a little more
            "output_chars": rng.gamma(4, 100 + 20 * c).round(),
        }
    )
    passed = rng.random((n_gen, 2)) < 0.95
    gens["check_results"] = [
        {"regex": {"passed": bool(a)}, "max_chars": {"passed": bool(b)}} for a, b in passed
    ]
    gens["checks_passed"] = passed.all(axis=1).astype(object)
    # items: (task, sample), all contenders side by side; outputs in generation order
    n_items = tasks * samples
    item_ids = np.arange(1, n_items + 1)
    gen_grid = (
        gens["id"].to_numpy().reshape(tasks, k, samples).transpose(0, 2, 1).reshape(n_items, k)
    )
    output_ids = np.arange(1, n_items * k + 1).reshape(n_items, k)
    outputs = pd.DataFrame(
        {"id": output_ids.ravel(), "item": np.repeat(item_ids, k), "generation": gen_grid.ravel()}
    )
    # latent quality per output and dimension, raw scores from 2 reviewers
    difficulty = rng.normal(0, 0.7, tasks)
    latent = (
        skill[None, :] + np.repeat(difficulty, samples)[:, None] + rng.normal(0, 0.5, (n_items, k))
    )
    lo = np.array([r["min"] for r in RUBRIC], dtype=float)
    hi = np.array([r["max"] for r in RUBRIC], dtype=float)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    flip = np.array([-1.0 if r.get("direction") == "lower" else 1.0 for r in RUBRIC])
    true = mid + half * np.tanh(latent[:, :, None] * flip + rng.normal(0, 0.3, (n_items, k, d)))
    noise = rng.normal(0, 0.35, (n_items, 2, k, d)) * (half / 2)
    raw = np.clip(np.rint(true[:, None] + noise), lo, hi)  # items x 2 x k x d
    pair = np.stack([rng.choice(reviewers, 2, replace=False) for _ in range(n_items)])
    perms = np.argsort(rng.random((n_items, 2, k)), axis=2)
    overall = ((raw - lo) / (hi - lo) * np.where(flip < 0, -1, 1) + (flip < 0)).mean(
        axis=3
    )  # items x 2 x k
    best = overall.argmax(axis=2)
    tie = rng.random((n_items, 2)) < 0.1
    review_ids = np.arange(1, n_items * 2 + 1).reshape(n_items, 2)
    review_rows = []
    for i in range(n_items):
        for r in range(2):
            order = output_ids[i][perms[i, r]].tolist()
            pref_out = None if tie[i, r] else int(output_ids[i][best[i, r]])
            review_rows.append(
                (
                    int(review_ids[i, r]),
                    int(item_ids[i]),
                    f"reviewer{pair[i, r]}",
                    "tie" if tie[i, r] else "output",
                    pref_out,
                    int(rng.integers(40, 400)),
                    order,
                )
            )
    reviews = pd.DataFrame(
        review_rows,
        columns=[
            "id",
            "item",
            "reviewer",
            "preference",
            "preferred_output",
            "seconds",
            "presented_order",
        ],
    )
    scores = pd.DataFrame(
        {
            "review": np.repeat(review_ids.ravel(), k * d),
            "output": np.tile(
                np.repeat(output_ids, d, axis=1).reshape(n_items, 1, k * d), (1, 2, 1)
            ).ravel(),
            "dimension": np.tile([r["key"] for r in RUBRIC], n_items * 2 * k),
            "value": raw.ravel(),
        }
    )
    # final outcomes: the mean where reviewers agree within max_gap, an "arbiter" value otherwise
    gap = np.array([r["max_gap"] for r in RUBRIC])
    disputed_part = np.abs(raw[:, 0] - raw[:, 1]) > gap
    final_vals = np.where(disputed_part, np.rint(true), raw.mean(axis=1))
    pref_a = np.where(tie[:, 0], -1, best[:, 0])
    pref_b = np.where(tie[:, 1], -1, best[:, 1])
    disputed = disputed_part.any(axis=(1, 2)) | (pref_a != pref_b)
    pending = disputed & (rng.random(n_items) < 0.05)
    states = np.where(~disputed, "agreed", np.where(pending, "disputed", "resolved"))
    keys = [r["key"] for r in RUBRIC]
    finals, reasons = [], []
    for i in range(n_items):
        pref = "tie" if pref_a[i] < 0 else str(int(output_ids[i][pref_a[i]]))
        finals.append(
            {
                "scores": {
                    str(int(output_ids[i][j])): dict(
                        zip(keys, final_vals[i, j].tolist(), strict=True)
                    )
                    for j in range(k)
                },
                "preference": pref,
                "arbitrated": [],
            }
        )
        reasons.append(
            [
                {
                    "part": keys[dd],
                    "output": str(int(output_ids[i][j])),
                    "detail": "gap",
                    "disputes": True,
                }
                for j, dd in zip(*np.nonzero(disputed_part[i]), strict=True)
            ]
        )
    items = pd.DataFrame(
        {
            "id": item_ids,
            "task": np.repeat(task_ids, samples),
            "sample": np.tile(np.arange(samples), tasks),
            "state": states,
            "ready": True,
            "final": finals,
            "dispute_reasons": reasons,
        }
    )
    meta = {
        "slug": "bench",
        "name": "bench",
        "mode": "both",
        "rubric": RUBRIC,
        "weights": {
            "categories": {"summary": 2},
            "quality": 0.7,
            "stability": 0.3,
            "gates": GATES,
            "slice_by": ["position", "doc_length_bucket"],
        },
        "pass_threshold": 0.6,
        "samples_per_task": samples,
        "reviewed_samples": samples,
        "overlap": 2,
    }
    frames = {
        "contenders": contender_frame,
        "tasks": task_frame,
        "generations": gens,
        "items": items,
        "outputs": outputs,
        "reviews": reviews,
        "scores": scores,
    }
    return frames, meta


def time_report(scale: int, repeat: int) -> tuple[float, int, dict]:
    from reviews.report.campaign import CampaignFrames, build_report, report_json

    frames, meta = synthetic(tasks=300 * scale)
    cf = CampaignFrames(**frames)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        report = build_report(cf, meta)
        report_json(report)
        times.append(time.perf_counter() - start)
    return min(times), len(frames["scores"]), report


def write_to_database(frames: dict, meta: dict, slug: str):
    """Bulk-insert the synthetic campaign (users, test set, contenders, generations, items,
    outputs, reviews, scores). Returns the Campaign."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from reviews.models import ItemOutput, Review, ReviewItem, Score
    from tasks.models import Campaign, Contender, Generation, Task, TestSet

    User = get_user_model()
    now = timezone.now()
    users = {
        name: User.objects.get_or_create(username=name)[0]
        for name in sorted(set(frames["reviews"]["reviewer"]))
    }
    testset = TestSet.objects.create(name=slug, checksum="0" * 64, frozen=True)
    task_objs = Task.objects.bulk_create(
        Task(
            testset=testset,
            position=i,
            external_id=r.external_id,
            category=r.category,
            tier=r.tier,
            prompt="p",
            metadata={
                "position": frames["tasks"]["meta:position"].iloc[i],
                "doc_length_bucket": frames["tasks"]["meta:doc_length_bucket"].iloc[i],
            },
        )
        for i, r in enumerate(frames["tasks"].itertuples())
    )
    task_map = dict(zip(frames["tasks"]["id"], task_objs, strict=True))
    contender_objs = [
        Contender.objects.create(
            name=f"{slug}-{r.name}",
            provider="imported",
            price_in_per_mtok=r.price_in,
            price_out_per_mtok=r.price_out,
            params=r.params,
        )
        for r in frames["contenders"].itertuples()
    ]
    contender_map = dict(zip(frames["contenders"]["id"], contender_objs, strict=True))
    campaign = Campaign.objects.create(
        slug=slug,
        name=slug,
        testset=testset,
        rubric=meta["rubric"],
        weights=meta["weights"],
        mode=meta["mode"],
        samples_per_task=meta["samples_per_task"],
        reviewed_samples=meta["reviewed_samples"],
        overlap=meta["overlap"],
        status="reviewing",
    )
    campaign.contenders.set(contender_objs)
    g = frames["generations"]
    gen_objs = Generation.objects.bulk_create(
        (
            Generation(
                campaign=campaign,
                task=task_map[r.task],
                contender=contender_map[r.contender],
                sample_index=r.sample,
                status=r.status,
                input_tokens=int(r.input_tokens),
                output_tokens=int(r.output_tokens),
                latency_ms=int(r.latency_ms),
                ttft_ms=int(r.ttft_ms),
                checks_passed=bool(r.checks_passed),
                check_results=r.check_results,
                output="x" * int(r.output_chars),
            )
            for r in g.itertuples()
        ),
        batch_size=2000,
    )
    gen_map = dict(zip(g["id"], gen_objs, strict=True))
    it = frames["items"]
    item_objs = ReviewItem.objects.bulk_create(
        (
            ReviewItem(
                campaign=campaign,
                task=task_map[r.task],
                sample_index=r.sample,
                overlap=meta["overlap"],
                ready=True,
                state=r.state,
                submitted_count=2,
                live_count=2,
                dispute_reasons=r.dispute_reasons,
            )
            for r in it.itertuples()
        ),
        batch_size=2000,
    )
    item_map = dict(zip(it["id"], item_objs, strict=True))
    o = frames["outputs"]
    out_objs = ItemOutput.objects.bulk_create(
        (
            ItemOutput(item=item_map[r.item], generation=gen_map[r.generation])
            for r in o.itertuples()
        ),
        batch_size=5000,
    )
    out_map = dict(zip(o["id"], out_objs, strict=True))
    # final outcomes keyed by the new ItemOutput ids
    for synthetic_id, item in item_map.items():
        final = it.loc[it["id"] == synthetic_id, "final"].iloc[0]
        pref = final["preference"]
        item.final = {
            "scores": {str(out_map[int(k)].pk): v for k, v in final["scores"].items()},
            "preference": pref if pref in ("tie", "both_bad", None) else str(out_map[int(pref)].pk),
            "arbitrated": [],
        }
    ReviewItem.objects.bulk_update(item_objs, ["final"], batch_size=2000)
    rv = frames["reviews"]
    review_objs = Review.objects.bulk_create(
        (
            Review(
                item=item_map[r.item],
                reviewer=users[r.reviewer],
                preference=r.preference,
                preferred_output=out_map[int(r.preferred_output)]
                if r.preference == "output"
                else None,
                seconds_spent=r.seconds,
                submitted_at=now,
                presented_order=[out_map[x].pk for x in r.presented_order],
            )
            for r in rv.itertuples()
        ),
        batch_size=2000,
    )
    review_map = dict(zip(rv["id"], review_objs, strict=True))
    sc = frames["scores"]
    Score.objects.bulk_create(
        (
            Score(
                review=review_map[r.review],
                output=out_map[r.output],
                dimension=r.dimension,
                value=r.value,
            )
            for r in sc.itertuples()
        ),
        batch_size=10000,
    )
    return campaign


def time_database(repeat: int) -> tuple[float, float]:
    """(seconds for campaign_frames, seconds for the whole campaign_report) at 1x."""
    from django.core.management import call_command
    from django.db import connection

    from reviews.report.campaign import campaign_frames, campaign_report, report_json
    from tasks.models import Campaign

    call_command("migrate", verbosity=0)
    slug = "bench-report"
    Campaign.objects.filter(slug=slug).delete()
    frames, meta = synthetic(tasks=300)
    start = time.perf_counter()
    campaign = write_to_database(frames, meta, slug)
    print(f"  wrote the 1x campaign to {connection.vendor} in {time.perf_counter() - start:.1f} s")
    try:
        reads, totals = [], []
        for _ in range(repeat):
            start = time.perf_counter()
            campaign_frames(campaign)
            reads.append(time.perf_counter() - start)
            start = time.perf_counter()
            report_json(campaign_report(campaign=campaign))
            totals.append(time.perf_counter() - start)
        return min(reads), min(totals)
    finally:
        _delete(campaign)


def _delete(campaign) -> None:
    from reviews.models import ItemOutput, Review, ReviewItem, Score
    from tasks.models import Contender, Generation, Task

    testset, contenders = campaign.testset, list(campaign.contenders.all())
    Score.objects.filter(review__item__campaign=campaign).delete()
    Review.objects.filter(item__campaign=campaign).delete()
    ItemOutput.objects.filter(item__campaign=campaign).delete()
    ReviewItem.objects.filter(campaign=campaign).delete()
    Generation.objects.filter(campaign=campaign).delete()
    campaign.delete()
    Task.objects.filter(testset=testset).delete()
    testset.delete()
    Contender.objects.filter(pk__in=[c.pk for c in contenders]).delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,10", help="comma-separated multiples of 300 tasks")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--database-url", help="also time campaign_report end to end on this database"
    )
    args = parser.parse_args()
    if args.database_url == "sqlite":
        # the embedded default: a fresh SQLite file in a temporary data dir
        os.environ.pop("DATABASE_URL", None)
        os.environ["EVALSITE_DATA_DIR"] = tempfile.mkdtemp(prefix="evalsite-bench-report-")
    elif args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    os.environ.setdefault("EVALSITE_DATA_DIR", "/tmp/evalsite-bench-report")
    import django

    django.setup()
    for scale in [int(x) for x in args.scales.split(",")]:
        seconds, n_scores, report = time_report(
            scale, args.repeat if scale == 1 else min(args.repeat, 2)
        )
        top = report["leaderboard"][0]
        print(
            f"{scale:>3}x  {300 * scale:>5} tasks  {n_scores:>7} scores  report {seconds:6.2f} s  "
            f"(top: {top['contender']} {top['rating']}, alpha accuracy {report['agreement']['accuracy']['alpha']}, "
            f"gates passed {sum(g['pass'] for g in report['gates'].values())}/{len(report['gates'])}, "
            f"slices {sum(len(v) for v in report['slices'].values())}, "
            f"length coefficient {report['length']['coefficient']['value']})"
        )
    if args.database_url:
        reads, total = time_database(args.repeat)
        print(f"  1x from the database: reads {reads:.2f} s, campaign_report + JSON {total:.2f} s")


if __name__ == "__main__":
    main()
