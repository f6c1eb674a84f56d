"""Contender and campaign pages in a real Chromium: htmx forms under the strict CSP."""

import pytest

from tasks.models import Campaign, Contender
from tests.conftest import browser_login, wait_until
from tests.factories import PASSWORD, TaskFactory, TestSetFactory, personas


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_fixes_inline_errors_creates_a_contender_and_a_campaign(browser_page):
    personas()
    ts = TestSetFactory(name="support", frozen=False, task_count=2)
    for i in range(2):
        TaskFactory(testset=ts, position=i, external_id=f"T-{i}")
    Contender.objects.create(name="vendor-export", provider="imported")
    page = browser_page
    errors = page.js_errors

    browser_login(page, "admin", PASSWORD)
    page.goto("/contenders/")
    page.fill("input[name=name]", "local-llama")
    page.select_option("select[name=provider]", "openai")
    page.fill("input[name=api_key_env]", "sk-live-123!")
    page.get_by_role("button", name="Create contender").click()
    page.get_by_text("the NAME of an environment variable").wait_for()
    assert page.url.endswith("/contenders/")  # swapped in place by htmx, no navigation
    # focus is on the first field to fix (keyboard and screen reader users land there)
    focused_invalid = "() => document.activeElement.getAttribute('aria-invalid')"
    assert wait_until(page, lambda: page.evaluate(focused_invalid) == "true")
    page.fill("input[name=model]", "llama-3.1-8b")
    page.fill("input[name=api_key_env]", "LLAMA_KEY")
    page.get_by_role("button", name="Create contender").click()
    page.get_by_role("cell", name="local-llama", exact=True).wait_for()
    assert Contender.objects.get(name="local-llama").api_key_env == "LLAMA_KEY"

    page.goto("/campaigns/new/")
    page.fill("input[name=slug]", "support-q1")
    page.select_option("select[name=testset]", str(ts.pk))
    page.check("text=local-llama")
    page.check("text=vendor-export")
    # The rubric as text (the form starts with the builder and a template): emptied.
    page.get_by_role("radio", name="Text (YAML or JSON)").check()
    # The switch swaps the builder for a text box holding its rows (an htmx request: until it
    # lands there is no text box); empty it once that has arrived.
    page.wait_for_load_state("networkidle")  # the switch's swap, and nothing after it
    rubric_text = "(document.querySelector('textarea[name=rubric]')?.value || '').length > 0"
    assert wait_until(page, lambda: page.evaluate(rubric_text), seconds=15)
    page.locator("textarea[name=rubric]").fill("")
    page.get_by_role("button", name="Create campaign").click()
    page.get_by_text("needs at least one dimension").wait_for()
    assert wait_until(page, lambda: page.evaluate(focused_invalid) == "true")
    page.fill(
        "textarea[name=rubric]", '[{"key": "accuracy", "anchors": {"1": "wrong", "5": "right"}}]'
    )
    page.get_by_role("button", name="Create campaign").click()
    page.wait_for_url("**/campaigns/support-q1/")
    page.get_by_role("heading", name="Generation").wait_for()
    assert "local-llama" in page.inner_text("#generation-progress")
    assert Campaign.objects.get(slug="support-q1").generations.count() == 4
    assert errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_poll_updates_the_status_badge_and_shows_failures_apart(browser_page):
    from django.utils import timezone

    from tasks.campaigns.definition import campaign_create
    from tasks.models import Generation

    personas()
    ts = TestSetFactory(name="support", frozen=True, task_count=2)
    for i in range(2):
        TaskFactory(testset=ts, position=i, external_id=f"T-{i}")
    campaign, _ = campaign_create(
        definition={
            "slug": "live",
            "testset": "support",
            "rubric": [{"key": "accuracy"}],
            "contenders": [{"name": "local-llama", "provider": "openai", "model": "m"}],
        }
    )
    Generation.objects.filter(campaign=campaign).update(queued_at=timezone.now())
    Campaign.objects.filter(pk=campaign.pk).update(status="generating")
    page = browser_page

    browser_login(page, "admin", PASSWORD)
    page.goto("/campaigns/live/")
    assert page.inner_text("#campaign-status") == "Generating"
    # The workers finish while the page is open: one output done, one failed for good.
    first, second = Generation.objects.filter(campaign=campaign).order_by("pk")
    now = timezone.now()
    Generation.objects.filter(pk=first.pk).update(status="done", output="ok", finished_at=now)
    Generation.objects.filter(pk=second.pk).update(
        status="failed", error="HTTP 401: invalid api key", finished_at=now
    )
    Campaign.objects.filter(pk=campaign.pk).update(status="reviewing")
    assert wait_until(page, lambda: page.inner_text("#campaign-status") == "Reviewing", 8)
    progress = page.inner_text("#generation-progress")
    assert "local-llama: 1 failed; most often (1 of 1): HTTP 401: invalid api key" in progress
    assert page.locator("#generation-progress progress").first.get_attribute("value") == "1"
    assert page.locator("[id=campaign-status]").count() == 1
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_long_unbroken_provider_error_wraps_instead_of_widening_the_page(browser_page):
    from django.utils import timezone

    from tasks.campaigns.definition import campaign_create
    from tasks.models import Generation

    personas()
    ts = TestSetFactory(name="support", frozen=True, task_count=1)
    TaskFactory(testset=ts, position=0, external_id="T-0")
    campaign, _ = campaign_create(
        definition={
            "slug": "wide",
            "testset": "support",
            "rubric": [{"key": "accuracy"}],
            "contenders": [{"name": "local-llama", "provider": "openai", "model": "m"}],
        }
    )
    blob = "HTTP 502: " + "x" * 500  # an error page or a token with no space to break at
    Generation.objects.filter(campaign=campaign).update(
        status="failed", error=blob, attempts=6, finished_at=timezone.now()
    )
    Campaign.objects.filter(pk=campaign.pk).update(status="reviewing")
    page = browser_page
    browser_login(page, "admin", PASSWORD)
    page.goto("/campaigns/wide/")
    page.get_by_role("heading", name="Provider errors").wait_for()
    assert "most often (1 of 1): HTTP 502: xxx" in page.inner_text("#generation-progress")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.js_errors == []
