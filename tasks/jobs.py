"""Celery jobs of the tasks app (test sets, contenders, generation): entry points only.

Each job takes ids and calls one service; retries are scheduled here from the service's
decision (the row already says when); acks, time limits and the worker-lost policy come from
the app config (evalsite/celery.py). The module is `jobs`, not `tasks`, so that "tasks" means
only the app and its test cases. The registered names (`name=`) keep their old spelling:
messages already in the broker (retries waiting out a countdown) and the beat schedule name
them, so they must not change with a deploy (docs/decisions/0005-celery-job-names.md).
"""

import random

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from tasks.generation.reconcile import generation_lapsed_requeue, generation_reconcile
from tasks.generation.run import CLAIM_WAIT_SECONDS, generation_run

# While the database is unreachable a generation job asks again every few seconds (up to
# DATABASE_RETRY_MAX apart) instead of dropping its message: the row would then wait for the
# reconciler's lost-message threshold, minutes after the database came back. Bounded, for a
# database that stays down for good (the reconciler remains the net).
DATABASE_RETRY_MAX = 8.0
DATABASE_RETRIES = 120


@shared_task(
    name="tasks.generation_run",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    max_retries=DATABASE_RETRIES,
)
def generation_run_job(self, generation_id: int) -> str:
    # A claim that finds every slot taken may wait here a little before it is re-queued (only
    # where the worker process has threads to spare: CLAIM_THREADS_PER_WAITER).
    try:
        outcome = generation_run(generation_id=generation_id, claim_wait=CLAIM_WAIT_SECONDS)
    except (OperationalError, InterfaceError) as exc:
        ceiling = min(2.0 ** (self.request.retries or 0), DATABASE_RETRY_MAX)
        raise self.retry(exc=exc, countdown=random.uniform(ceiling / 2, ceiling)) from exc
    if outcome.action in ("retry", "busy"):
        generation_run_job.apply_async((generation_id,), countdown=outcome.countdown)
    return outcome.action


@shared_task(name="tasks.generation_lapsed", acks_late=True, soft_time_limit=20, time_limit=30)
def generation_lapsed_job() -> int:
    return generation_lapsed_requeue()


@shared_task(name="tasks.generation_reconcile", acks_late=True, soft_time_limit=100, time_limit=120)
def generation_reconcile_job() -> dict:
    return generation_reconcile()
