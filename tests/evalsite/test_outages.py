"""Redis, the broker or the database down: pages keep working where they can, /healthz says
which dependency is missing."""

from unittest import mock

import pytest
import redis
from django.conf import settings
from django.test import TestCase, override_settings

from evalsite import cache as cache_module
from evalsite.cache import RedisCache
from tests.factories import PASSWORD, personas
from tests.services import CLOSED_REDIS_URL as CLOSED
from tests.services import broker_at


def redis_down():
    """The settings REDIS_URL gives, with nothing listening there: a new outage each time."""
    cache_module._outages.clear()
    return override_settings(
        CACHES={"default": {"BACKEND": "evalsite.cache.RedisCache", "LOCATION": CLOSED}},
        SESSION_ENGINE="django.contrib.sessions.backends.cached_db",
    )


class RedisDownPagesTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        self.enterContext(redis_down())

    def test_it_serves_logged_in_pages_from_database_sessions(self):
        self.client.raise_request_exception = True
        with self.assertLogs("evalsite.cache", "WARNING") as logs:
            response = self.client.post("/login/", {"username": "admin", "password": PASSWORD})
            assert response.status_code == 302
            for url in ("/campaigns/", "/users/", "/account/", "/testsets/", "/contenders/"):
                assert self.client.get(url).status_code == 200, url
            assert self.client.get("/").status_code == 302  # home sends the admin on
        assert len(logs.records) == 1  # once per outage, not once per page
        assert "Redis cache unreachable" in logs.output[0]
        assert self.client.post("/logout/").status_code == 302
        assert self.client.get("/account/").status_code == 302  # logged out for good
        response = self.client.post("/login/", {"username": "reviewer_a", "password": PASSWORD})
        assert response.status_code == 302
        assert self.client.get("/review/").status_code == 200

    def test_it_answers_misses_and_skips_writes_without_waiting(self):
        from django.core.cache import cache

        cache.set("k", 1)
        assert cache.get("k") is None and cache.get("k", 7) == 7
        assert cache.get_many(["k"]) == {} and "k" not in cache
        assert cache.add("k", 1) is False and cache.delete("k") is False
        cache.set_many({"a": 1})
        cache.delete_many(["a"])


@pytest.mark.redis
def test_a_key_whose_delete_failed_is_deleted_once_redis_answers(monkeypatch):
    # A logout while Redis is down deletes the session row but not Redis's copy: without
    # this, the old cookie would log in again from that copy once Redis is back.
    cache_module._outages.clear()
    monkeypatch.setattr(cache_module, "RETRY_AFTER_SECONDS", 0)
    cache = RedisCache(settings.REDIS_URL, {"KEY_PREFIX": "test-outage"})
    cache.set("session", "logged in", 30)
    down = redis.exceptions.ConnectionError("Connection refused")
    with mock.patch.object(redis.Redis, "execute_command", side_effect=down):
        assert cache.delete("session") is False
        assert cache.get("session") is None
    assert cache.get("session") is None  # back: the stale copy went first
    cache.set("session", "new", 30)
    assert cache.get("session") == "new"
    cache.delete("session")


class HealthzTests(TestCase):
    def test_it_reports_every_dependency_without_login(self):
        response = self.client.get("/healthz")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ok"
        assert set(body["checks"]) == {"database", "cache", "broker"}
        assert all(c["ok"] and c["ms"] >= 0 for c in body["checks"].values())

    def test_quick_asks_the_database_alone(self):
        response = self.client.get("/healthz?quick")
        assert response.status_code == 200
        assert response.json() == {
            "status": "ok",
            "checks": {"database": {"ok": True, "ms": mock.ANY}},
        }

    def test_it_is_degraded_but_200_without_redis_and_the_broker(self):
        with redis_down(), broker_at(CLOSED):
            response = self.client.get("/healthz")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "degraded"
        assert body["checks"]["database"]["ok"]
        for name in ("cache", "broker"):
            assert body["checks"][name]["ok"] is False, name
            assert body["checks"][name]["ms"] < 1500
        assert CLOSED not in response.content.decode()  # public: no hosts, no URLs

    def test_it_is_degraded_when_only_the_broker_is_down(self):
        with broker_at(CLOSED):
            body = self.client.get("/healthz").json()
        assert body["status"] == "degraded"
        assert body["checks"]["cache"]["ok"] and not body["checks"]["broker"]["ok"]

    def test_it_is_503_down_when_the_database_is_down(self):
        from django.db import OperationalError
        from django.db.backends.utils import CursorWrapper

        with mock.patch.object(CursorWrapper, "execute", side_effect=OperationalError("down")):
            response = self.client.get("/healthz")
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "down"
        assert body["checks"]["database"] == {
            "ok": False,
            "ms": mock.ANY,
            "error": "OperationalError",
        }
