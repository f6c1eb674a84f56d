"""Anthropic messages API, streamed (message_start / content_block_delta / message_delta)."""

from __future__ import annotations

import httpx

from .base import (
    OutputText,
    ProviderResult,
    RetryableError,
    StreamingCall,
    api_key_for,
    iter_sse,
    load_json,
    post_stream,
)

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
API_VERSION = "2023-06-01"
# The messages API has no seed; these are the params it accepts.
PASSED_PARAMS = ("temperature", "top_p", "top_k", "max_tokens", "stop_sequences", "metadata")


def build_payload(contender, messages: list[dict]) -> dict:
    system = [contender.system_prompt] if contender.system_prompt else []
    conversation = []
    for message in messages:
        if message.get("role") == "system":
            system.append(message.get("content", ""))
        else:
            conversation.append({"role": message["role"], "content": message.get("content", "")})
    params = contender.params or {}
    payload = {
        "model": contender.model,
        "messages": conversation,
        "stream": True,
        "max_tokens": params.get("max_tokens", 1024),
    }
    payload.update({k: params[k] for k in PASSED_PARAMS if k in params})
    if system:
        payload["system"] = "\n\n".join(system)
    return payload


def _parse(response: httpx.Response, call: StreamingCall) -> ProviderResult:
    answer = OutputText()
    input_tokens = output_tokens = None
    finish_reason, stopped = "", False
    served_model = ""
    for event, raw in iter_sse(response):
        data = load_json(raw, "stream event")
        kind = data.get("type", event)
        if kind == "error":
            # Mid-stream errors (e.g. overloaded_error) arrive as an event after the 200.
            err = data.get("error") or {}
            raise RetryableError(
                f"error in stream: {err.get('type', '')}: {err.get('message', '')}"
            )
        if kind == "message_start":
            model = (data.get("message") or {}).get("model")
            served_model = model[:200] if isinstance(model, str) else served_model
            usage = (data.get("message") or {}).get("usage") or {}
            input_tokens = usage.get("input_tokens", input_tokens)
            output_tokens = usage.get("output_tokens", output_tokens)
        elif kind == "content_block_delta":
            text = (data.get("delta") or {}).get("text")
            if text:
                call.token()
                answer.add(text)
        elif kind == "message_delta":
            finish_reason = (data.get("delta") or {}).get("stop_reason") or finish_reason
            usage = data.get("usage") or {}
            output_tokens = usage.get("output_tokens", output_tokens)
        elif kind == "message_stop":
            stopped = True
            break
    if not stopped:
        raise RetryableError("the stream ended before message_stop")
    return ProviderResult(
        text=answer.text(),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        latency_ms=call.latency_ms(),
        ttft_ms=call.ttft_ms(),
        finish_reason=finish_reason,
        served_model=served_model,
    )


def generate(contender, messages: list[dict]) -> ProviderResult:
    base = (contender.base_url or DEFAULT_BASE_URL).rstrip("/")
    headers = {"anthropic-version": API_VERSION, "Accept": "text/event-stream"}
    key = api_key_for(contender)
    if key:
        headers["x-api-key"] = key
    return post_stream(
        f"{base}/messages",
        headers=headers,
        payload=build_payload(contender, messages),
        parse=_parse,
    )
