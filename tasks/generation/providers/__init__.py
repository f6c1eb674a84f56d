"""The only code that talks to an LLM endpoint. `generate(contender, messages, tools)`
dispatches (tools in the OpenAI function format, translated by each provider)."""

from tasks.generation.providers import anthropic, imported, openai
from tasks.generation.providers.base import (
    PermanentError,
    ProviderError,
    ProviderResult,
    RetryableError,
    ToolCall,
    cost_of,
)

MODULES = {"openai": openai, "anthropic": anthropic, "imported": imported}


def generate(contender, messages: list[dict], tools: list[dict] | None = None) -> ProviderResult:
    module = MODULES.get(contender.provider)
    if module is None:
        raise PermanentError(f"unknown provider {contender.provider!r}")
    return module.generate(contender, messages, tools)


__all__ = [
    "PermanentError",
    "ProviderError",
    "ProviderResult",
    "RetryableError",
    "ToolCall",
    "cost_of",
    "generate",
]
