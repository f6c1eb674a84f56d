"""Costs carry the site's currency (EVALSITE_CURRENCY, USD by default) wherever they are shown:
the campaign page, contenders, dashboards and their CSV, monitor pages, the report JSON."""

import csv
import io
import os
import subprocess
import sys
from decimal import Decimal

from django.template import Context, Template
from django.test import TestCase, override_settings

from evalsite.models import ApiToken
from reviews.records import reviews_import
from tasks.models import Generation
from tests.factories import GenerationFactory, personas
from tests.reviews.test_records import jsonl, make_campaign, sample_records
from tests.services import ROOT


def settings_value(**env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "EVALSITE_CURRENCY"} | env
    return subprocess.run(
        [sys.executable, "-c", "import evalsite.settings as s; print(s.EVALSITE_CURRENCY)"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_currency_comes_from_the_environment_and_defaults_to_usd():
    assert settings_value().stdout.strip() == "USD"
    assert settings_value(EVALSITE_CURRENCY="EUR").stdout.strip() == "EUR"
    refused = settings_value(EVALSITE_CURRENCY="US dollars")
    assert refused.returncode != 0 and "EVALSITE_CURRENCY must be a short code" in refused.stderr


@override_settings(EVALSITE_CURRENCY="EUR")
class CurrencyShownTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = make_campaign(slug="priced")
        reviews_import(campaign=cls.campaign, data=jsonl(*sample_records()), fmt="jsonl")
        Generation.objects.filter(campaign=cls.campaign).update(cost=Decimal("0.0021"))

    def setUp(self):
        self.client.force_login(self.users["admin"])

    def test_the_campaign_page_shows_each_contenders_cost_with_the_currency(self):
        page = self.client.get("/campaigns/priced/").content.decode()
        assert '<td class="num">0.0084 EUR</td>' in page  # four tasks at 0.0021

    def test_contender_prices_say_their_currency(self):
        GenerationFactory(campaign=self.campaign)  # a contender exists
        page = self.client.get("/contenders/").content.decode()
        assert "Price in/out per M tokens (EUR)" in page
        assert "in EUR per million tokens" in page  # the new-contender form

    def test_the_dashboards_their_csv_and_the_report_carry_the_currency(self):
        response = self.client.get("/campaigns/priced/dashboard/cost/")
        table = next(t for t in response.context["tables"] if t.key == "cost-latency")
        cells = [cell["text"] for row in table.html_rows for cell in row]
        assert "0.0021 EUR" in cells, cells
        download = self.client.get("/campaigns/priced/dashboard/cost/cost-latency.csv")
        header = next(csv.reader(io.StringIO(b"".join(download.streaming_content).decode())))
        assert "cost per task (one answer) (EUR)" in header
        token = ApiToken.issue(self.users["lead"])
        report = self.client.get(
            "/api/v1/campaigns/priced/report", headers={"Authorization": f"Bearer {token}"}
        ).json()
        assert report["currency"] == "EUR"

    def test_monitor_pages_name_the_currency_of_a_cost_metric(self):
        shown = Template("{% load numbers %}{{ a|with_unit }} · {{ b|with_unit }}").render(
            Context({"a": "cost_per_task", "b": "latency_ms.p95"})
        )
        assert shown == "cost_per_task (EUR) · latency_ms.p95"
