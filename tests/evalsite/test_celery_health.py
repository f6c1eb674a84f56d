"""The Celery app runs real jobs through a real worker, with and without a broker server."""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from celery import Celery

from tests.services import Worker, purge_broker, wait_until


def _succeeded(worker: Worker, task_id: str):
    match = re.search(
        rf"Task evalsite\.health\[{task_id}\] succeeded in [\d.]+s: (\d+)", worker.log()
    )
    return match and int(match.group(1))


def test_it_runs_a_job_through_a_worker_on_the_serverless_filesystem_broker():
    data_dir = tempfile.mkdtemp(prefix="evalsite-fsbroker-")
    for sub in ("out", "processed"):
        os.makedirs(f"{data_dir}/broker/{sub}")
    worker = Worker(
        concurrency=1,
        extra_env={"REDIS_URL": "", "EVALSITE_DATA_DIR": data_dir, "DATABASE_URL": ""},
    )
    try:
        # A client configured exactly like the embedded mode's settings, on the same folder
        # (not made this process's current app: the project's code sends through that one).
        client = Celery(broker="filesystem://localhost/", set_as_current=False)
        folder = f"{data_dir}/broker/out"
        client.conf.broker_transport_options = {
            "data_folder_in": folder,
            "data_folder_out": folder,
            "processed_folder": f"{data_dir}/broker/processed",
            "control_folder": f"{data_dir}/broker/control",
        }
        result = client.send_task("evalsite.health", args=[41])
        assert (
            wait_until(lambda: _succeeded(worker, result.id), timeout=90, message="health job")
            == 42
        )
    finally:
        worker.stop()


def test_it_enqueues_on_the_filesystem_broker_without_a_hostname_warning():
    data_dir = tempfile.mkdtemp(prefix="evalsite-fsbroker-")
    env = {**os.environ, "REDIS_URL": "", "EVALSITE_DATA_DIR": data_dir, "DATABASE_URL": ""}
    code = "from evalsite.celery import health; health.delay(1); print('sent')"
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.splitlines()[-1] == "sent", done.stderr
    assert "No hostname" not in done.stderr + done.stdout
    assert os.listdir(f"{data_dir}/broker/out")  # the message was written


@pytest.mark.redis
def test_it_runs_a_job_through_a_worker_on_redis():
    from evalsite.celery import app

    purge_broker()
    worker = Worker(concurrency=1)
    try:
        result = app.send_task("evalsite.health", args=[1])
        assert (
            wait_until(lambda: _succeeded(worker, result.id), timeout=90, message="health job") == 2
        )
    finally:
        worker.stop()


def test_it_configures_acks_late_and_a_visibility_timeout_above_the_time_limits(settings):
    from evalsite.celery import app

    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_time_limit > app.conf.task_soft_time_limit
    if settings.REDIS_URL:
        assert app.conf.broker_transport_options["visibility_timeout"] > app.conf.task_time_limit


def test_it_gives_every_task_a_soft_limit_below_its_hard_limit():
    # Celery refuses to send a task whose soft limit exceeds its hard limit: a beat entry
    # with only `time_limit=120` under the app-wide 300 s soft limit never ran.
    from evalsite.celery import app

    app.loader.import_default_modules()  # autodiscovery, as a worker does at start
    ours = [
        t for name, t in app.tasks.items() if name.split(".")[0] in {"tasks", "reviews", "evalsite"}
    ]
    assert len(ours) >= 4
    for task in ours:
        soft = task.soft_time_limit or app.conf.task_soft_time_limit
        hard = task.time_limit or app.conf.task_time_limit
        assert soft <= hard, f"{task.name}: soft {soft} > hard {hard}"
    for entry in app.conf.beat_schedule.values():
        assert entry["task"] in app.tasks


def test_it_finds_the_jobs_modules_by_autodiscovery():
    # Celery jobs live in `<app>/jobs.py` ("tasks" is the app of test cases): the worker must
    # still find them, and no `tasks` module of jobs is left to import by mistake.
    import importlib.util
    import sys

    from evalsite.celery import app

    app.loader.import_default_modules()
    assert "tasks.jobs" in sys.modules and "reviews.jobs" in sys.modules
    assert importlib.util.find_spec("tasks.tasks") is None
    assert importlib.util.find_spec("reviews.tasks") is None
    for name in (
        "tasks.generation_run",
        "tasks.generation_reconcile",
        "reviews.sweep_expired_leases",
    ):
        assert name in app.tasks
