"""Django's Redis cache, keeping one client per connection pool, and degrading when Redis is down.

Django's RedisCacheClient builds a new `redis.Redis` for every operation, and building one
(its table of ~150 response callbacks) cost more than the GET itself: with sessions read from
Redis, that was on every page view. A client is safe to share; its pool holds the connections.

Django's own backend raises when Redis does not answer, and cached_db sessions let that through
(the session's exists/set/delete), so every page with a session was a 500 while Redis was
down. Here a read that cannot reach Redis is a miss and a write is skipped, with one warning
per outage: sessions then live in the database alone. After a failure Redis is left alone for
RETRY_AFTER_SECONDS, so a page does not pay a connection timeout per cache call.
"""

import logging
import threading
import time

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient as DjangoRedisCacheClient
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5.0
UNREACHABLE = (RedisConnectionError, RedisTimeoutError)


class _Outage:
    """One Redis server's state in this process, shared by every thread's cache object.

    `lost`: keys whose write or delete never reached Redis. Redis may still hold an older
    value for them (a session logged out meanwhile), so they are deleted before anything else
    once Redis answers again.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down_since: float | None = None
        self.retry_at = 0.0
        self.lost: set[str] = set()

    def failed(self, exc: Exception, keys) -> None:
        with self.lock:
            self.lost.update(keys)
            self.retry_at = time.monotonic() + RETRY_AFTER_SECONDS
            first = self.down_since is None
            if first:
                self.down_since = time.monotonic()
        if first:
            log.warning(
                "Redis cache unreachable (%s): serving without it, sessions from the database",
                exc,
            )


_outages: dict[str, _Outage] = {}
_outages_lock = threading.Lock()


class RedisCacheClient(DjangoRedisCacheClient):
    def __init__(self, servers, **options):
        # Bounded: a Redis that does not answer costs a page at most about a second, once.
        options = {
            "socket_connect_timeout": 1,
            "socket_timeout": 1,
            "retry": Retry(NoBackoff(), 0),
            **options,
        }
        super().__init__(servers, **options)
        self._clients = {}
        with _outages_lock:
            self._outage = _outages.setdefault(" ".join(servers), _Outage())

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client

    def _guarded(self, call, *args, miss=None, lost=()):
        """`call(*args)`, or `miss` when Redis does not answer (`lost`: keys it would write)."""
        outage = self._outage
        if outage.down_since is not None and time.monotonic() < outage.retry_at:
            with outage.lock:
                outage.lost.update(lost)
            return miss
        try:
            if outage.down_since is not None:
                self._recovered()
            return call(*args)
        except UNREACHABLE as exc:
            outage.failed(exc, lost)
            return miss

    def _recovered(self) -> None:
        outage = self._outage
        with outage.lock:
            stale = list(outage.lost)
        if stale:
            self.get_client(write=True).delete(*stale)
        with outage.lock:
            outage.lost.difference_update(stale)
            outage.down_since = None
        log.warning("Redis cache answers again; %d stale keys dropped", len(stale))

    def get(self, key, default):
        return self._guarded(super().get, key, default, miss=default)

    def get_many(self, keys):
        return self._guarded(super().get_many, keys, miss={})

    def has_key(self, key):
        return self._guarded(super().has_key, key, miss=False)

    def add(self, key, value, timeout):
        return self._guarded(super().add, key, value, timeout, miss=False)

    def touch(self, key, timeout):
        return self._guarded(super().touch, key, timeout, miss=False)

    def set(self, key, value, timeout):
        return self._guarded(super().set, key, value, timeout, lost=[key])

    def set_many(self, data, timeout):
        return self._guarded(super().set_many, data, timeout, lost=list(data))

    def delete(self, key):
        return self._guarded(super().delete, key, miss=False, lost=[key])

    def delete_many(self, keys):
        return self._guarded(super().delete_many, keys, lost=list(keys))

    # incr/decr and clear still raise: a counter or a flush cannot pretend to have worked.

    def ping(self) -> bool:
        """A real round trip (for /healthz), whatever the outage state says."""
        return self.get_client(write=True).ping()


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = RedisCacheClient
