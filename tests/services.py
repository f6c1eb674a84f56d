"""Real services for tests: skip on a laptop without them, fail when CI is set."""

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
ROOT = Path(__file__).resolve().parent.parent


def need(available: bool, reason: str) -> None:
    if available:
        return
    if IN_CI:
        pytest.fail(f"CI requires this service: {reason}", pytrace=False)
    pytest.skip(reason)


def postgres_available() -> bool:
    return connection.vendor == "postgresql"


def redis_available() -> bool:
    if not settings.REDIS_URL:
        return False
    import redis

    try:
        return bool(redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def chromium_path() -> str | None:
    for candidate in (
        os.environ.get("CHROMIUM_PATH"),
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


class Worker:
    """A real `celery worker` subprocess on the test database and the test Redis."""

    def __init__(
        self,
        concurrency: int = 2,
        extra_env: dict | None = None,
        beat: bool = False,
        pool: str = "prefork",
    ):
        env = {
            **os.environ,
            "REDIS_URL": settings.REDIS_URL,
            "EVALSITE_DATA_DIR": str(settings.DATA_DIR),
            "PYTHONUNBUFFERED": "1",
        }
        db = connection.settings_dict
        if connection.vendor == "postgresql":
            env["DATABASE_URL"] = (
                f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:"
                f"{db['PORT'] or 5432}/{db['NAME']}"
            )
        env.update(extra_env or {})
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "evalsite",
            "worker",
            "--pool",
            pool,
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        self.log_path = Path(settings.DATA_DIR) / f"worker-{os.getpid()}-{time.monotonic_ns()}.log"
        if beat:  # its schedule file beside the log, never in the checkout
            args += ["--beat", "--schedule", str(self.log_path.with_suffix(".beat"))]
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and children), as an OOM killer would."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


# Nothing listens there: Redis or the broker "down" without stopping the shared servers.
CLOSED_REDIS_URL = "redis://127.0.0.1:6390/0"


@contextmanager
def broker_at(url: str):
    """Point this process's Celery app at another broker (its new connections and producers)."""
    from evalsite.celery import app

    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url, app._pool, app.amqp._producer_pool = url, None, None
    try:
        yield
    finally:
        # Not closed: kombu shares the producer pool with later connections to the same URL.
        app.conf.broker_url, app._pool, app.amqp._producer_pool = saved


def purge_broker() -> None:
    from evalsite.celery import app

    app.control.purge()


def wait_until(predicate, timeout: float = 60, interval: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
