"""Structured output: one call whose answer must be a JSON object of a given schema.

What a judge needs (tasks/judges/). OpenAI-compatible endpoints get `response_format:
{"type": "json_schema", "json_schema": {"strict": true, ...}}` and answer in the text;
Anthropic gets the schema as the input schema of one tool, `tool_choice` forces the call, and
the call's arguments are the answer. Either way the caller gets the answer's raw JSON text
and checks it itself: an endpoint that ignores the schema is not trusted. An endpoint that
refuses the request (no structured output support answers 400 or 422) raises
PermanentError, as any request that will not change.
"""

from __future__ import annotations

from tasks.generation.providers import anthropic, openai
from tasks.generation.providers.base import PermanentError, ProviderResult

TOOL_NAME = "record_judgement"


def structured_call(config, messages: list[dict], schema: dict) -> tuple[str, ProviderResult]:
    """(the answer's JSON text, the call's result with its tokens and latency)."""
    if config.provider == "openai":
        result = openai.generate(
            config,
            messages,
            extra={
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "judgement", "strict": True, "schema": schema},
                }
            },
        )
        return result.text, result
    if config.provider == "anthropic":
        tool = {
            "name": TOOL_NAME,
            "description": "Record your judgement of the answers.",
            "parameters": schema,
        }
        result = anthropic.generate(
            config, messages, [tool], extra={"tool_choice": {"type": "tool", "name": TOOL_NAME}}
        )
        calls = [c for c in result.tool_calls if c.name == TOOL_NAME]
        # No call of the tool: the text stands as the answer, and fails the check as not JSON.
        return (calls[0].raw if calls else result.text), result
    raise PermanentError(f"provider {config.provider!r} has no structured output")
