"""Monitors in the browser: a run page that follows its run, figures people can read, a
regressed task with its failed check and both transcripts; in Chromium, a monitor created,
paused, resumed and deleted without a file, at 1280 and 390 px."""

import re
from pathlib import Path

import pytest
from django.test import TestCase, override_settings
from django.urls import reverse

from tasks.generation.run import generation_run
from tasks.models import Generation, Monitor, MonitorRun
from tasks.monitors.definition import monitor_create
from tasks.monitors.grading import monitor_run_finish
from tasks.monitors.runs import monitor_run_start
from tests.conftest import browser_login
from tests.factories import PASSWORD, ContenderFactory, personas
from tests.fake_llm import FakeLLM
from tests.tasks.test_monitors import FAILING, definition, make_testset, steady

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
RAW_FLOAT = re.compile(r"(?<![\w.-])\d+\.\d{5,}(?![\w])")  # 0.3876953125, 153.20000001

TRANSCRIPT = [
    {
        "turn": 1,
        "user": None,
        "steps": [
            {
                "text": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "get_order",
                        "arguments": {"order_id": "A-17"},
                        "raw": '{"order_id": "A-17"}',
                        "valid": True,
                        "unknown": False,
                    },
                ],  # fmt: skip
                "tool_results": [
                    {
                        "id": "c1",
                        "name": "get_order",
                        "result": {"status": "shipped"},
                        "error": "",
                        "unmocked": False,
                    },
                ],  # fmt: skip
            },
            {"text": "Your order has shipped.", "tool_calls": [], "tool_results": []},
        ],
        "answer": "Your order has shipped.",
    }
]


@override_settings(MONITOR_WEBHOOK_SECRET="s")
class RunAndTaskPageTests(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLLM()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url=cls.fake.base_url)

    def setUp(self):
        self.fake.served.clear()
        self.fake.rewrites.clear()
        self.client.force_login(self.users["lead"])

    def _graded_run(self, monitor):
        run = monitor_run_start(monitor=monitor)
        for pk in Generation.objects.filter(campaign=run.campaign).values_list("pk", flat=True):
            generation_run(generation_id=pk)
        return monitor_run_finish(run_id=run.pk)

    def _two_runs(self):
        monitor = monitor_create(definition=definition(alerts={}))
        steady(monitor)
        monitor.refresh_from_db()
        self._graded_run(monitor)
        self.fake.rewrite(
            "oa",
            lambda a: (
                a.replace("answers", "says")
                if any(a.endswith(f"number {n}?") for n in FAILING)
                else a
            ),
        )
        self.fake.serve("oa", "oa-small")
        return monitor, self._graded_run(monitor)

    def test_a_generating_run_page_polls_and_its_poll_gets_the_body_alone(self):
        monitor = monitor_create(definition=definition(alerts={}))
        from unittest import mock

        with mock.patch("tasks.generation.services._send"):
            run = monitor_run_start(monitor=monitor)
        url = reverse("monitor_run", args=["golden", run.number])
        page = self.client.get(url).content.decode()
        assert 'hx-trigger="load delay:2s"' in page and "0/10 done" in page
        poll = self.client.get(url, headers={"HX-Request": "true", "HX-Target": "run-body"})
        body = poll.content.decode()
        assert body.lstrip().startswith('<div id="run-body"') and "<html" not in body
        # Rows finish: the next poll shows it.
        Generation.objects.filter(pk__in=Generation.objects.values("pk")[:4]).update(
            status="done", output="x", queued_at=None
        )
        body = self.client.get(url, headers={"HX-Request": "true", "HX-Target": "run-body"})
        assert "4/10 done" in body.content.decode()
        Generation.objects.update(status="done", output="answers", queued_at=None)
        monitor_run_finish(run_id=run.pk)
        done = self.client.get(url, headers={"HX-Request": "true", "HX-Target": "run-body"})
        text = done.content.decode()
        assert "hx-trigger" not in text and "this run is the first" in text
        assert "check_pass_rate" in text and "1.000" in text  # its own figures, formatted

    def test_the_pages_show_formatted_figures_never_raw_floats_or_dicts(self):
        monitor, run = self._two_runs()
        for url in (
            reverse("monitor_detail", args=[monitor.slug]),
            reverse("monitor_run", args=[monitor.slug, run.number]),
        ):
            page = self.client.get(url).content.decode()
            text = re.sub(r"<[^>]+>", " ", page)
            assert not RAW_FLOAT.search(text), (url, RAW_FLOAT.search(text).group(0))
            assert "{'" not in text and "{&#x27;" not in text, url
        run_page = self.client.get(reverse("monitor_run", args=[monitor.slug, run.number]))
        text = run_page.content.decode()
        assert "Served: oa: 10 → oa-small: 10" in text
        assert "[-0.70, -0.10]" in text and "-0.40" in text  # delta to the interval's precision
        assert "failed <strong>regex</strong>" in text

    def test_a_regressed_task_names_its_failed_check_and_shows_both_transcripts(self):
        monitor, run = self._two_runs()
        for r in MonitorRun.objects.all():
            Generation.objects.filter(campaign=r.campaign, task__external_id="T-2").update(
                transcript=TRANSCRIPT
            )
        page = self.client.get(reverse("monitor_task", args=[monitor.slug, run.number, "T-2"]))
        text = page.content.decode()
        assert (
            '<li class="error" data-check="regex"><strong>regex</strong> failed: no match' in text
        )
        assert '<li class="ok" data-check="regex"><strong>regex</strong> passed' in text
        assert "oa answers: Question number 2?" in text and "oa says: Question number 2?" in text
        assert text.count("<code>get_order</code>") == 2  # both sides' tool calls
        assert text.count("&quot;shipped&quot;") == 2 and 'data-side="baseline"' in text


# -- Chromium --------------------------------------------------------------------------------------


def _no_sideways_scroll(page, what: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"{what} scrolls sideways on a phone ({width}px)"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_an_admin_creates_pauses_resumes_and_deletes_a_monitor_in_the_browser(browser_page, width):
    personas()
    make_testset()
    ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    ARTIFACTS.mkdir(exist_ok=True)
    browser_login(page, "admin", PASSWORD)
    page.goto("/monitors/")
    page.get_by_role("link", name="New monitor").first.click()
    page.get_by_role("heading", name="New monitor").wait_for()
    page.fill("input[name=slug]", "golden")
    page.fill("input[name=name]", "Golden set")
    page.select_option("select[name=testset]", "golden@2")
    page.get_by_label("oa").check()
    # A schedule that never fires is named as the admin types; a good one shows three times.
    page.fill("input[name=schedule]", "0 0 31 2 *")
    page.get_by_text("never fires").wait_for()
    page.fill("input[name=schedule]", "0 6 * * *")
    page.locator("[data-testid=fire-times]").wait_for()
    assert page.inner_text("[data-testid=fire-times]").count("06:00") == 3
    page.select_option("select[name=t-0-metric]", "check_pass_rate")
    page.select_option("select[name=t-0-rule]", "max_drop")
    page.fill("input[name=t-0-value]", "0.05")
    page.fill("input[name=t-0-confidence]", "0.95")
    page.fill("input[name=email]", "lead@example.com")
    _no_sideways_scroll(page, "the new-monitor form") if width == 390 else None
    page.screenshot(path=str(ARTIFACTS / f"monitor-new-{width}.png"), full_page=True)
    page.get_by_role("button", name="Create monitor").click()
    page.get_by_text("Created monitor golden.").wait_for()
    monitor = Monitor.objects.get()
    assert monitor.thresholds == [
        {"metric": "check_pass_rate", "max_drop": 0.05, "confidence": 0.95}
    ]
    assert page.locator("[data-testid=next-runs]").count() == 1
    if width == 390:
        _no_sideways_scroll(page, "the monitor page")
    page.screenshot(path=str(ARTIFACTS / f"monitor-detail-{width}.png"), full_page=True)

    page.get_by_role("button", name="Pause").click()
    page.locator("[data-testid=paused]").wait_for()
    assert Monitor.objects.get().paused
    page.get_by_role("button", name="Resume").click()
    page.get_by_text("Resumed its schedule.").wait_for()
    assert not Monitor.objects.get().paused

    page.get_by_role("link", name="Edit").click()
    page.fill("input[name=schedule]", "30 7 * * 1")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved monitor golden.").wait_for()
    assert Monitor.objects.get().schedule == "30 7 * * 1"

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    page.get_by_text("Deleted monitor golden").wait_for()
    assert Monitor.objects.get().archived_at is not None
    assert page.locator("text=Golden set").count() == 0
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_run_and_task_pages_fit_a_phone(browser_page):
    personas()
    make_testset()
    fake = FakeLLM()
    try:
        ContenderFactory(name="oa", provider="openai", model="oa", base_url=fake.base_url)
        monitor = monitor_create(definition=definition(alerts={}))
        steady(monitor)
        monitor.refresh_from_db()
        for rewrite in (False, True):
            if rewrite:
                fake.rewrite("oa", lambda a: a.replace("answers", "says"))
                fake.serve("oa", "oa-small")
            run = monitor_run_start(monitor=monitor)
            for pk in Generation.objects.filter(campaign=run.campaign).values_list("pk", flat=True):
                generation_run(generation_id=pk)
            monitor_run_finish(run_id=run.pk)
        Generation.objects.filter(task__external_id="T-2").update(transcript=TRANSCRIPT)
    finally:
        fake.close()
    page = browser_page
    browser_login(page, "lead", PASSWORD)
    page.set_viewport_size({"width": 390, "height": 844})
    for name, url in (
        ("monitor-run", reverse("monitor_run", args=["golden", 2])),
        ("monitor-task", reverse("monitor_task", args=["golden", 2, "T-2"])),
        ("monitor-detail-runs", reverse("monitor_detail", args=["golden"])),
    ):
        page.goto(url)
        page.screenshot(path=str(ARTIFACTS / f"{name}-390.png"), full_page=True)
        _no_sideways_scroll(page, name)
    assert page.js_errors == []
