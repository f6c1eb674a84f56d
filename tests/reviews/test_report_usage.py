"""Throughput, reasoning and cached tokens, and the prices used, in the report, the cost page
and the monitor metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.test import TestCase, override_settings

from reviews.report.campaign import campaign_report
from reviews.stats.usage import usage_figures
from tasks.generation.run import generation_run
from tasks.models import Generation
from tasks.monitors.metrics import run_metrics, run_table
from tests.factories import personas
from tests.fake_llm import FakeLLM
from tests.tasks.test_generation import make_campaign


def test_throughput_percentiles_and_reasoning_cost_per_task_by_hand():
    gens = pd.DataFrame(
        {
            "contender": ["a"] * 5 + ["b"],
            "task": [1, 1, 2, 3, 4, 1],
            "tokens_per_s": [10.0, 20.0, 30.0, 40.0, 100.0, np.nan],
            "reasoning_tokens": [5, 7, np.nan, 0, 0, np.nan],
            "cache_read_tokens": [np.nan] * 6,
            "cache_write_tokens": [np.nan] * 6,
            "reasoning_cost": [0.002, 0.004, np.nan, 0.0, 0.0, np.nan],
        }
    )
    figures = usage_figures(gens)
    # numpy's linear p95 of 10, 20, 30, 40, 100: 40 + 0.8 x (100 - 40) = 88.
    assert figures["a"]["tokens_per_s"] == {"p50": 30.0, "p95": 88.0}
    assert figures["a"]["n_timed"] == 5 and figures["a"]["reasoning_tokens"] == 12
    assert figures["a"]["cache_read_tokens"] is None  # never reported: unknown, not 0
    # Task 1's mean 0.003, tasks 3 and 4 at 0 (task 2 unknown): (0.003 + 0 + 0) / 3.
    assert figures["a"]["reasoning_cost_per_task"] == 0.001
    assert figures["b"]["tokens_per_s"] is None and figures["b"]["n_timed"] == 0


def test_monitor_runs_report_tokens_per_s():
    rows = [
        {"task": t, "sample": 0, "status": "done", "output": "ok", "tokens_per_s": v}
        for t, v in (("T1", 10.0), ("T2", 30.0), ("T3", 50.0))
    ]
    metrics = run_metrics(run_table(rows, tasks=["T1", "T2", "T3"], samples=1))
    assert metrics["tokens_per_s.p50"] == 30.0 and metrics["tokens_per_s.p95"] == 48.0


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_MAX_ATTEMPTS=2)
class ReportUsageTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # 10 ms between streamed chunks: a rate that is measured, not a division by zero.
        cls.fake = FakeLLM(chunk_delay=0.01)
        cls.fake.think("deep", "Step one then step two.")
        cls.fake.usage_parts("deep", prompt_tokens=300_000, cached=100_000)

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_the_report_and_cost_page_give_throughput_reasoning_and_the_prices_used(self):
        campaign = make_campaign(
            self.fake,
            tasks=2,
            slug="usage",
            contenders=[
                {
                    "name": "deep",
                    "provider": "openai",
                    "model": "deep",
                    "price_in_per_mtok": 1,
                    "price_out_per_mtok": 4,
                    "prices": {
                        "reasoning_per_mtok": 6,
                        "tiers": [{"above_input_tokens": 200_000, "price_in_per_mtok": 2}],
                    },
                },
                {"name": "flat", "provider": "anthropic", "model": "flat"},
            ],
        )
        for row in Generation.objects.filter(campaign=campaign):
            assert generation_run(generation_id=row.pk).action == "done"
        report = campaign_report(campaign=campaign, n_boot=50)
        deep, flat = report["usage"]["deep"], report["usage"]["flat"]
        assert (
            deep["n_timed"] == 2 and 0 < deep["tokens_per_s"]["p50"] <= deep["tokens_per_s"]["p95"]
        )
        # "Step one then step two." is 5 reasoning tokens per answer, 2 answers.
        assert deep["reasoning_tokens"] == 10 and deep["cache_read_tokens"] == 200_000
        # Each answer: 5 reasoning tokens x 6 per million.
        assert deep["reasoning_cost_per_task"] == 0.00003
        assert deep["prices"] == {
            "source": "definition",
            "price_in_per_mtok": 1.0,
            "price_out_per_mtok": 4.0,
            "reasoning_per_mtok": 6.0,
            "tiers": [{"above_input_tokens": 200_000, "price_in_per_mtok": 2.0}],
        }
        # No price given, none in the price data for a local model: free, and said so.
        assert flat["prices"]["source"] == "none" and flat["reasoning_tokens"] is None
        users = personas()
        self.client.force_login(users["lead"])
        body = self.client.get("/campaigns/usage/dashboard/cost/").content.decode()
        assert "Throughput, reasoning and cache" in body and "Prices (per million tokens)" in body
        assert "above 200,000: price_in 2" in body
