"""Celery entry points for the review side."""

from celery import shared_task

from .services import assignment_sweep_expired


@shared_task(name="reviews.sweep_expired_leases", soft_time_limit=120, time_limit=150)
def sweep_expired_leases() -> int:
    """Return the slots of abandoned review leases to the pool (claims also do this lazily)."""
    return assignment_sweep_expired()
