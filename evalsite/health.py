"""What /healthz checks: each dependency once, each bounded to about a second."""

import time
from collections.abc import Callable

from django.core.cache import caches
from django.db import connection

from evalsite.broker import broker_queued
from evalsite.cache import RedisCache


def database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def cache() -> None:
    # Redis is asked directly, even while the cache is serving pages without it. A
    # local-memory cache (embedded mode) has nothing to ask.
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        backend._cache.ping()


def broker() -> None:
    broker_queued()


def run(check: Callable[[], None]) -> dict:
    started = time.perf_counter()
    try:
        check()
    except Exception as exc:  # noqa: BLE001 - a health check reports, it never fails
        # The class only: this answer is public, and a message may name hosts.
        error = type(exc).__name__
    else:
        error = None
    result = {"ok": error is None, "ms": round((time.perf_counter() - started) * 1000, 1)}
    if error:
        result["error"] = error
    return result


def health(*, quick: bool = False) -> tuple[str, dict]:
    """("ok" | "degraded" | "down", each check's result). Without the database nothing works
    ("down"); without Redis or the broker pages still do, sessions from the database, but
    nothing new reaches the workers ("degraded"). `quick`: the database alone."""
    checks = {"database": run(database)}
    if not quick:
        checks["cache"] = run(cache)
        checks["broker"] = run(broker)
    if not checks["database"]["ok"]:
        return "down", checks
    return ("ok" if all(c["ok"] for c in checks.values()) else "degraded"), checks
