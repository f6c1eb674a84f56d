"""Reasoning kept: read from both providers' formats (streamed and whole), stored with its
tokens, masked like an answer and shown to reviewers and arbiters only where the campaign asks."""

from __future__ import annotations

import json

from django.test import SimpleTestCase, TestCase, override_settings

from evalsite.models import ApiToken
from tasks.campaigns.definition import campaign_create
from tasks.generation import providers
from tasks.generation.run import generation_run
from tasks.models import Generation
from tests.factories import TaskFactory, TestSetFactory, personas
from tests.fake_llm import FakeLLM
from tests.tasks.test_providers import MESSAGES, contender

THOUGHT = "I am thinker-9, so first I check the account settings page."


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_CONNECT_TIMEOUT=1)
class ProviderReasoningTests(SimpleTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_openai_compatible_reasoning_is_read_in_both_field_names_streamed_and_whole(self):
        for style in ("reasoning_content", "reasoning"):
            for whole in (False, True):
                model = f"r-{style}-{whole}"
                self.fake.think(model, THOUGHT, style=style)
                if whole:
                    self.fake.json_only.add(model)
                result = providers.generate(contender(self.fake, model=model), MESSAGES)
                assert result.reasoning == THOUGHT, (style, whole)
                assert result.text == f"{model} answers: How do I reset my password?"
                # 11 reasoning words + 8 answer words, reasoning reported apart.
                assert (result.output_tokens, result.reasoning_tokens) == (19, 11)

    def test_anthropic_thinking_blocks_are_read_streamed_and_the_cache_counts_apart(self):
        self.fake.think("an-think", THOUGHT)
        self.fake.usage_parts("an-think", prompt_tokens=5000, cached=3000, cache_write=1000)
        result = providers.generate(
            contender(self.fake, provider="anthropic", model="an-think"), MESSAGES
        )
        assert result.reasoning == THOUGHT
        assert result.text == "an-think answers: How do I reset my password?"
        assert (result.input_tokens, result.cache_read_tokens, result.cache_write_tokens) == (
            5000,
            3000,
            1000,
        )
        # Thinking is billed inside output_tokens; Anthropic does not count it apart.
        assert result.output_tokens == 19 and result.reasoning_tokens is None
        assert result.stream_ms is not None and result.stream_ms <= result.latency_ms


def reasoning_campaign(fake: FakeLLM, slug: str, *, show: bool):
    ts = TestSetFactory(name=f"ts-{slug}", frozen=False, task_count=2)
    for i in range(2):  # one item for the page, one for the API
        TaskFactory(testset=ts, position=i, external_id=f"T-{i}", prompt="Where do I reset it?")
    contenders = [
        {"name": "thinker-9", "provider": "openai", "model": "thinker-9"},
        {"name": "an-think", "provider": "anthropic", "model": "an-think"},
    ]
    campaign, _ = campaign_create(
        definition={
            "slug": slug,
            "testset": ts.name,
            "contenders": [{**c, "base_url": fake.base_url} for c in contenders],
            "rubric": [{"key": "accuracy"}],
            "overlap": 1,
            "show_reasoning": show,
            "hold_identity_leaks": False,
        }
    )
    for row in Generation.objects.filter(campaign=campaign):
        assert generation_run(generation_id=row.pk).action == "done"
    return campaign


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_MAX_ATTEMPTS=2)
class ReasoningShownTests(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()
        cls.fake.think("thinker-9", THOUGHT, style="reasoning")
        cls.fake.think("an-think", "Claude here: the an-think way is the settings page.")

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def setUp(self):
        self.users = personas()

    def test_reasoning_is_stored_and_shown_masked_under_the_answer_when_asked(self):
        campaign = reasoning_campaign(self.fake, "shown", show=True)
        rows = {g.contender.name: g for g in Generation.objects.filter(campaign=campaign)}
        assert rows["thinker-9"].reasoning == THOUGHT and rows["thinker-9"].reasoning_tokens == 11
        assert rows["an-think"].reasoning.startswith("Claude here")
        self.client.force_login(self.users["reviewer_a"])
        body = self.client.get(self.client.post("/review/shown/next").url).content.decode()
        for word in ("thinker-9", "an-think", "Claude"):
            assert word not in body, word
        assert body.count('<details class="reasoning"') == 2
        assert "I am [redacted], so first I check the account settings page." in body
        assert "[redacted] here: the [redacted] way is the settings page." in body
        api = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(self.users['reviewer_b'])}"}
        data = json.loads(self.client.post("/api/v1/campaigns/shown/next", **api).content)
        reasonings = sorted(c["reasoning"] for c in data["candidates"])
        assert reasonings == [
            "I am [redacted], so first I check the account settings page.",
            "[redacted] here: the [redacted] way is the settings page.",
        ]

    def test_reasoning_is_never_shown_unless_the_campaign_asks(self):
        campaign = reasoning_campaign(self.fake, "hidden", show=False)
        assert all(g.reasoning for g in Generation.objects.filter(campaign=campaign))
        self.client.force_login(self.users["reviewer_a"])
        body = self.client.get(self.client.post("/review/hidden/next").url).content.decode()
        assert 'class="reasoning"' not in body and "settings page" not in body
        api = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(self.users['reviewer_b'])}"}
        data = json.loads(self.client.post("/api/v1/campaigns/hidden/next", **api).content)
        assert all("reasoning" not in c for c in data["candidates"])
        assert "settings page" not in json.dumps(data)


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_MAX_ATTEMPTS=2)
class StepReasoningTests(TestCase):
    """A tool loop keeps every step's reasoning; reviewers see it, masked, in each step."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()
        cls.fake.think("tool-9", "As tool-9 I should look the order up first.")
        cls.fake.steps(
            "tool-9", {"tool_calls": [{"name": "get_order", "arguments": {"id": "A-1"}}]}
        )
        cls.fake.think("plain-9", "Nothing to look up.")

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def make(self, slug: str, show: bool):
        ts = TestSetFactory(name=f"ts-{slug}", frozen=False, task_count=1)
        TaskFactory(
            testset=ts,
            position=0,
            external_id="T-1",
            prompt="Where is order A-1?",
            tools=[{"name": "get_order", "parameters": {"type": "object"}}],
            tool_mocks=[{"tool": "get_order", "result": {"status": "shipped"}}],
        )
        contenders = [
            {"name": "tool-9", "provider": "openai", "model": "tool-9"},
            {"name": "plain-9", "provider": "anthropic", "model": "plain-9"},
        ]
        campaign, _ = campaign_create(
            definition={
                "slug": slug,
                "testset": ts.name,
                "contenders": [{**c, "base_url": self.fake.base_url} for c in contenders],
                "rubric": [{"key": "accuracy"}],
                "overlap": 1,
                "show_reasoning": show,
                "hold_identity_leaks": False,
            }
        )
        for row in Generation.objects.filter(campaign=campaign):
            assert generation_run(generation_id=row.pk).action == "done"
        return campaign

    def test_each_steps_reasoning_is_stored_and_shown_masked_only_when_asked(self):
        campaign = self.make("steps", show=True)
        row = Generation.objects.get(campaign=campaign, contender__name="tool-9")
        steps = row.transcript[0]["steps"]
        assert [s.get("reasoning") for s in steps] == [
            "As tool-9 I should look the order up first."
        ] * 2
        assert all(s["reasoning_tokens"] == 9 for s in steps)
        assert row.reasoning_tokens == 18
        users = personas()
        self.client.force_login(users["reviewer_a"])
        body = self.client.get(self.client.post("/review/steps/next").url).content.decode()
        assert "Reasoning of step 1" in body and "tool-9" not in body
        assert "As [redacted] I should look the order up first." in body
        hidden = self.make("nosteps", show=False)
        self.client.force_login(users["reviewer_b"])
        body = self.client.get(self.client.post("/review/nosteps/next").url).content.decode()
        assert hidden.pk and "Reasoning of" not in body and "look the order up" not in body
