"""A local LLM endpoint for tests and benches: a real HTTP server in a thread on 127.0.0.1.

It speaks OpenAI chat completions (`POST /v1/chat/completions`, JSON or SSE streaming) and the
Anthropic messages API (`POST /v1/messages`, JSON or streaming events), and plays scripted
faults per model name, one per request in arrival order:

    "429"        429 with Retry-After: 1 (rate limited)
    "quota"      429 with code insufficient_quota (permanent)
    "500" "502" "503" "529"   server errors (529 = Anthropic overloaded)
    "slow"       headers and first token, then silence longer than the client's read timeout
    "malformed"  a 200 whose body/stream is not valid JSON
    "400"        invalid request (permanent)
    "hang"       silence for `slow_seconds` before the answer (a call still in flight when a
                 lease lapses or a worker is killed)
    "ok"         a normal answer (also what happens when the script is empty)

Answers are deterministic: "<model> answers: <prompt>", streamed word by word. Streams carry
non-ASCII text unescaped, as vLLM and llama.cpp send it (a raw U+2028 inside a JSON string).

Judges are scripted per model with `judge(model, fn)`: fn gets a `JudgeRequest` (the answers
shown under their labels, the dimensions and preference choices the structured output asks
for) and returns the answer as a dict (sent as the structured answer: the text of an OpenAI
completion, the `record_judgement` tool call of an Anthropic message) or a str sent as it is
(not JSON, say). Models in `no_structured` refuse a request for structured output with a 400,
as endpoints without that support do.

Tool calls and conversations are scripted per model with `respond(model, fn)`: fn gets a
`Request` (which user turn and which model call of that turn it is, the tools offered, the tool
results just sent back) and returns a reply: a text, or {"text": ..., "tool_calls": [{"name",
"arguments": {...} or a raw string, "id"?}]}, or None for the usual answer. `steps(model, ...)`
scripts the calls of every turn by their position. Tool calls stream as the real APIs stream
them: OpenAI `tool_calls` deltas by index (arguments in pieces, two calls' pieces interleaved),
Anthropic `tool_use` blocks with `input_json_delta` pieces. Each call's usage is recorded.

Reasoning models are played with `think(model, text, style)`: the reasoning streams before the
answer as OpenAI-compatible `reasoning_content` or `reasoning` deltas (style), or an Anthropic
`thinking` block (with its signature); its words count as output tokens, reported apart in
OpenAI's `completion_tokens_details.reasoning_tokens`. `usage_parts(model, prompt_tokens=...,
cached=..., cache_write=...)` makes the usage block report a prompt of that size with that
many tokens read from (and written to) the cache: OpenAI `prompt_tokens_details`, Anthropic
`cache_read_input_tokens` / `cache_creation_input_tokens` beside the uncached `input_tokens`.
Image parts (OpenAI `image_url`, Anthropic `image` blocks) are accepted and recorded; the
answer names how many images the last user message carried.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The size of the pieces a tool call's arguments stream in.
ARGUMENT_PIECE = 7


@dataclass
class Request:
    """What a scripted responder sees of one request."""

    provider: str  # "openai" | "anthropic"
    model: str
    messages: list
    turn: int  # 1-based: user messages with text so far
    step: int  # 1-based: the model call within this turn
    tools: list[str] = field(default_factory=list)  # the names of the tools offered
    # What was sent back since the model's last call: [{"id", "content", "is_error"}].
    tool_results: list[dict] = field(default_factory=list)
    last_user: str = ""
    body: dict = field(default_factory=dict)


@dataclass
class JudgeRequest:
    """What a scripted judge sees of one request for a judgement."""

    answers: dict  # label -> the answer's text, in the order shown
    dimensions: list  # the rubric dimensions the schema asks for
    choices: list  # the preference choices ([] when none is asked)
    prompt: str  # the whole user message

    @property
    def labels(self) -> list:
        return list(self.answers)


def judge_request(request: Request) -> JudgeRequest:
    body = request.body
    if "response_format" in body:
        schema = body["response_format"]["json_schema"]["schema"]
    else:
        schema = next(t["input_schema"] for t in body.get("tools") or [])
    props = schema["properties"]
    scores = props.get("scores", {}).get("properties", {})
    dimensions = list(next(iter(scores.values()))["properties"]) if scores else []
    choices = props.get("preference", {}).get("enum", [])
    prompt = request.last_user
    answers = {}
    for block in prompt.split("\n\n# ")[1:]:
        head, _, text = block.partition("\n\n")
        if head.startswith("Answer "):
            answers[head.removeprefix("Answer ").strip()] = text
    return JudgeRequest(answers=answers, dimensions=dimensions, choices=choices, prompt=prompt)


@dataclass
class Reply:
    text: str
    tool_calls: list[tuple[str, str, str]]  # (id, name, raw arguments)


def _user_text(provider: str, message: dict) -> str | None:
    """The text of a user message (None when it only carries tool results)."""
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return " ".join(texts) if texts else None


def request_view(provider: str, body: dict) -> Request:
    messages = body.get("messages") or []
    turn, step, last_user, results = 0, 1, "", []
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = _user_text(provider, message)
            blocks = message.get("content") if isinstance(message.get("content"), list) else []
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(
                        {
                            "id": block.get("tool_use_id"),
                            "content": block.get("content"),
                            "is_error": bool(block.get("is_error")),
                        }
                    )
            if text is not None:
                turn, step, last_user = turn + 1, 1, text
        elif role == "assistant":
            step, results = step + 1, []
        elif role == "tool":
            results.append(
                {
                    "id": message.get("tool_call_id"),
                    "content": message.get("content"),
                    "is_error": False,
                }
            )
    names = [
        (t.get("function") or t).get("name") for t in body.get("tools") or [] if isinstance(t, dict)
    ]
    return Request(
        provider=provider,
        model=body.get("model", ""),
        messages=messages,
        turn=turn,
        step=step,
        tools=names,
        tool_results=results,
        last_user=last_user,
        body=body,
    )


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client closing a kept-alive connection is normal; anything else is printed.
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeLLM:
    def __init__(
        self, *, latency: float = 0.0, slow_seconds: float = 3.0, chunk_delay: float = 0.0
    ):
        self.latency = latency
        self.slow_seconds = slow_seconds
        self.chunk_delay = chunk_delay
        self.lock = threading.Lock()
        self.scripts: dict[str, deque] = defaultdict(deque)
        self.always: dict[str, str] = {}
        self.calls: list[dict] = []
        self.delays: dict[str, float] = {}
        # model asked for -> (model answered with, system_fingerprint): what a test switches
        # to play an endpoint that routes to another model or updates its backend.
        self.served: dict[str, tuple[str, str]] = {}
        # model -> function of the usual answer: what a test switches to make answers change.
        self.rewrites: dict = {}
        # model -> function(Request) -> reply: scripted tool calls and conversations.
        self.responders: dict = {}
        # Models answered with one JSON body even when a stream is asked for (servers that
        # ignore `stream: true`).
        self.json_only: set[str] = set()
        # Models that refuse structured output (response_format / a forced tool call).
        self.no_structured: set[str] = set()
        # model -> (reasoning text, "reasoning_content" | "reasoning"): a reasoning model.
        self.thinking: dict[str, tuple[str, str]] = {}
        # model -> {"prompt_tokens", "cached", "cache_write"}: the usage block's prompt parts.
        self.usage_overrides: dict[str, dict] = {}
        self.active: dict[str, int] = defaultdict(int)
        self.max_active: dict[str, int] = defaultdict(int)
        handler = type("Handler", (_Handler,), {"fake": self})
        self.server = _Server(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.server.request_queue_size = 256
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, model: str, *faults: str) -> None:
        with self.lock:
            self.scripts[model].extend(faults)

    def set_always(self, model: str, fault: str) -> None:
        self.always[model] = fault

    def serve(self, model: str, served: str, fingerprint: str = "") -> None:
        """Answer requests for `model` as `served` (with this system_fingerprint)."""
        self.served[model] = (served, fingerprint)

    def rewrite(self, model: str, change) -> None:
        """Answer requests for `model` with change(usual answer) (None: the usual again)."""
        if change is None:
            self.rewrites.pop(model, None)
        else:
            self.rewrites[model] = change

    def respond(self, model: str, fn) -> None:
        """Answer requests for `model` with fn(Request): a text, {"text", "tool_calls"}, or
        None for the usual answer (fn=None: the usual answers again)."""
        if fn is None:
            self.responders.pop(model, None)
        else:
            self.responders[model] = fn

    def judge(self, model: str, fn) -> None:
        """Answer judgement requests for `model` with fn(JudgeRequest): a dict, sent as the
        structured answer, or a str sent as it is."""

        def responder(request: Request):
            answer = fn(judge_request(request))
            raw = answer if isinstance(answer, str) else json.dumps(answer)
            if request.provider == "anthropic":
                return {"tool_calls": [{"name": "record_judgement", "arguments": raw}]}
            return raw

        self.respond(model, responder)

    def steps(self, model: str, *replies) -> None:
        """Reply to the n-th model call of every turn with replies[n - 1] (past the end: the
        usual answer)."""
        self.respond(model, lambda r: replies[r.step - 1] if r.step <= len(replies) else None)

    def reply_for(self, provider: str, body: dict, usual: str) -> Reply:
        model = body.get("model", "")
        fn = self.responders.get(model)
        view = request_view(provider, body)
        reply = fn(view) if fn else None
        if reply is None:
            return Reply(usual, [])
        if isinstance(reply, str):
            return Reply(reply, [])
        prefix = "toolu" if provider == "anthropic" else "call"
        calls = []
        for i, call in enumerate(reply.get("tool_calls") or []):
            arguments = call.get("arguments", {})
            raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
            calls.append(
                (call.get("id") or f"{prefix}_{view.turn}_{view.step}_{i + 1}", call["name"], raw)
            )
        return Reply(reply.get("text", ""), calls)

    def think(self, model: str, text: str, style: str = "reasoning_content") -> None:
        """Stream `text` as this model's reasoning before its answer (None: no reasoning)."""
        if text is None:
            self.thinking.pop(model, None)
        else:
            self.thinking[model] = (text, style)

    def usage_parts(
        self, model: str, *, prompt_tokens: int, cached: int = 0, cache_write: int = 0
    ) -> None:
        """Report this model's prompts as `prompt_tokens` long, `cached` of them read from the
        cache and `cache_write` written to it."""
        self.usage_overrides[model] = {
            "prompt_tokens": prompt_tokens,
            "cached": cached,
            "cache_write": cache_write,
        }

    def set_delay(self, model: str, seconds: float) -> None:
        """Extra latency before this model's first byte (to catch a worker mid-job)."""
        self.delays[model] = seconds

    def next_fault(self, model: str) -> str:
        with self.lock:
            if model in self.always:
                return self.always[model]
            queue = self.scripts.get(model)
            return queue.popleft() if queue else "ok"

    def calls_for(self, model: str) -> list[dict]:
        with self.lock:
            return [c for c in self.calls if c["model"] == model]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


IMAGE_PARTS = ("image_url", "image")


def answer_for(model: str, messages: list[dict]) -> str:
    last = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    images = 0
    if isinstance(last, list):  # content blocks
        parts = [part for part in last if isinstance(part, dict)]
        images = sum(1 for part in parts if part.get("type") in IMAGE_PARTS)
        last = " ".join(part.get("text", "") for part in parts if part.get("type") == "text")
    seen = f" [{images} image{'s' if images != 1 else ''}]" if images else ""
    return f"{model} answers: {last}{seen}"


def _prompt_words(messages: list[dict]) -> int:
    """The fake's prompt tokens: the words of every message; an image part counts as none."""
    total = 0
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, list) and any(
            isinstance(part, dict) and part.get("type") in IMAGE_PARTS for part in content
        ):
            content = [
                p for p in content if not (isinstance(p, dict) and p.get("type") in IMAGE_PARTS)
            ]
        total += len(str(content).split())
    return total


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLM
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep test output clean
        pass

    # -- plumbing -------------------------------------------------------------------------
    def _release(self) -> None:
        """Stop counting this request as in flight: called before the bytes that let the client
        finish, so a client that immediately sends its next request is never double counted."""
        if not getattr(self, "_released", True):
            self._released = True
            with self.fake.lock:
                self.fake.active[self._model] -= 1

    def _json(self, status: int, body: dict | str, headers: dict | None = None) -> None:
        self._release()
        raw = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, text: str) -> None:
        raw = text.encode()
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()
        if self.fake.chunk_delay:
            time.sleep(self.fake.chunk_delay)

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self._json(
                400, {"error": {"type": "invalid_request_error", "message": "bad JSON"}}
            )
        model = body.get("model", "")
        fault = self.fake.next_fault(model)
        self._entry = {
            "path": self.path,
            "model": model,
            "body": body,
            "fault": fault,
            "headers": dict(self.headers),
            "at": time.time(),
            "usage": None,  # (input tokens, output tokens) of the answer
        }
        with self.fake.lock:
            self.fake.calls.append(self._entry)
        self._model, self._released = model, False
        with self.fake.lock:
            self.fake.active[model] += 1
            self.fake.max_active[model] = max(self.fake.max_active[model], self.fake.active[model])
        try:
            delay = self.fake.latency + self.fake.delays.get(model, 0.0)
            if fault == "hang":
                delay += self.fake.slow_seconds
            if delay:
                time.sleep(delay)
            structured = "response_format" in body or "tool_choice" in body
            if model in self.fake.no_structured and structured:
                return self._json(
                    400,
                    {
                        "error": {
                            "type": "invalid_request_error",
                            "message": "structured output is not supported by this model",
                        }
                    },
                )
            if self.path.endswith("/chat/completions"):
                return self._openai(body, model, fault)
            if self.path.endswith("/messages"):
                return self._anthropic(body, model, fault)
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        finally:
            self._release()

    def _common_fault(self, fault: str, anthropic: bool) -> bool:
        """Answer with a scripted error; True when the request is handled."""
        kind = "error" if anthropic else None
        if fault == "429":
            self._json(
                429,
                {
                    "type": kind,
                    "error": {"type": "rate_limit_error", "message": "Rate limit reached"},
                },
                {"Retry-After": "1"},
            )
        elif fault == "quota":
            self._json(
                429,
                {
                    "error": {
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                        "message": "You exceeded your current quota",
                    }
                },
            )
        elif fault in {"500", "502", "503", "529"}:
            error_type = "overloaded_error" if fault == "529" else "api_error"
            self._json(
                int(fault),
                {"type": kind, "error": {"type": error_type, "message": f"upstream {fault}"}},
            )
        elif fault == "400":
            self._json(
                400,
                {
                    "type": kind,
                    "error": {
                        "type": "invalid_request_error",
                        "message": "max_tokens is too large",
                    },
                },
            )
        elif fault == "401":
            self._json(
                401, {"error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            )
        else:
            return False
        return True

    # -- OpenAI ---------------------------------------------------------------------------
    def _openai(self, body: dict, model: str, fault: str) -> None:
        if self._common_fault(fault, anthropic=False):
            return
        answer = answer_for(model, body.get("messages") or [])
        if model in self.fake.rewrites:
            answer = self.fake.rewrites[model](answer)
        reply = self.fake.reply_for("openai", body, answer)
        answer = reply.text
        model, fingerprint = self.fake.served.get(model, (model, "fp-" + model))
        words = answer.split(" ") if answer or not reply.tool_calls else []
        prompt_tokens = _prompt_words(body.get("messages") or [])
        thought, style = self.fake.thinking.get(body.get("model", ""), ("", ""))
        thought_words = thought.split(" ") if thought else []
        completion_tokens = len(words) + _call_tokens(reply) + len(thought_words)
        parts = self.fake.usage_overrides.get(body.get("model", ""), {})
        prompt_tokens = parts.get("prompt_tokens", prompt_tokens)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if parts:
            usage["prompt_tokens_details"] = {"cached_tokens": parts["cached"]}
            if parts["cache_write"]:
                usage["prompt_tokens_details"]["cache_write_tokens"] = parts["cache_write"]
        if thought:
            usage["completion_tokens_details"] = {"reasoning_tokens": len(thought_words)}
        self._entry["usage"] = (prompt_tokens, completion_tokens)
        finish = "tool_calls" if reply.tool_calls else "stop"
        if not body.get("stream") or body.get("model") in self.fake.json_only:
            if fault == "malformed":
                return self._json(200, '{"choices": [ {"message": ')
            message = {"role": "assistant", "content": answer or None}
            if thought:
                message[style] = thought
            if reply.tool_calls:
                message["tool_calls"] = [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": raw}}
                    for i, n, raw in reply.tool_calls
                ]
            return self._json(
                200,
                {
                    "id": "cmpl-1",
                    "object": "chat.completion",
                    "model": model,
                    "system_fingerprint": fingerprint,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
        self._start_stream()
        if fault == "malformed":
            self._release()
            self._chunk('data: {"choices": [{"delta": {"content": "Hel\n\n')
            self._chunk("data: [DONE]\n\n")
            return self._end_stream()

        def delta(content: dict, finish_reason=None) -> None:
            chunk = {
                "id": "c",
                "object": "chat.completion.chunk",
                "model": model,
                "system_fingerprint": fingerprint,
                "choices": [{"index": 0, "delta": content, "finish_reason": finish_reason}],
            }
            self._chunk(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n")

        try:
            for i, word in enumerate(thought_words):
                delta({"role": "assistant", style: word if i == 0 else " " + word})
            for i, word in enumerate(words):
                delta({"content": word if i == 0 else " " + word})
                if fault == "slow" and i == 0:
                    time.sleep(self.fake.slow_seconds)
            for position, (call_id, name, _) in enumerate(reply.tool_calls):
                delta(
                    {
                        "tool_calls": [
                            {
                                "index": position,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
            for position, piece in _interleaved(reply):
                delta({"tool_calls": [{"index": position, "function": {"arguments": piece}}]})
            final = {
                "id": "c",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
            }
            self._chunk(f"data: {json.dumps(final)}\n\n")
            if (body.get("stream_options") or {}).get("include_usage"):
                self._chunk(f"data: {json.dumps({'id': 'c', 'choices': [], 'usage': usage})}\n\n")
            self._release()
            self._chunk("data: [DONE]\n\n")
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- Anthropic ------------------------------------------------------------------------
    def _anthropic(self, body: dict, model: str, fault: str) -> None:
        if self._common_fault(fault, anthropic=True):
            return
        answer = answer_for(model, body.get("messages") or [])
        if model in self.fake.rewrites:
            answer = self.fake.rewrites[model](answer)
        reply = self.fake.reply_for("anthropic", body, answer)
        answer = reply.text
        model = self.fake.served.get(model, (model, ""))[0]
        words = answer.split(" ") if answer or not reply.tool_calls else []
        input_tokens = _prompt_words(body.get("messages") or [])
        thought = self.fake.thinking.get(body.get("model", ""), ("", ""))[0]
        thought_words = thought.split(" ") if thought else []
        output_tokens = len(words) + _call_tokens(reply) + len(thought_words)
        parts = self.fake.usage_overrides.get(body.get("model", ""), {})
        prompt_usage = {"input_tokens": input_tokens}
        if parts:
            # Anthropic's input_tokens leaves out the prompt tokens read from or written to
            # the cache.
            prompt_usage = {
                "input_tokens": parts["prompt_tokens"] - parts["cached"] - parts["cache_write"],
                "cache_read_input_tokens": parts["cached"],
                "cache_creation_input_tokens": parts["cache_write"],
            }
            input_tokens = parts["prompt_tokens"]
        self._entry["usage"] = (input_tokens, output_tokens)
        stop_reason = "tool_use" if reply.tool_calls else "end_turn"
        if not body.get("stream"):
            if fault == "malformed":
                return self._json(200, "{not json")
            content = (
                [{"type": "thinking", "thinking": thought, "signature": "sig"}] if thought else []
            )
            content += [{"type": "text", "text": answer}] if words else []
            content += [
                {"type": "tool_use", "id": i, "name": n, "input": _object(raw)}
                for i, n, raw in reply.tool_calls
            ]
            return self._json(
                200,
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop_reason,
                    "usage": {**prompt_usage, "output_tokens": output_tokens},
                },
            )

        def event(name: str, data: dict) -> None:
            self._chunk(f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n")

        self._start_stream()
        try:
            event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "usage": {**prompt_usage, "output_tokens": 1},
                    },
                },
            )
            if fault == "malformed":
                self._release()
                self._chunk(
                    'event: content_block_delta\ndata: {"type": "content_block_delta", "del\n\n'
                )
                return self._end_stream()
            index = 0
            if thought_words:
                event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "thinking", "thinking": ""},
                    },
                )
                for i, word in enumerate(thought_words):
                    piece = word if i == 0 else " " + word
                    event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "thinking_delta", "thinking": piece},
                        },
                    )
                event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "signature_delta", "signature": "sig"},
                    },
                )
                event("content_block_stop", {"type": "content_block_stop", "index": 0})
                index = 1
            if words:
                event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                self._chunk('event: ping\ndata: {"type": "ping"}\n\n')
                for i, word in enumerate(words):
                    piece = word if i == 0 else " " + word
                    event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
                    if fault == "slow" and i == 0:
                        time.sleep(self.fake.slow_seconds)
                event("content_block_stop", {"type": "content_block_stop", "index": index})
                index += 1
            for offset, (call_id, name, raw) in enumerate(reply.tool_calls):
                block = index + offset
                event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": block,
                        "content_block": {
                            "type": "tool_use",
                            "id": call_id,
                            "name": name,
                            "input": {},
                        },
                    },
                )
                for start in range(0, len(raw), ARGUMENT_PIECE):
                    event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": block,
                            "delta": {
                                "type": "input_json_delta",
                                "partial_json": raw[start : start + ARGUMENT_PIECE],
                            },
                        },
                    )
                event("content_block_stop", {"type": "content_block_stop", "index": block})
            event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason},
                    "usage": {**prompt_usage, "output_tokens": output_tokens},
                },
            )
            self._release()
            event("message_stop", {"type": "message_stop"})
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            pass


def _call_tokens(reply: Reply) -> int:
    """What the fake counts as the output tokens of a reply's tool calls."""
    return sum(max(1, len(raw.split())) for _, _, raw in reply.tool_calls)


def _interleaved(reply: Reply):
    """(call index, piece) of every call's arguments, the calls' pieces taken in turn."""
    pieces = [
        [raw[i : i + ARGUMENT_PIECE] for i in range(0, len(raw), ARGUMENT_PIECE)]
        for _, _, raw in reply.tool_calls
    ]
    for round_ in range(max((len(p) for p in pieces), default=0)):
        for position, parts in enumerate(pieces):
            if round_ < len(parts):
                yield position, parts[round_]


def _object(raw: str) -> dict:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


if __name__ == "__main__":  # a manual endpoint: python -m tests.fake_llm
    fake = FakeLLM(latency=0.2)
    print(f"fake LLM at {fake.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.close()
