"""Monitor runs: start run N+1 (its hidden campaign, queued for generation), its progress,
the tables of its outputs, and the baseline it is compared with.

A run owns a hidden campaign (kind monitor_run) over the monitor's frozen test-set version,
contenders and samples: generation, its retries, limits, idempotency, reconciler and progress
are the campaign pipeline's, unchanged (docs/decisions/0006-monitor-runs-own-a-campaign.md).
When its generation ends, grading.py grades it.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Max, Q

from tasks import review_side
from tasks.generation.services import GenerationNotSent, generation_enqueue, generation_rows_create
from tasks.models import Campaign, Generation, Judge
from tasks.monitors.definition import MonitorError
from tasks.monitors.metrics import judge_preferences_add, judge_scores_add, run_table
from tasks.monitors.models import Monitor, MonitorRun

log = logging.getLogger(__name__)
R = MonitorRun.Status


def monitor_run_start(
    *, monitor: Monitor, scheduled_for: datetime | None = None, baseline: int | None = None
) -> MonitorRun | None:
    """Create run N+1 with its hidden campaign and queue its generation.

    A scheduled run names its due time: the unique (monitor, scheduled_for) constraint lets one
    caller through, and the others get None. The run number is taken under a lock of the
    monitor row (unique (monitor, number) backs it)."""
    if monitor.archived_at is not None:
        raise MonitorError(f"monitor {monitor.slug} was deleted: its runs are kept, none start")
    if baseline is not None and not monitor.runs.filter(number=baseline).exists():
        raise MonitorError(f"baseline: run {baseline} of {monitor.slug} does not exist")
    run = None
    try:
        with transaction.atomic():
            run = monitor_run_create(
                monitor=monitor, scheduled_for=scheduled_for, baseline=baseline
            )
            generation_enqueue(campaign=run.campaign)
    except IntegrityError:
        if scheduled_for is not None and monitor.runs.filter(scheduled_for=scheduled_for).exists():
            return None  # another beat or worker started this due time
        raise
    except GenerationNotSent:
        # Committed and queued in the database: the reconciler sends the messages later.
        log.warning("monitor %s run %s: broker unreachable, left to the reconciler", monitor, run)
    return run


def monitor_run_create(*, monitor: Monitor, scheduled_for, baseline) -> MonitorRun:
    """Run N+1 and its hidden campaign with its generation rows, not yet queued (inside the
    caller's transaction; the demo builds its finished runs with it)."""
    Monitor.objects.select_for_update().filter(pk=monitor.pk).first()
    if scheduled_for is not None and monitor.runs.filter(scheduled_for=scheduled_for).exists():
        raise IntegrityError("due time already started")
    number = (monitor.runs.aggregate(n=Max("number"))["n"] or 0) + 1
    campaign = Campaign.objects.create(
        slug=f"monitor-{monitor.slug}-run-{number}"[:100],
        name=f"{monitor.name} · run {number}",
        testset=monitor.testset,
        kind=Campaign.Kind.MONITOR_RUN,
        samples_per_task=monitor.samples_per_task,
        reviewed_samples=1,
        overlap=1,
        hold_identity_leaks=False,
        created_by=monitor.created_by,
        **_judged_with(monitor),
    )
    campaign.contenders.set(monitor.contenders.all())
    generation_rows_create(campaign=campaign)
    return MonitorRun.objects.create(
        monitor=monitor,
        number=number,
        campaign=campaign,
        scheduled_for=scheduled_for,
        baseline_number=baseline,
    )


def _judged_with(monitor: Monitor) -> dict:
    """A judged monitor's run campaign carries the calibration campaign's rubric and
    instructions: the judge scores the run's outputs exactly as it was calibrated."""
    if not monitor.judge_id:
        return {}
    source = monitor.calibration
    return {"rubric": source.rubric, "instructions": source.instructions, "mode": "rubric"}


def monitor_run_active(run: MonitorRun) -> bool:
    return (
        Generation.objects.filter(campaign_id=run.campaign_id)
        .filter(
            Q(status=Generation.Status.RUNNING)
            | Q(status=Generation.Status.PENDING, queued_at__isnull=False)
        )
        .exists()
    )


def monitor_run_progress(run: MonitorRun) -> dict:
    counts = {s: 0 for s in Generation.Status.values}
    for status in Generation.objects.filter(campaign_id=run.campaign_id).values_list(
        "status", flat=True
    ):
        counts[status] += 1
    finished = counts["done"] + counts["failed"] + counts["cancelled"]
    return {"total": sum(counts.values()), "finished": finished, **counts}


def run_rows(campaign_id: int) -> dict[str, list[dict]]:
    """{contender name: [generation dicts]} for the metrics: the task's own regime only.

    A conversation task with a `single_turn` statement has a second row per sample (the same
    request in one message, `single_turn=True`) under the same task and sample index; read
    together, whichever came last would replace the conversation's row in the table."""
    out: dict[str, list[dict]] = {}
    fields = (
        "contender__name", "task__external_id", "sample_index", "status", "output",
        "check_results", "checks_passed", "latency_ms", "ttft_ms", "cost", "served_model",
        "fingerprint", "tokens_per_s",
    )  # fmt: skip
    rows = Generation.objects.filter(campaign_id=campaign_id, single_turn=False)
    for row in rows.values(*fields).iterator(2000):
        out.setdefault(row["contender__name"], []).append(
            {
                "task": row["task__external_id"],
                "sample": row["sample_index"],
                "status": row["status"],
                "output": row["output"],
                "check_results": row["check_results"],
                "checks_passed": row["checks_passed"],
                "latency_ms": row["latency_ms"],
                "ttft_ms": row["ttft_ms"],
                "cost": float(row["cost"]) if row["cost"] is not None else None,
                "served_model": row["served_model"],
                "fingerprint": row["fingerprint"],
                "tokens_per_s": row["tokens_per_s"],
            }
        )
    return out


def campaign_tables(
    campaign: Campaign, *, judge: Judge | None = None, baseline: Campaign | None = None
) -> dict:
    """{contender: RunTable}; with `judge`, its scores of the outputs too (judge.<dimension>)
    and, with `baseline` (the run it was judged against), its preferences of the outputs
    over the baseline's (judge.preference_win_rate)."""
    tasks = list(
        campaign.testset.tasks.order_by("external_id").values_list("external_id", flat=True)
    )
    tables = {
        name: run_table(rows, tasks=tasks, samples=campaign.samples_per_task)
        for name, rows in sorted(run_rows(campaign.pk).items())
    }
    if judge is not None:
        scores: dict[str, list[dict]] = {}
        for row in review_side.judge_output_scores(judge=judge, campaign=campaign):
            scores.setdefault(row["contender"], []).append(row)
        for name, table in tables.items():
            judge_scores_add(table, scores.get(name, []))
    if judge is not None and baseline is not None:
        preferences: dict[str, list[dict]] = {}
        for row in review_side.judge_preferences(judge=judge, campaign=campaign, baseline=baseline):
            preferences.setdefault(row["contender"], []).append(row)
        for name, table in tables.items():
            if preferences:
                judge_preferences_add(table, preferences.get(name, []))
    return tables


def baseline_for(run: MonitorRun) -> MonitorRun | None:
    """The run this one is compared with: the run's own choice, else the monitor's."""
    earlier = run.monitor.runs.filter(number__lt=run.number, status=R.DONE)
    if run.baseline_number:
        return run.monitor.runs.filter(number=run.baseline_number).first()
    choice = run.monitor.baseline
    if choice == "first":
        return earlier.order_by("number").first()
    if choice == "previous":
        return earlier.order_by("-number").first()
    return run.monitor.runs.filter(number=int(choice)).exclude(pk=run.pk).first()
