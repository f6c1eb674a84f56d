import pytest

from tests.services import chromium_path, need, postgres_available, redis_available


def pytest_runtest_setup(item):
    if item.get_closest_marker("postgres"):
        need(postgres_available(), "needs PostgreSQL: set DATABASE_URL=postgres://...")
    if item.get_closest_marker("redis"):
        need(redis_available(), "needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0")
    if item.get_closest_marker("browser"):
        need(chromium_path() is not None, "needs Chromium at /usr/bin/chromium (apt-get install chromium)")


@pytest.fixture
def celery_worker(transactional_db):
    """A real worker process; the test must use TransactionTestCase semantics (committed rows)."""
    need(postgres_available(), "a real worker needs PostgreSQL (it cannot see an in-memory SQLite test db)")
    need(redis_available(), "a real worker needs Redis")
    from tests.services import Worker, purge_broker

    purge_broker()
    worker = Worker()
    yield worker
    worker.stop()
