"""Grading a run whose generation ended: its metrics, the comparison with its baseline
(compare.py) and the alerts of the crossed thresholds (alerts.py, which delivers them).

`monitor_run_finish` is called by the finish job when a run's campaign ends, and by the beat
tick for runs whose finish job was lost (jobs.py); the checks ran when each output was stored.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from tasks import review_side
from tasks.models import Campaign
from tasks.monitors.alerts import alerts_record
from tasks.monitors.compare import compare_runs
from tasks.monitors.judging import judge_note, wants_preference
from tasks.monitors.metrics import run_metrics
from tasks.monitors.models import MonitorRun
from tasks.monitors.runs import baseline_for, campaign_tables, monitor_run_active

log = logging.getLogger(__name__)
R = MonitorRun.Status


def monitor_run_finish(*, run_id: int) -> MonitorRun | None:
    """Grade a run whose generation ended: metrics, comparison, alerts. Idempotent: only the
    caller whose conditional UPDATE moves it out of `generating` does the work."""
    run = MonitorRun.objects.select_related("monitor", "campaign").get(pk=run_id)
    if run.status != R.GENERATING or monitor_run_active(run):
        return None
    baseline = baseline_for(run)
    judging = monitor_run_judging(run, baseline)
    if judging is None:
        return None  # the judge is still at it: the beat tick grades the run once it is done
    tables = campaign_tables(
        run.campaign,
        judge=run.monitor.judge,
        baseline=baseline.campaign if baseline and wants_preference(run.monitor) else None,
    )
    metrics = {name: run_metrics(table) for name, table in tables.items()}
    comparison = compare_runs(baseline, run, run_tables=tables) if baseline else None
    with transaction.atomic():
        if not MonitorRun.objects.filter(pk=run.pk, status=R.GENERATING).update(
            status=R.DONE,
            metrics=metrics,
            comparison=comparison,
            baseline_number=baseline.number if baseline else None,
            judging=judging,
            finished_at=timezone.now(),
        ):
            return None
        Campaign.objects.filter(pk=run.campaign_id).update(status=Campaign.Status.CLOSED)
        run.refresh_from_db()
        if comparison is not None:
            comparison["alerts"] = alerts_record(run=run, comparison=comparison)
            MonitorRun.objects.filter(pk=run.pk).update(comparison=comparison)
            run.comparison = comparison
    return run


def monitor_run_judging(run: MonitorRun, baseline: MonitorRun | None) -> dict | None:
    """A judged monitor's run: judge its outputs (queued once) and, when the monitor grades
    judge.preference_win_rate, each against the baseline run's output; then what judging
    cost. None while judgements are still to come; {} for a monitor without a judge."""
    monitor = run.monitor
    if not monitor.judge_id:
        return {}
    against = baseline.campaign if baseline and wants_preference(monitor) else None
    progress = review_side.judge_outputs(
        judge=monitor.judge, campaign=run.campaign, baseline=against
    )
    if not progress["finished"]:
        return None
    return {
        "judge": monitor.judge.name,
        "calibration": monitor.calibration.slug,
        "judgements": progress["done"],
        "failed": progress["failed"],
        "input_tokens": progress["input_tokens"],
        "output_tokens": progress["output_tokens"],
        "cost": progress["cost"],
        "against_baseline": against is not None,
        "note": judge_note(monitor),
    }


def monitor_runs_finish_due() -> int:
    """Beat safety net: grade every run whose generation has ended (a lost finish job)."""
    finished = 0
    for run in MonitorRun.objects.filter(status=R.GENERATING).select_related("monitor"):
        try:
            if monitor_run_finish(run_id=run.pk) is not None:
                finished += 1
        except Exception as exc:  # noqa: BLE001 - one run's failure must not stop the others
            log.exception("monitor run %s: grading failed", run)
            MonitorRun.objects.filter(pk=run.pk).update(
                error=f"grading failed: {type(exc).__name__}: {exc}"[:1000]
            )
    return finished


def monitor_campaign_finished(*, campaign_id: int) -> None:
    """Called when a campaign's generation ends: grade its run, if it is a monitor's."""
    run = MonitorRun.objects.filter(campaign_id=campaign_id).only("pk").first()
    if run is not None:
        monitor_run_finish(run_id=run.pk)
