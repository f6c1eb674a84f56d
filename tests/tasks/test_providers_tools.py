"""Tools through each provider, against the local endpoint speaking both protocols: what goes
out (tools and histories in each API's shape), and the tool calls that come back, streamed in
pieces or whole."""

import json

from django.test import SimpleTestCase, override_settings

from tasks.generation import providers
from tasks.generation.providers.base import ToolCall
from tasks.models import Contender
from tests.fake_llm import FakeLLM
from tests.tasks.test_providers import contender

TOOLS = [
    {
        "name": "get_order",
        "description": "Look an order up by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
    {"name": "list_orders", "parameters": {"type": "object", "properties": {}}},
]
ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where is A-17?"}]
# A history logged in the OpenAI shape: two calls in one assistant message, their results
# (one an error, marked for the Anthropic translation), then the user again.
HISTORY = [
    *ASK,
    {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_order", "arguments": '{"order_id": "A-17"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "list_orders", "arguments": "{}"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": '{"error": "timeout"}', "is_error": True},
    {
        "role": "tool",
        "tool_call_id": "call_b",
        "content": '{"orders": ["A-17"]}',
        "name": "list_orders",
    },
    {"role": "user", "content": "And now?"},
]
TWO_CALLS = {
    "text": "Let me check.",
    "tool_calls": [
        {"name": "get_order", "arguments": {"order_id": "A-17", "detail": "full tracking"}},
        {"name": "list_orders", "arguments": "{not json"},
    ],
}


@override_settings(GENERATION_READ_TIMEOUT=2, GENERATION_CONNECT_TIMEOUT=1)
class ToolProviderTests(SimpleTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM()

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def expected_calls(self, prefix: str) -> list[ToolCall]:
        return [
            ToolCall(
                id=f"{prefix}_1_1_1",
                name="get_order",
                raw='{"order_id": "A-17", "detail": "full tracking"}',
            ),
            ToolCall(id=f"{prefix}_1_1_2", name="list_orders", raw="{not json"),
        ]

    def test_it_sends_openai_tools_and_assembles_streamed_call_pieces_by_index(self):
        self.fake.respond("oa-tools", lambda request: TWO_CALLS)
        result = providers.generate(contender(self.fake, model="oa-tools"), ASK, TOOLS)
        assert result.text == "Let me check." and result.finish_reason == "tool_calls"
        # The two calls' argument pieces came interleaved; each is put back together whole.
        assert result.tool_calls == self.expected_calls("call")
        call = self.fake.calls_for("oa-tools")[-1]
        assert call["usage"] == (result.input_tokens, result.output_tokens)
        assert call["body"]["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "get_order",
                    "description": "Look an order up by its id.",
                    "parameters": TOOLS[0]["parameters"],
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "list_orders",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ]

    def test_it_reads_openai_calls_from_an_answer_that_is_not_streamed(self):
        self.fake.respond("oa-whole", lambda request: TWO_CALLS)
        self.fake.json_only.add("oa-whole")
        result = providers.generate(contender(self.fake, model="oa-whole"), ASK, TOOLS)
        assert result.tool_calls == self.expected_calls("call")
        assert result.finish_reason == "tool_calls" and result.text == "Let me check."

    def test_it_sends_an_openai_history_in_the_apis_own_shape(self):
        providers.generate(contender(self.fake, model="oa-history"), HISTORY, TOOLS)
        sent = self.fake.calls_for("oa-history")[-1]["body"]["messages"]
        assert sent == [
            *HISTORY[:3],
            # what the API does not know (the error mark, a tool name) stays out
            {"role": "tool", "tool_call_id": "call_a", "content": '{"error": "timeout"}'},
            {"role": "tool", "tool_call_id": "call_b", "content": '{"orders": ["A-17"]}'},
            {"role": "user", "content": "And now?"},
        ]

    def test_a_plain_call_sends_no_tools(self):
        providers.generate(contender(self.fake, model="oa-plain"), ASK)
        body = self.fake.calls_for("oa-plain")[-1]["body"]
        assert "tools" not in body and body["messages"] == ASK

    def test_it_sends_anthropic_tools_and_assembles_streamed_tool_use_input(self):
        self.fake.respond("an-tools", lambda request: TWO_CALLS)
        result = providers.generate(
            contender(self.fake, provider="anthropic", model="an-tools"), ASK, TOOLS
        )
        assert result.text == "Let me check." and result.finish_reason == "tool_use"
        assert result.tool_calls == self.expected_calls("toolu")
        body = self.fake.calls_for("an-tools")[-1]["body"]
        assert body["tools"] == [
            {
                "name": "get_order",
                "description": "Look an order up by its id.",
                "input_schema": TOOLS[0]["parameters"],
            },
            {"name": "list_orders", "input_schema": {"type": "object", "properties": {}}},
        ]
        assert self.fake.calls_for("an-tools")[-1]["usage"] == (
            result.input_tokens,
            result.output_tokens,
        )

    def test_it_translates_an_openai_history_into_anthropic_blocks(self):
        providers.generate(
            contender(self.fake, provider="anthropic", model="an-history"), HISTORY, TOOLS
        )
        body = self.fake.calls_for("an-history")[-1]["body"]
        assert body["system"] == "Be brief."
        assert body["messages"] == [
            {"role": "user", "content": "Where is A-17?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {
                        "type": "tool_use",
                        "id": "call_a",
                        "name": "get_order",
                        "input": {"order_id": "A-17"},
                    },
                    {"type": "tool_use", "id": "call_b", "name": "list_orders", "input": {}},
                ],
            },
            # Both results in one user message, the error marked, and the next user message
            # merged into it: the API wants the roles to alternate.
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_a",
                        "content": '{"error": "timeout"}',
                        "is_error": True,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_b",
                        "content": '{"orders": ["A-17"]}',
                    },
                    {"type": "text", "text": "And now?"},
                ],
            },
        ]

    def test_an_anthropic_call_with_arguments_that_are_not_json_goes_back_as_an_empty_input(self):
        history = [
            {"role": "user", "content": "Go."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "get_order", "arguments": "{oops"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": json.dumps({"error": "bad"})},
        ]
        providers.generate(
            contender(self.fake, provider="anthropic", model="an-bad"), history, TOOLS
        )
        sent = self.fake.calls_for("an-bad")[-1]["body"]["messages"]
        assert sent[1] == {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "get_order", "input": {}}],
        }


class HistoryToolsTests(SimpleTestCase):
    def test_anthropic_declares_the_tools_a_history_calls_when_the_task_offers_none(self):
        from tasks.generation.providers import anthropic

        c = Contender(name="c", provider="anthropic", model="m", params={})
        payload = anthropic.build_payload(c, HISTORY, None)
        assert payload["tools"] == [
            {"name": "get_order", "input_schema": {"type": "object"}},
            {"name": "list_orders", "input_schema": {"type": "object"}},
        ]
        with_one = anthropic.build_payload(c, HISTORY, TOOLS[:1])
        assert [t["name"] for t in with_one["tools"]] == ["get_order", "list_orders"]
        assert with_one["tools"][0]["input_schema"] == TOOLS[0]["parameters"]
        assert "tools" not in anthropic.build_payload(c, ASK, None)
