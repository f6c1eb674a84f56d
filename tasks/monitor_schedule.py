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
from datetime import UTC, datetime

from croniter import croniter
from django.utils import timezone

from .models import Monitor, MonitorRun
from .monitors import monitor_run_start

log = logging.getLogger(__name__)


def latest_due(schedule: str, now: datetime) -> datetime:
    """The latest cron time at or before `now` (UTC)."""
    now = now.astimezone(UTC).replace(second=0, microsecond=0)
    itr = croniter(schedule, now)
    if croniter.match(schedule, now):
        return now
    return itr.get_prev(datetime)


def monitor_schedule_tick(*, now: datetime | None = None) -> dict:
    """Start the runs that are due; returns {started: [...], waiting: [...]}."""
    now = now or timezone.now()
    started, waiting = [], []
    for monitor in Monitor.objects.exclude(schedule="").order_by("pk"):
        due = latest_due(monitor.schedule, now)
        if due <= monitor.created_at.replace(second=0, microsecond=0):
            continue
        runs = MonitorRun.objects.filter(monitor=monitor)
        if runs.filter(scheduled_for__gte=due).exists():
            continue  # this due time (or a later one) has its run
        if runs.filter(status=MonitorRun.Status.GENERATING).exists():
            log.info("monitor %s: run due at %s waits for the run still going", monitor, due)
            waiting.append(monitor.slug)
            continue
        run = monitor_run_start(monitor=monitor, scheduled_for=due)
        if run is not None:
            started.append(f"{monitor.slug}#{run.number}")
    return {"started": started, "waiting": waiting}
