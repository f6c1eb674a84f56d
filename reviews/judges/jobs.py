"""Celery jobs of judging: entry points only (take ids, call one service, own the re-queue)."""

from celery import shared_task
from django.conf import settings

from reviews.judges.services import CLAIM_WAIT_SECONDS, judgement_reconcile, judgement_run


@shared_task(
    name="reviews.judgement_run",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
)
def judgement_run_job(judgement_id: int) -> str:
    outcome = judgement_run(judgement_id=judgement_id, claim_wait=CLAIM_WAIT_SECONDS)
    if outcome.action in ("retry", "busy"):
        judgement_run_job.apply_async((judgement_id,), countdown=outcome.countdown)
    return outcome.action


@shared_task(
    name="reviews.judgement_reconcile", acks_late=True, soft_time_limit=100, time_limit=120
)
def judgement_reconcile_job() -> dict:
    return judgement_reconcile()
