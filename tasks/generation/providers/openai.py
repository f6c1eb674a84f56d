"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp server, OpenRouter).

Always streams, so the time to the first content token is measured; asks for the usage chunk
(`stream_options.include_usage`) so tokens and cost are recorded. Tools go out as
`tools: [{"type": "function", "function": {...}}]`; streamed `tool_calls` deltas are put back
together by their `index` (the id and name come in the first fragment, the arguments in
pieces). Histories are already in this API's shape (assistant `tool_calls`, `tool` messages).
"""

from __future__ import annotations

import json

import httpx

from tasks.generation.providers.base import (
    MAX_BODY_BYTES,
    MAX_OUTPUT_CHARS,
    OutputText,
    ProviderResult,
    RetryableError,
    StreamingCall,
    ToolCall,
    api_key_for,
    history_tool_calls,
    image_data,
    iter_sse,
    load_json,
    post_stream,
    read_body,
    tokens,
    too_long,
    tool_result_text,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def build_payload(contender, messages: list[dict], tools: list[dict] | None = None) -> dict:
    conversation = [_message(m) for m in messages]
    if contender.system_prompt:
        conversation = [{"role": "system", "content": contender.system_prompt}, *conversation]
    payload = {"model": contender.model, "messages": conversation}
    if tools:
        payload["tools"] = [{"type": "function", "function": _function(t)} for t in tools]
    # Every param goes through as given (temperature, top_p, max_tokens, seed, stop, ...) so a
    # run is reproducible wherever the endpoint honours a seed. The seed is already this
    # sample's own (the contender's seed + the sample index: tasks/generation/sample_seed.py).
    payload.update(contender.params or {})
    payload["stream"] = True
    payload["stream_options"] = {"include_usage": True}
    return payload


def _function(tool: dict) -> dict:
    function = {"name": tool["name"]}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = tool.get("parameters") or {"type": "object", "properties": {}}
    return function


def _message(message: dict) -> dict:
    """A history message with only what the API accepts (a plain message goes as it is)."""
    role = message.get("role")
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": str(message.get("tool_call_id") or ""),
            "content": tool_result_text(message.get("content", "")),
        }
    if isinstance(message.get("content"), list):  # text and image parts
        return {"role": role, "content": [_part(p) for p in message["content"]]}
    if role == "assistant" and message.get("tool_calls"):
        return {
            "role": "assistant",
            "content": message.get("content") or "",
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.raw},
                }
                for call in history_tool_calls(message)
            ],
        }
    return message


def _part(part: dict) -> dict:
    """A stored content part in this API's terms: an image as an image_url with a data URL
    (every OpenAI-compatible server that takes images takes those; no address to fetch)."""
    if part.get("type") == "image":
        media_type, data = image_data(part)
        return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}}
    return {"type": "text", "text": part.get("text", "")}


class _ToolCalls:
    """Streamed tool-call fragments, assembled by index."""

    def __init__(self, text: OutputText) -> None:
        self.text = text
        self.calls: dict[int, dict] = {}

    def add(self, position: int, delta: dict) -> None:
        index = delta.get("index", position)
        call = self.calls.setdefault(index, {"id": "", "name": "", "raw": []})
        call["id"] = call["id"] or str(delta.get("id") or "")
        function = delta.get("function") or {}
        call["name"] = call["name"] or str(function.get("name") or "")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a server that sends the whole object at once
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str) and arguments:
            self.text.count(len(arguments))
            call["raw"].append(arguments)

    def result(self) -> list[ToolCall]:
        return [
            ToolCall(id=c["id"] or f"call_{i + 1}", name=c["name"], raw="".join(c["raw"]))
            for i, (_, c) in enumerate(sorted(self.calls.items()))
        ]


def _parse_full(data: dict, call: StreamingCall) -> ProviderResult:
    """A server that ignored `stream: true` and answered with one JSON body."""
    try:
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        tool_calls = history_tool_calls(choice["message"])
    except (KeyError, IndexError, TypeError, AttributeError):
        raise RetryableError(
            "malformed completion from the provider: no choices[0].message"
        ) from None
    if len(text) + sum(len(c.raw) for c in tool_calls) > MAX_OUTPUT_CHARS:
        raise RetryableError(too_long())
    reasoning = _reasoning_of(choice["message"])
    if len(text) + len(reasoning) > MAX_OUTPUT_CHARS:
        raise RetryableError(too_long())
    call.token()
    return ProviderResult(
        text=text,
        latency_ms=call.latency_ms(),
        ttft_ms=None,
        finish_reason=choice.get("finish_reason") or "",
        served_model=_text(data.get("model")),
        fingerprint=_text(data.get("system_fingerprint")),
        tool_calls=tool_calls,
        reasoning=reasoning,
        **usage_fields(data.get("usage")),
    )


def _reasoning_of(part: dict) -> str:
    """The reasoning in a message or a delta: `reasoning_content` (DeepSeek, vLLM) or
    `reasoning` (OpenRouter, Ollama, LM Studio), whichever the server sends."""
    for key in ("reasoning_content", "reasoning"):
        value = part.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def usage_fields(usage) -> dict:
    """A usage block's counts, cached and reasoning tokens apart (prompt_tokens_details
    .cached_tokens, completion_tokens_details.reasoning_tokens; OpenRouter and some others
    add prompt_tokens_details.cache_write_tokens)."""
    usage = usage if isinstance(usage, dict) else {}
    prompt = usage.get("prompt_tokens_details")
    prompt = prompt if isinstance(prompt, dict) else {}
    completion = usage.get("completion_tokens_details")
    completion = completion if isinstance(completion, dict) else {}
    return {
        "input_tokens": tokens(usage.get("prompt_tokens")),
        "output_tokens": tokens(usage.get("completion_tokens")),
        "cache_read_tokens": tokens(prompt.get("cached_tokens")),
        "cache_write_tokens": tokens(prompt.get("cache_write_tokens")),
        "reasoning_tokens": tokens(completion.get("reasoning_tokens")),
    }


def _text(value) -> str:
    return value[:200] if isinstance(value, str) else ""


def _parse(response: httpx.Response, call: StreamingCall) -> ProviderResult:
    if response.headers.get("content-type", "").startswith("application/json"):
        body = read_body(response)
        if len(body) >= MAX_BODY_BYTES:
            raise RetryableError(f"the answer is larger than {MAX_BODY_BYTES:,} bytes: not stored")
        return _parse_full(load_json(body.decode("utf-8", "replace"), "completion"), call)
    text = OutputText()
    reasoning = OutputText()
    tool_calls = _ToolCalls(text)
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
            thought = _reasoning_of(delta)
            if thought:
                call.any_token()
                reasoning.add(thought)
                text.count(len(thought))
            content = delta.get("content")
            if content:
                call.token()
                text.add(content)
            for position, fragment in enumerate(delta.get("tool_calls") or []):
                if isinstance(fragment, dict):
                    call.token()
                    tool_calls.add(position, fragment)
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    if not done and not finish_reason:
        raise RetryableError("the stream ended before the completion finished")
    return ProviderResult(
        text=text.text(),
        latency_ms=call.latency_ms(),
        ttft_ms=call.ttft_ms(),
        finish_reason=finish_reason,
        served_model=served_model,
        fingerprint=fingerprint,
        tool_calls=tool_calls.result(),
        reasoning=reasoning.text(),
        stream_ms=call.stream_ms(),
        **usage_fields(usage),
    )


def generate(
    contender, messages: list[dict], tools: list[dict] | None = None, *, extra: dict | None = None
) -> ProviderResult:
    """One streamed call. `extra`: payload keys set last (a judge's structured output:
    tasks/generation/providers/structured.py)."""
    base = (contender.base_url or DEFAULT_BASE_URL).rstrip("/")
    headers = {"Accept": "text/event-stream"}
    key = api_key_for(contender)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return post_stream(
        f"{base}/chat/completions",
        headers=headers,
        payload={**build_payload(contender, messages, tools), **(extra or {})},
        parse=_parse,
    )
