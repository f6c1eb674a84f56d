import os

from celery import Celery
from celery.concurrency import ALIASES
from celery.signals import (
    beat_embedded_init,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
)
from django.conf import settings
from django.db import close_old_connections, connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    # A job is acknowledged only after it ran; a killed child puts it back (docs/operations.md,
    # "Celery delivery"). Redeliveries have no cap of their own: the database counts attempts.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    worker_cancel_long_running_tasks_on_connection_loss=True,
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    timezone="UTC",
)
# Database connections. Celery's Django fixup closes every connection before and after each
# task, so each generation opened a new PostgreSQL connection (a new server process). Keep
# them across tasks instead, under Django's own per-request rules (below); the fixup then only
# closes a thread's connection once every DB_REUSE_MAX x 2 task hooks of its process.
app.conf.update(CELERY_DB_REUSE_MAX=500)


@beat_embedded_init.connect
def close_connections_in_embedded_beat(**kwargs) -> None:
    """The fixup's close here is subject to DB_REUSE_MAX now: an embedded beat (`worker
    --beat`, a forked process) must still never use a connection opened before the fork."""
    connections.close_all()


@task_prerun.connect
@task_postrun.connect
def close_old_connections_around_task(task=None, **kwargs) -> None:
    """What Django does around a request: drop a connection past CONN_MAX_AGE, one that broke
    or was left without autocommit; CONN_HEALTH_CHECKS then pings a kept one once before the
    task's first query. Not for eager tasks: they run on the caller's connection."""
    if task is not None and not getattr(task.request, "is_eager", False):
        close_old_connections()


@worker_init.connect
def count_task_threads(sender=None, **kwargs) -> None:
    """How many task threads this process runs, for the claim's wait (tasks/generation/run.py):
    the threads pool's concurrency; one for the others (prefork children also say so below;
    the solo pool and green threads are not given any to wait with)."""
    from tasks.generation.claim_waits import claim_waiters_configure
    from tasks.generation.lease_keeper import lease_keeper_enable

    lease_keeper_enable()  # this process runs jobs (threads, solo); a prefork child: below
    pool = sender.pool_cls
    name = (
        ALIASES.get(pool, pool)
        if isinstance(pool, str)
        else f"{pool.__module__}:{pool.__qualname__}"
    )
    threads = 1
    if name == ALIASES["threads"]:
        concurrency = sender.concurrency
        threads = concurrency if isinstance(concurrency, int) else (os.cpu_count() or 1)
    claim_waiters_configure(threads=threads)


@worker_process_init.connect
def one_task_thread(**kwargs) -> None:
    """A prefork child (or the solo pool) runs one task at a time."""
    from tasks.generation.claim_waits import claim_waiters_configure
    from tasks.generation.lease_keeper import lease_keeper_enable

    lease_keeper_enable()
    claim_waiters_configure(threads=1)


app.conf.beat_schedule = {
    # Re-enqueue generation rows whose worker died (lapsed lease) or whose message was lost
    # (tasks/jobs.py, generation_reconcile_job).
    "generation-reconcile": {"task": "tasks.generation_reconcile", "schedule": 60.0},
    # Queue again, within seconds, the rows whose lease lapsed because no worker renews it
    # any more (a killed worker): their contender's slots are free again by then
    # (tasks/generation/lease_keeper.py). One indexed read when there are none.
    "generation-lapsed": {
        "task": "tasks.generation_lapsed",
        "schedule": float(settings.GENERATION_LAPSED_SWEEP_SECONDS),
    },
    # Expire review leases that ran out, so abandoned items go back to other reviewers even
    # when nobody claims in that campaign for a while (claims expire lazily as well;
    # reviews/jobs.py, lease_sweep_job).
    "review-lease-sweep": {"task": "reviews.sweep_expired_leases", "schedule": 60.0},
    # Monitors: start the runs whose cron time is due (one per due time, however many beats:
    # a unique constraint), grade runs whose generation ended, resend lost alert deliveries
    # (tasks/monitors/jobs.py, monitor_tick_job). MONITOR_TICK_SECONDS: 60 (cron has minutes).
    "monitor-tick": {"task": "tasks.monitor_tick", "schedule": settings.MONITOR_TICK_SECONDS},
    # Judging: re-send judgements whose worker died or whose message was lost
    # (reviews/judges/jobs.py, judgement_reconcile_job).
    "judgement-reconcile": {"task": "reviews.judgement_reconcile", "schedule": 60.0},
    # The dashboards' report of each campaign whose reviews changed, computed ahead of the
    # first lead who opens them (reviews/jobs.py, reports_warm_job; cached per state).
    "reports-warm": {"task": "reviews.reports_warm", "schedule": 60.0},
}
# Celery jobs live in each app's `jobs` module (tasks/jobs.py, reviews/jobs.py), not `tasks`:
# here "tasks" is the app of test sets and test cases; a subsystem package with its own jobs
# module is named here too.
app.autodiscover_tasks(related_name="jobs")
app.autodiscover_tasks(["tasks.monitors"], related_name="jobs")


@app.task(name="evalsite.health")
def health(value: int = 1) -> int:
    """Trivial round-trip task used to prove a worker is alive."""
    return value + 1
