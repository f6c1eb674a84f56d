"""evalsite.cache: Django's Redis cache, with one client per pool instead of one per call."""

import threading

from django.conf import settings

from evalsite.cache import RedisCache
from tests.services import need, redis_available


def test_it_is_the_configured_backend_and_reuses_one_client_across_calls():
    need(redis_available(), "needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0")
    assert settings.CACHES["default"]["BACKEND"] == "evalsite.cache.RedisCache"
    cache = RedisCache(settings.REDIS_URL, {"KEY_PREFIX": "test-cache-client"})
    cache.set("answer", {"value": 42}, 30)
    assert cache.get("answer") == {"value": 42}
    assert cache.get_many(["answer", "missing"]) == {"answer": {"value": 42}}
    clients = {id(cache._cache.get_client(write=w)) for w in (True, False, True)}
    assert len(clients) == 1  # Django's own client builds a new redis.Redis on every call
    assert cache.delete("answer") and cache.get("answer") is None


def test_threads_share_the_client_safely():
    need(redis_available(), "needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0")
    cache = RedisCache(settings.REDIS_URL, {"KEY_PREFIX": "test-cache-threads"})
    errors = []

    def work(n):
        try:
            for i in range(50):
                cache.set(f"k{n}-{i}", i, 30)
                assert cache.get(f"k{n}-{i}") == i
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    cache.delete_many([f"k{n}-{i}" for n in range(8) for i in range(50)])
