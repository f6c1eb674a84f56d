"""Judges in a real Chromium: the campaign page's Judges section (loaded by htmx), the Judge
button, and the calibration page with its chart, under the strict CSP."""

import pytest

from reviews.judges.models import Judgement
from reviews.judges.services import judgement_run
from tests.conftest import browser_login
from tests.factories import PASSWORD, personas
from tests.fake_llm import FakeLLM
from tests.reviews.test_judges import agreeing, build, make_judge


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_starts_judging_from_the_campaign_page_and_reads_the_calibration(browser_page):
    campaign = build(personas(), items=12, slug="judged-live")
    page = browser_page
    with FakeLLM() as fake:
        fake.judge("live-judge", agreeing)
        judge = make_judge(fake, "live-judge", position_swap=False)
        browser_login(page, "admin", PASSWORD)
        page.goto(f"/campaigns/{campaign.slug}/")
        section = page.locator("#campaign-judges")
        section.get_by_role("link", name="live-judge").wait_for()  # swapped in by htmx
        section.get_by_role("button", name="Judge").click()
        page.get_by_text("Queued 12 judgements for live-judge.").wait_for()
        assert page.url.endswith(f"/campaigns/{campaign.slug}/judges/live-judge/")
        # The workers' part, done here: every queued judgement run once.
        for pk in Judgement.objects.filter(judge=judge).values_list("pk", flat=True):
            judgement_run(judgement_id=pk)
        page.reload()
        page.get_by_text("12 of 12 judgements done").wait_for()
        page.get_by_role("heading", name="accuracy").wait_for()
        assert "insufficient" in page.inner_text(".judge-dimension")  # 12 settled items < 30
        chart = page.get_by_role("img", name="judge against panel scores for accuracy")
        assert chart.locator("circle").count() >= 3
        assert page.js_errors == []
