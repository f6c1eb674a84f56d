"""Anthropic messages API, streamed (message_start / content_block_delta / message_delta).

Tools go out as `tools: [{"name", "description", "input_schema"}]`; a tool call comes back as
a `tool_use` content block whose arguments stream as `input_json_delta` fragments. Histories
are kept in the OpenAI shape (test sets, the conversation runner) and translated here: an
assistant message's `tool_calls` become `tool_use` blocks, `tool` messages become
`tool_result` blocks of one user message (`is_error` for an error result), and consecutive
messages of one role are merged, as the API wants the roles to alternate.
"""

from __future__ import annotations

import json

import httpx

from tasks.generation.providers.base import (
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
    tokens,
    tool_result_text,
)

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
API_VERSION = "2023-06-01"
# The messages API has no seed; these are the params it accepts.
PASSED_PARAMS = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "stop_sequences",
    "metadata",
    "tool_choice",
)


def build_payload(contender, messages: list[dict], tools: list[dict] | None = None) -> dict:
    system = [contender.system_prompt] if contender.system_prompt else []
    conversation: list[dict] = []
    for message in messages:
        if message.get("role") == "system":
            system.append(message.get("content", ""))
            continue
        role, content = _translate(message)
        if conversation and conversation[-1]["role"] == role:
            previous = conversation[-1]
            previous["content"] = _blocks(previous["content"]) + _blocks(content)
        else:
            conversation.append({"role": role, "content": content})
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
    declared = [_tool(t) for t in tools or []]
    # The API refuses tool_use blocks naming a tool the request does not declare: a history
    # logged with calls to tools the task does not offer declares them by name.
    names = {t["name"] for t in declared}
    for message in messages:
        for call in history_tool_calls(message) if message.get("role") == "assistant" else []:
            if call.name not in names:
                names.add(call.name)
                declared.append({"name": call.name, "input_schema": {"type": "object"}})
    if declared:
        payload["tools"] = declared
    return payload


def _tool(tool: dict) -> dict:
    translated = {"name": tool["name"]}
    if tool.get("description"):
        translated["description"] = tool["description"]
    translated["input_schema"] = tool.get("parameters") or {"type": "object", "properties": {}}
    return translated


def _translate(message: dict) -> tuple[str, str | list]:
    """(role, content) of one OpenAI-shaped history message in this API's terms."""
    role, content = message["role"], message.get("content", "")
    if role == "tool":
        block = {
            "type": "tool_result",
            "tool_use_id": str(message.get("tool_call_id") or ""),
            "content": tool_result_text(content),
        }
        if message.get("is_error"):
            block["is_error"] = True
        return "user", [block]
    if isinstance(content, list):  # text and image parts
        return role, [_part(p) for p in content]
    if role == "assistant" and message.get("tool_calls"):
        blocks = [{"type": "text", "text": content}] if content else []
        for call in history_tool_calls(message):
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.raw)}
            )
        return "assistant", blocks
    return role, content


def _part(part: dict) -> dict:
    """A stored content part in this API's terms: an image as a base64 image block."""
    if part.get("type") == "image":
        media_type, data = image_data(part)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "text", "text": part.get("text", "")}


def _input(raw: str) -> dict:
    """A call's arguments as the object `tool_use` needs: arguments that were not a JSON object
    (answered with an error result) go back as an empty one."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _blocks(content) -> list:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []


def _parse(response: httpx.Response, call: StreamingCall) -> ProviderResult:
    answer, thinking = OutputText(), OutputText()
    tools: dict[int, dict] = {}  # content block index -> the tool_use being streamed
    usage: dict = {}
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
            _usage_add(usage, (data.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            _block_start(data, tools, call)
        elif kind == "content_block_delta":
            _block_delta(data, tools, (answer, thinking), call)
        elif kind == "message_delta":
            finish_reason = (data.get("delta") or {}).get("stop_reason") or finish_reason
            # Its counts are cumulative: they replace message_start's.
            _usage_add(usage, data.get("usage"))
        elif kind == "message_stop":
            stopped = True
            break
    if not stopped:
        raise RetryableError("the stream ended before message_stop")
    return ProviderResult(
        text=answer.text(),
        latency_ms=call.latency_ms(),
        ttft_ms=call.ttft_ms(),
        finish_reason=finish_reason,
        served_model=served_model,
        tool_calls=[_tool_call(i, tools[key]) for i, key in enumerate(sorted(tools))],
        reasoning=thinking.text(),
        stream_ms=call.stream_ms(),
        **usage_fields(usage),
    )


USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _usage_add(usage: dict, block) -> None:
    """Keep a usage block's counts (a later event's replace an earlier one's)."""
    if isinstance(block, dict):
        usage.update({k: block[k] for k in USAGE_KEYS if tokens(block.get(k)) is not None})


def usage_fields(usage: dict) -> dict:
    """Anthropic's counts in evalsite's terms: its `input_tokens` leaves out the prompt tokens
    read from or written to the cache, so every prompt token is their sum. Thinking tokens are
    billed inside `output_tokens` and not reported apart: reasoning_tokens stays unknown."""
    uncached = usage.get("input_tokens")
    read = usage.get("cache_read_input_tokens")
    write = usage.get("cache_creation_input_tokens")
    parts = [v for v in (uncached, read, write) if v is not None]
    return {
        "input_tokens": sum(parts) if parts else None,
        "output_tokens": usage.get("output_tokens"),
        "cache_read_tokens": read,
        "cache_write_tokens": write,
        "reasoning_tokens": None,
    }


def _block_start(data: dict, tools: dict[int, dict], call: StreamingCall) -> None:
    """A content block begins: a tool_use one is streamed into `tools` by its index."""
    block = data.get("content_block") or {}
    if block.get("type") == "tool_use":
        call.token()
        tools[data.get("index", len(tools))] = {
            "id": str(block.get("id") or ""),
            "name": str(block.get("name") or ""),
            "start": block.get("input"),
            "raw": [],
        }


def _block_delta(
    data: dict,
    tools: dict[int, dict],
    texts: tuple[OutputText, OutputText],
    call: StreamingCall,
) -> None:
    """A piece of a content block: a tool_use's input JSON, thinking, or answer text."""
    answer, thinking = texts
    delta = data.get("delta") or {}
    thought = delta.get("thinking") if delta.get("type") == "thinking_delta" else None
    if isinstance(thought, str) and thought:
        call.any_token()
        thinking.add(thought)
        answer.count(len(thought))
        return
    partial = delta.get("partial_json")
    tool = tools.get(data.get("index"))
    if tool is not None and isinstance(partial, str):
        answer.count(len(partial))
        tool["raw"].append(partial)
    text = delta.get("text")
    if text:
        call.token()
        answer.add(text)


def _tool_call(position: int, tool: dict) -> ToolCall:
    raw = "".join(tool["raw"])
    if not raw and tool["start"]:  # no deltas: the arguments came whole with the block
        raw = json.dumps(tool["start"], ensure_ascii=False)
    return ToolCall(id=tool["id"] or f"toolu_{position + 1}", name=tool["name"], raw=raw or "{}")


def generate(
    contender, messages: list[dict], tools: list[dict] | None = None, *, extra: dict | None = None
) -> ProviderResult:
    """One streamed call. `extra`: payload keys set last (a judge's structured output:
    tasks/generation/providers/structured.py)."""
    base = (contender.base_url or DEFAULT_BASE_URL).rstrip("/")
    headers = {"anthropic-version": API_VERSION, "Accept": "text/event-stream"}
    key = api_key_for(contender)
    if key:
        headers["x-api-key"] = key
    return post_stream(
        f"{base}/messages",
        headers=headers,
        payload={**build_payload(contender, messages, tools), **(extra or {})},
        parse=_parse,
    )
