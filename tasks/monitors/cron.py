"""Cron expressions of monitor schedules: 5 fields, evaluated in UTC, by croniter.

`croniter.is_valid` checks each field's range only: `0 0 31 2 *` (February 31st) passes it and
then raises on the first `get_prev` or `get_next`. A schedule is therefore accepted only when
both a next and a previous fire time exist (croniter searches a few years each way).
"""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import CroniterError, croniter


class ScheduleError(ValueError):
    """A schedule that cannot be evaluated (it never fires, or it is not a cron expression)."""


def schedule_problem(schedule: str, *, now: datetime | None = None) -> str | None:
    """Why `schedule` cannot be used (a sentence naming it), or None when it fires."""
    if len(schedule.split()) != 5 or not croniter.is_valid(schedule):
        return f"{schedule!r} is not a valid 5-field cron expression"
    try:
        fire_times(schedule, count=1, now=now)
        latest_due(schedule, now or datetime.now(UTC))
    except ScheduleError:
        return f"{schedule!r} never fires (no such date: e.g. the 31st of a 30-day month)"
    return None


def fire_times(schedule: str, *, count: int = 3, now: datetime | None = None) -> list[datetime]:
    """The next `count` fire times after `now` (UTC); ScheduleError when there is none."""
    itr = croniter(schedule, (now or datetime.now(UTC)).astimezone(UTC))
    try:
        return [itr.get_next(datetime) for _ in range(count)]
    except CroniterError as exc:
        raise ScheduleError(f"{schedule!r} never fires") from exc


def latest_due(schedule: str, now: datetime) -> datetime:
    """The latest cron time at or before `now` (UTC); ScheduleError when there is none."""
    now = now.astimezone(UTC).replace(second=0, microsecond=0)
    try:
        if croniter.match(schedule, now):
            return now
        return croniter(schedule, now).get_prev(datetime)
    except CroniterError as exc:
        raise ScheduleError(f"{schedule!r} never fires") from exc
