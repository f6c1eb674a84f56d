"""Prices: tiers by prompt length, cached reads and writes, reasoning, from the definition or
the maintained price data, applied to what each provider's usage block reports."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import TestCase, override_settings

from tasks.campaigns.definition import DefinitionError, campaign_create
from tasks.generation.run import generation_run
from tasks.models import Generation
from tests.fake_llm import FakeLLM
from tests.tasks.test_generation import make_campaign

LONG_CONTEXT = {
    "price_in_per_mtok": 2,
    "price_out_per_mtok": 8,
    "prices": {
        "cache_read_per_mtok": 0.5,
        "reasoning_per_mtok": 10,
        "tiers": [
            {
                "above_input_tokens": 200_000,
                "price_in_per_mtok": 4,
                "price_out_per_mtok": 12,
                "cache_read_per_mtok": 1,
            }
        ],
    },
}


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_MAX_ATTEMPTS=2)
class PricedGenerationTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def run_one(self, slug: str, contender: dict) -> Generation:
        other = {"name": f"{slug}-other", "provider": "openai", "model": "other"}
        campaign = make_campaign(self.fake, tasks=1, slug=slug, contenders=[contender, other])
        row = Generation.objects.get(campaign=campaign, contender__name=contender["name"])
        assert generation_run(generation_id=row.pk).action == "done"
        row.refresh_from_db()
        return row

    def test_a_250k_prompt_is_billed_at_the_long_context_tier_and_cached_reads_at_theirs(self):
        self.fake.usage_parts("lc", prompt_tokens=250_000, cached=100_000)
        row = self.run_one(
            "lc", {"name": "lc", "provider": "openai", "model": "lc", **LONG_CONTEXT}
        )
        # "lc answers: Question number 1?" is 5 output tokens.
        assert (row.input_tokens, row.cache_read_tokens, row.output_tokens) == (250_000, 100_000, 5)
        # Above 200k every token of the call is at the tier: 150k uncached x 4, 100k cached
        # x 1, 5 output x 12, per million.
        assert row.cost == Decimal("0.70006000")

    def test_a_prompt_below_the_tier_is_billed_at_the_base_rates(self):
        self.fake.usage_parts("base", prompt_tokens=150_000, cached=100_000)
        row = self.run_one(
            "base", {"name": "base", "provider": "openai", "model": "base", **LONG_CONTEXT}
        )
        # 50k uncached x 2, 100k cached x 0.5, 5 output x 8.
        assert row.cost == Decimal("0.15004000")

    def test_reasoning_tokens_are_counted_and_billed_apart(self):
        self.fake.think("thinker", "First I add, then I check the sum.")
        self.fake.usage_parts("thinker", prompt_tokens=1000)
        row = self.run_one(
            "think", {"name": "thinker", "provider": "openai", "model": "thinker", **LONG_CONTEXT}
        )
        # 8 reasoning words + 5 answer words, reported by completion_tokens_details.
        assert (row.output_tokens, row.reasoning_tokens) == (13, 8)
        assert row.reasoning == "First I add, then I check the sum."
        # 1000 x 2 + 5 x 8 + 8 x 10 (reasoning rate), per million.
        assert row.cost == Decimal("0.00212000")
        assert row.reasoning_cost == Decimal("0.00008000")

    def test_anthropic_prices_come_from_the_price_data_with_cache_reads_and_writes(self):
        # The price data's Claude Sonnet 4.5 bills a prompt above 200k tokens at 6 / 22.5 per
        # million (cache reads 0.6, writes 7.5), Anthropic's published long-context rates.
        self.fake.usage_parts(
            "claude-sonnet-4-5", prompt_tokens=250_000, cached=50_000, cache_write=10_000
        )
        row = self.run_one(
            "data",
            {
                "name": "contender-s",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "prices": {"provider": "anthropic"},
            },
        )
        pricing = row.contender.pricing
        assert pricing["source"].startswith("genai-prices ")
        assert (pricing["provider"], pricing["model"]) == ("anthropic", "claude-sonnet-4-5")
        # Anthropic's input_tokens leaves the cache out; evalsite stores the whole prompt.
        assert (row.input_tokens, row.cache_read_tokens, row.cache_write_tokens) == (
            250_000,
            50_000,
            10_000,
        )
        # 190k uncached x 6 + 50k x 0.6 + 10k x 7.5 + 5 output x 22.5, per million.
        assert row.output_tokens == 5
        assert row.cost == Decimal("1.24511250")

    def test_an_explicit_price_overrides_the_price_data(self):
        self.fake.usage_parts("claude-sonnet-4-5", prompt_tokens=1000)
        row = self.run_one(
            "own",
            {
                "name": "contender-o",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "price_in_per_mtok": 1,
                "price_out_per_mtok": 1,
            },
        )
        assert row.contender.pricing["source"] == "definition"
        assert row.cost == Decimal("0.00100500")


@pytest.mark.django_db
def test_an_overlapping_tier_is_refused_with_its_field_and_nothing_is_made():
    from tests.factories import TestSetFactory

    ts = TestSetFactory(name="ts-overlap")
    tier = {"above_input_tokens": 200_000, "price_in_per_mtok": 4}
    definition = {
        "slug": "overlap",
        "testset": ts.name,
        "contenders": [
            {
                "name": "a",
                "provider": "openai",
                "model": "a",
                "base_url": "http://127.0.0.1:9/v1",
                "prices": {"tiers": [tier, {**tier, "price_in_per_mtok": 5}]},
            },
            {"name": "b", "provider": "openai", "model": "b", "base_url": "http://127.0.0.1:9/v1"},
        ],
        "rubric": [{"key": "accuracy"}],
    }
    with pytest.raises(DefinitionError) as raised:
        campaign_create(definition=definition)
    assert (
        "contenders[0].prices.tiers[1].above_input_tokens: overlaps tiers[0] (both apply above "
        "200000 prompt tokens)" in raised.value.errors
    )
    from tasks.models import Campaign, Contender

    assert not Campaign.objects.exists() and not Contender.objects.exists()


@pytest.mark.django_db
def test_naming_price_data_that_does_not_exist_is_refused():
    from tests.factories import TestSetFactory

    ts = TestSetFactory(name="ts-nodata")
    definition = {
        "slug": "nodata",
        "testset": ts.name,
        "contenders": [
            {
                "name": "a",
                "provider": "openai",
                "model": "no-such-model-xyz",
                "prices": {"provider": "openai"},
            },
            {"name": "b", "provider": "openai", "model": "b"},
        ],
        "rubric": [{"key": "accuracy"}],
    }
    with pytest.raises(DefinitionError) as raised:
        campaign_create(definition=definition)
    assert any(
        e.startswith("contenders[0].prices.provider: the price data") for e in raised.value.errors
    )


@pytest.mark.django_db
def test_editing_a_contender_in_the_form_keeps_its_price_table_unless_its_prices_change(client):
    from tasks.models import Contender
    from tests.factories import personas

    users = personas()
    table = {
        "source": "definition",
        "input": "2",
        "output": "8",
        "cache_read": "0.5",
        "tiers": [{"above_input_tokens": 200000, "input": "4"}],
    }
    contender = Contender.objects.create(
        name="tiered",
        provider="openai",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        price_in_per_mtok=2,
        price_out_per_mtok=8,
        pricing=table,
    )
    client.force_login(users["admin"])
    form = {
        "name": "tiered",
        "provider": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "",
        "params": "",
        "system_prompt": "",
        "price_in_per_mtok": "2",
        "price_out_per_mtok": "8",
        "version_label": "v2",
        "max_concurrency": "4",
    }
    response = client.post(f"/contenders/{contender.pk}/edit/", form)
    assert response.status_code in (200, 302), response.content[:500]
    contender.refresh_from_db()
    assert contender.version_label == "v2" and contender.pricing == table
    client.post(f"/contenders/{contender.pk}/edit/", {**form, "price_in_per_mtok": "3"})
    contender.refresh_from_db()
    assert contender.pricing == {"source": "definition", "input": "3", "output": "8", "tiers": []}
