"""The only code that talks to an LLM endpoint. `generate(contender, messages)` dispatches."""

from . import anthropic, imported, openai
from .base import PermanentError, ProviderError, ProviderResult, RetryableError, cost_of

MODULES = {"openai": openai, "anthropic": anthropic, "imported": imported}


def generate(contender, messages: list[dict]) -> ProviderResult:
    module = MODULES.get(contender.provider)
    if module is None:
        raise PermanentError(f"unknown provider {contender.provider!r}")
    return module.generate(contender, messages)


__all__ = [
    "PermanentError",
    "ProviderError",
    "ProviderResult",
    "RetryableError",
    "cost_of",
    "generate",
]
