"""Outages named: admins and leads see a banner while Redis (the cache), the broker or the
database does not answer; with the database unreachable the API answers 503 with Retry-After
and pages a styled 503, never the server's bare "Internal Server Error"."""

from contextlib import contextmanager

import pytest
from django.db import connection
from django.test import TestCase, TransactionTestCase, override_settings

from evalsite.models import ApiToken
from evalsite.outage import outage_probe
from tests.conftest import browser_login
from tests.evalsite.test_outages import redis_down
from tests.factories import PASSWORD, personas
from tests.services import CLOSED_REDIS_URL, broker_at, need, postgres_available

BROKER_DOWN = "the task broker (Redis) is not answering: nothing new reaches the workers"
CACHE_DOWN = "Redis (the cache) is not answering: pages work from the database"


# No probe starts in the background during these tests: each asks at the moment it chooses.
@override_settings(OUTAGE_PROBE_SECONDS=3600)
class BannerTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def setUp(self):
        outage_probe.forget()
        self.addCleanup(outage_probe.forget)

    def page(self, username: str, url: str = "/campaigns/") -> str:
        self.client.force_login(self.users[username])
        return self.client.get(url).content.decode()

    def test_admins_and_leads_see_what_is_down_and_what_it_means(self):
        with redis_down(), broker_at(CLOSED_REDIS_URL), self.assertLogs("evalsite", "WARNING"):
            assert outage_probe.probe() == ["cache", "broker"]
            for username, url in (("admin", "/users/"), ("lead", "/campaigns/")):
                page = self.page(username, url)
                assert "Degraded service." in page and CACHE_DOWN in page and BROKER_DOWN in page
                assert CLOSED_REDIS_URL not in page  # no hosts or URLs on a page

    def test_reviewers_are_not_shown_it(self):
        with broker_at(CLOSED_REDIS_URL), self.assertLogs("evalsite", "WARNING"):
            assert outage_probe.probe() == ["broker"]
            assert "Degraded service." not in self.page("reviewer_a", "/review/")
            assert BROKER_DOWN in self.page("lead")

    def test_it_goes_once_every_dependency_answers_again(self):
        with broker_at(CLOSED_REDIS_URL), self.assertLogs("evalsite", "WARNING"):
            outage_probe.probe()
        assert BROKER_DOWN in self.page("admin")
        with self.assertLogs("evalsite.outage", "WARNING") as logs:
            assert outage_probe.probe() == []
        assert "every dependency answers" in logs.output[0]
        assert "Degraded service." not in self.page("admin")


@contextmanager
def database_unreachable():
    """The default connection pointed at a port where nothing listens (a new connection each
    request, as after a server restart); the shared server is not touched."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT="9")
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


class DatabaseDownTests(TransactionTestCase):
    def setUp(self):
        need(postgres_available(), "a database to take away")
        self.users = personas()
        self.token = ApiToken.issue(self.users["admin"])
        self.client.raise_request_exception = False

    def test_the_api_answers_503_with_retry_after(self):
        headers = {"Authorization": f"Bearer {self.token}"}
        with database_unreachable(), self.assertLogs("django.request", "ERROR"):
            response = self.client.get("/api/v1/campaigns", headers=headers)
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "30"
        assert response.json() == {"error": "the database is unreachable; try again later"}
        # back: the same request answers
        assert self.client.get("/api/v1/campaigns", headers=headers).status_code == 200

    def test_a_page_is_a_styled_503_not_a_bare_server_error(self):
        self.client.force_login(self.users["admin"])
        with database_unreachable(), self.assertLogs("django.request", "ERROR"):
            response = self.client.get("/campaigns/")
        assert response.status_code == 503 and response.headers["Retry-After"] == "30"
        page = response.content.decode()
        assert "<h1>Try again shortly</h1>" in page and "css/site.css" in page
        assert "The database is not answering" in page
        assert "Internal Server Error" not in page

    @override_settings(ROOT_URLCONF="tests.evalsite.test_outage_banner_urls")
    def test_any_other_error_is_the_styled_500_page(self):
        with self.assertLogs("django.request", "ERROR"):
            response = self.client.get("/broken/")
        assert response.status_code == 500
        page = response.content.decode()
        assert "Something went wrong on our side" in page and "css/site.css" in page


@pytest.mark.browser
def test_the_banner_shows_with_redis_unreachable(browser_page, transactional_db):
    """Redis pointed at a port where nothing listens (cache and broker): the admin's pages
    name the outage within seconds, and pages still load without waiting for the probe."""
    personas()
    outage_probe.forget()
    page = browser_page
    with redis_down(), broker_at(CLOSED_REDIS_URL):
        browser_login(page, "admin", PASSWORD)
        banner = page.locator("[data-outage]")
        for _ in range(40):  # the first page starts the probe; a later one shows its answer
            page.goto("/campaigns/")
            if banner.count():
                break
            page.wait_for_timeout(250)
        assert banner.is_visible()
        assert "Redis (the cache) is not answering" in banner.inner_text()
        assert "nothing new reaches the workers" in banner.inner_text()
        assert page.js_errors == []
    outage_probe.forget()
