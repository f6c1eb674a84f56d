"""Monitor schedules: a 5-field cron in UTC (croniter), checked every minute by beat.

For each scheduled monitor the tick takes the latest due time at or before now that is later
than the monitor's creation and than its last scheduled run:
- exactly one run per due time, whatever the number of beat processes or workers: the run row
  carries its due time, and (monitor, scheduled_for) is unique in the database;
- after downtime only the latest missed due time runs (once), not every one missed;
- while a run of the monitor is still generating, the due time waits (logged): the tick after
  that run ends starts it, so runs never overlap and are never doubled.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from tasks.monitors.cron import latest_due
from tasks.monitors.models import Monitor, MonitorRun
from tasks.monitors.runs import monitor_run_start

log = logging.getLogger(__name__)


def monitor_schedule_tick(*, now: datetime | None = None) -> dict:
    """Start the runs that are due; returns {started, waiting, errors: [slug]}.

    Each monitor is isolated: one whose schedule cannot be evaluated, or whose run cannot
    start, is logged and marked (its page shows the error) and the tick goes on with the
    others; its error is cleared by its next good tick."""
    now = now or timezone.now()
    started, waiting, errors = [], [], []
    due_monitors = Monitor.objects.exclude(schedule="").filter(paused=False, archived_at=None)
    for monitor in due_monitors.order_by("pk"):
        try:
            outcome = _tick_one(monitor, now)
        except Exception as exc:  # noqa: BLE001 - isolation: logged, marked, the others run
            log.exception("monitor %s: the schedule tick failed", monitor)
            Monitor.objects.filter(pk=monitor.pk).update(
                error=f"{type(exc).__name__}: {exc}"[:1000], error_at=now
            )
            errors.append(monitor.slug)
            continue
        if monitor.error:
            Monitor.objects.filter(pk=monitor.pk).update(error="", error_at=None)
        if outcome == "waiting":
            waiting.append(monitor.slug)
        elif outcome:
            started.append(outcome)
    return {"started": started, "waiting": waiting, "errors": errors}


def _tick_one(monitor: Monitor, now: datetime) -> str | None:
    """`slug#n` when a run started, "waiting" when its due time waits, None otherwise."""
    due = latest_due(monitor.schedule, now)
    if due <= monitor.created_at.replace(second=0, microsecond=0):
        return None
    runs = MonitorRun.objects.filter(monitor=monitor)
    if runs.filter(scheduled_for__gte=due).exists():
        return None  # this due time (or a later one) has its run
    if runs.filter(status=MonitorRun.Status.GENERATING).exists():
        log.info("monitor %s: run due at %s waits for the run still going", monitor, due)
        return "waiting"
    run = monitor_run_start(monitor=monitor, scheduled_for=due)
    return f"{monitor.slug}#{run.number}" if run is not None else None
