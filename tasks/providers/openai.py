"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp server, OpenRouter).

Always streams, so the time to the first content token is measured; asks for the usage chunk
(`stream_options.include_usage`) so tokens and cost are recorded.
"""

from __future__ import annotations

import httpx

from .base import (
    MAX_BODY_BYTES,
    MAX_OUTPUT_CHARS,
    OutputText,
    ProviderResult,
    RetryableError,
    StreamingCall,
    api_key_for,
    iter_sse,
    load_json,
    post_stream,
    read_body,
    too_long,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def build_payload(contender, messages: list[dict]) -> dict:
    conversation = list(messages)
    if contender.system_prompt:
        conversation = [{"role": "system", "content": contender.system_prompt}, *conversation]
    payload = {"model": contender.model, "messages": conversation}
    # Every param goes through as given (temperature, top_p, max_tokens, seed, stop, ...) so a
    # run is reproducible wherever the endpoint honours a seed.
    payload.update(contender.params or {})
    payload["stream"] = True
    payload["stream_options"] = {"include_usage": True}
    return payload


def _parse_full(data: dict, call: StreamingCall) -> ProviderResult:
    """A server that ignored `stream: true` and answered with one JSON body."""
    try:
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise RetryableError(
            "malformed completion from the provider: no choices[0].message"
        ) from None
    if len(text) > MAX_OUTPUT_CHARS:
        raise RetryableError(too_long())
    call.token()
    usage = data.get("usage") or {}
    return ProviderResult(
        text=text,
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
        latency_ms=call.latency_ms(),
        ttft_ms=None,
        finish_reason=choice.get("finish_reason") or "",
        served_model=_text(data.get("model")),
        fingerprint=_text(data.get("system_fingerprint")),
    )


def _text(value) -> str:
    return value[:200] if isinstance(value, str) else ""


def _parse(response: httpx.Response, call: StreamingCall) -> ProviderResult:
    if response.headers.get("content-type", "").startswith("application/json"):
        body = read_body(response)
        if len(body) >= MAX_BODY_BYTES:
            raise RetryableError(f"the answer is larger than {MAX_BODY_BYTES:,} bytes: not stored")
        return _parse_full(load_json(body.decode("utf-8", "replace"), "completion"), call)
    text = OutputText()
    finish_reason, usage, done = "", {}, False
    served_model = fingerprint = ""
    for _event, raw in iter_sse(response):
        if raw.strip() == "[DONE]":
            done = True
            break
        chunk = load_json(raw, "stream chunk")
        if "error" in chunk:
            raise RetryableError(f"error in stream: {chunk['error']}")
        if chunk.get("usage"):
            usage = chunk["usage"]
        # Every chunk names the model; the first that does is kept (some servers leave the
        # usage chunk's empty).
        served_model = served_model or _text(chunk.get("model"))
        fingerprint = fingerprint or _text(chunk.get("system_fingerprint"))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                call.token()
                text.add(content)
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    if not done and not finish_reason:
        raise RetryableError("the stream ended before the completion finished")
    return ProviderResult(
        text=text.text(),
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
        latency_ms=call.latency_ms(),
        ttft_ms=call.ttft_ms(),
        finish_reason=finish_reason,
        served_model=served_model,
        fingerprint=fingerprint,
    )


def generate(contender, messages: list[dict]) -> ProviderResult:
    base = (contender.base_url or DEFAULT_BASE_URL).rstrip("/")
    headers = {"Accept": "text/event-stream"}
    key = api_key_for(contender)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return post_stream(
        f"{base}/chat/completions",
        headers=headers,
        payload=build_payload(contender, messages),
        parse=_parse,
    )
