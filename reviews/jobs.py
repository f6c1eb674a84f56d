"""Celery jobs of the review side: entry points only (take ids, call one service).

The registered name keeps its old spelling for the beat schedule and messages in flight
(docs/decisions/0005-celery-job-names.md).
"""

from celery import shared_task

# Judging's jobs live in their package (reviews/judges/jobs.py); imported so that Celery's
# discovery of this module registers them too.
from reviews.judges import jobs as judge_jobs  # noqa: F401
from reviews.report.cache import reports_warm
from reviews.review import assignment_sweep_expired


@shared_task(name="reviews.sweep_expired_leases", soft_time_limit=120, time_limit=150)
def lease_sweep_job() -> int:
    """Return the slots of abandoned review leases to the pool (claims also do this lazily)."""
    return assignment_sweep_expired()


@shared_task(name="reviews.reports_warm", soft_time_limit=600, time_limit=660)
def reports_warm_job() -> int:
    """Compute the dashboards' report of every campaign whose reviews changed (beat, every
    minute): the first look at the dashboards then reads it instead of waiting seconds."""
    return reports_warm()
