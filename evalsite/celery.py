import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    # A job is acknowledged only after it ran; a killed child puts it back (RELIABILITY.md).
    # Redeliveries have no cap of their own: the database counts attempts.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    worker_cancel_long_running_tasks_on_connection_loss=True,
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    timezone="UTC",
)
app.conf.beat_schedule = {
    # Re-enqueue generation rows whose worker died (lapsed lease) or whose message was lost.
    "generation-reconcile": {"task": "tasks.generation_reconcile", "schedule": 60.0},
    # Expire review leases that ran out, so abandoned items go back to other reviewers even
    # when nobody claims in that campaign for a while (claims expire lazily as well).
    "review-lease-sweep": {"task": "reviews.sweep_expired_leases", "schedule": 60.0},
}
app.autodiscover_tasks()


@app.task(name="evalsite.health")
def health(value: int = 1) -> int:
    """Trivial round-trip task used to prove a worker is alive."""
    return value + 1
