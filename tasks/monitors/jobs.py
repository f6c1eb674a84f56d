"""Celery jobs of monitors: entry points only (ids in, one service call, retries here).

Found by Celery's autodiscovery (evalsite/celery.py names this package). The registered names
keep their old spelling: the beat schedule and queued messages name them
(docs/decisions/0005-celery-job-names.md); alerts.py sends `tasks.alert_deliver` by that name.
"""

from celery import shared_task

from tasks.monitors.alerts import alert_deliver, alert_deliveries_resend
from tasks.monitors.grading import monitor_campaign_finished, monitor_runs_finish_due
from tasks.monitors.schedule import monitor_schedule_tick


@shared_task(name="tasks.monitor_tick", acks_late=True, soft_time_limit=100, time_limit=120)
def monitor_tick_job() -> dict:
    """Every minute (beat): start the due runs, grade runs whose generation ended (a lost
    finish job), resend deliveries whose message was lost."""
    # Three independent sweeps: each isolates its own items, so one failing monitor, run or
    # delivery never stops the others (logged, and marked on its page).
    result = monitor_schedule_tick()
    result["finished"] = monitor_runs_finish_due()
    result["resent"] = alert_deliveries_resend()
    return result


@shared_task(name="tasks.monitor_run_finish", acks_late=True, soft_time_limit=100, time_limit=120)
def monitor_run_finish_job(campaign_id: int) -> str:
    monitor_campaign_finished(campaign_id=campaign_id)
    return "ok"


# A retry further off than this is left to the beat sweep (every minute): a Celery countdown
# of hours would sit in a worker's memory, and past Redis's visibility timeout be sent twice.
COUNTDOWN_LIMIT = 300.0


@shared_task(name="tasks.alert_deliver", acks_late=True, soft_time_limit=60, time_limit=90)
def alert_deliver_job(delivery_id: int) -> str:
    outcome, wait = alert_deliver(delivery_id=delivery_id)
    if outcome == "retry" and wait <= COUNTDOWN_LIMIT:
        alert_deliver_job.apply_async((delivery_id,), countdown=wait)
    return outcome
