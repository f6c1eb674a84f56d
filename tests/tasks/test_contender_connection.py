"""A contender's "Test connection": one short call to its endpoint (the local fake server),
said in words: status, served model, latency, or what went wrong."""

from pathlib import Path

import pytest
from django.test import TestCase, override_settings

from tasks.campaigns.contenders import PROBE_TOKENS, contender_connection_test
from tests.conftest import browser_login
from tests.factories import PASSWORD, ContenderFactory, personas
from tests.fake_llm import FakeLLM

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@override_settings(GENERATION_READ_TIMEOUT=3)
class ConnectionTestTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def contender(self, model: str, **fields):
        return ContenderFactory(
            name=f"c-{model}", base_url=self.fake.base_url, model=model, **fields
        )

    def test_it_says_which_model_answered_and_how_fast(self):
        self.fake.serve("probe-ok", "probe-ok-2025-01-01")
        check = contender_connection_test(
            contender=self.contender("probe-ok", params={"max_tokens": 900})
        )
        assert check.ok and check.status == 200
        assert check.served_model == "probe-ok-2025-01-01"
        assert check.message.startswith("Connected: probe-ok-2025-01-01 answered in ")
        assert check.message.endswith("(asked for probe-ok).")
        assert "probe-ok answers:" in check.answer
        # One short request, its answer capped, whatever the contender's own cap.
        calls = self.fake.calls_for("probe-ok")
        assert len(calls) == 1
        assert calls[0]["body"]["max_tokens"] == PROBE_TOKENS

    def test_it_says_a_server_error_in_words(self):
        self.fake.script("probe-500", "500")
        check = contender_connection_test(contender=self.contender("probe-500"))
        assert not check.ok and check.status == 500
        assert check.message.startswith("127.0.0.1:")
        assert "failed on its side (500)" in check.message

    def test_it_says_when_nothing_listens(self):
        contender = ContenderFactory(name="nowhere", base_url="http://127.0.0.1:9/v1")
        check = contender_connection_test(contender=contender)
        assert not check.ok and check.status is None
        assert check.message.startswith("Could not connect to 127.0.0.1:9")

    def test_it_says_a_missing_key_variable(self):
        contender = self.contender("probe-key", api_key_env="EVALSITE_TEST_NO_SUCH_KEY")
        check = contender_connection_test(contender=contender)
        assert not check.ok
        assert "environment variable EVALSITE_TEST_NO_SUCH_KEY is not set" in check.message

    def test_an_admin_tests_from_the_edit_page_and_a_lead_may_not(self):
        contender = self.contender("probe-page")
        self.client.force_login(self.users["admin"])
        response = self.client.post(
            f"/contenders/{contender.pk}/test", headers={"HX-Request": "true"}
        )
        html = response.content.decode()
        assert response.status_code == 200
        assert "Connected" in html and "HTTP 200" in html
        self.client.force_login(self.users["lead"])
        assert self.client.post(f"/contenders/{contender.pk}/test").status_code == 403


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_an_admin_tests_a_contenders_connection(browser_page, width):
    fake = FakeLLM()
    try:
        personas()
        good = ContenderFactory(name="good-endpoint", base_url=fake.base_url, model="m-good")
        page = browser_page
        page.set_viewport_size({"width": width, "height": 900})
        browser_login(page, "admin", PASSWORD)
        page.goto(f"/contenders/{good.pk}/edit/")
        page.get_by_role("button", name="Test connection").click()
        page.locator(".connection-result", has_text="Connected: m-good answered").wait_for()
        assert "HTTP 200" in page.inner_text(".connection-result")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"contender-test-{width}.png"), full_page=True)
        assert page.js_errors == []
    finally:
        fake.close()
