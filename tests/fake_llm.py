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
    "ok"         a normal answer (also what happens when the script is empty)

Answers are deterministic: "<model> answers: <prompt>", streamed word by word. Streams carry
non-ASCII text unescaped, as vLLM and llama.cpp send it (a raw U+2028 inside a JSON string).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


def answer_for(model: str, messages: list[dict]) -> str:
    last = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(last, list):  # content blocks
        last = " ".join(part.get("text", "") for part in last if isinstance(part, dict))
    return f"{model} answers: {last}"


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
        with self.fake.lock:
            self.fake.calls.append(
                {
                    "path": self.path,
                    "model": model,
                    "body": body,
                    "fault": fault,
                    "headers": dict(self.headers),
                    "at": time.time(),
                }
            )
        self._model, self._released = model, False
        with self.fake.lock:
            self.fake.active[model] += 1
            self.fake.max_active[model] = max(self.fake.max_active[model], self.fake.active[model])
        try:
            delay = self.fake.latency + self.fake.delays.get(model, 0.0)
            if delay:
                time.sleep(delay)
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
        model, fingerprint = self.fake.served.get(model, (model, "fp-" + model))
        words = answer.split(" ")
        prompt_tokens = sum(
            len(str(m.get("content", "")).split()) for m in body.get("messages") or []
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(words),
            "total_tokens": prompt_tokens + len(words),
        }
        if not body.get("stream"):
            if fault == "malformed":
                return self._json(200, '{"choices": [ {"message": ')
            return self._json(
                200,
                {
                    "id": "cmpl-1",
                    "object": "chat.completion",
                    "model": model,
                    "system_fingerprint": fingerprint,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                },
            )
        self._start_stream()
        if fault == "malformed":
            self._release()
            self._chunk('data: {"choices": [{"delta": {"content": "Hel\n\n')
            self._chunk("data: [DONE]\n\n")
            return self._end_stream()
        try:
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                chunk = {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "model": model,
                    "system_fingerprint": fingerprint,
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
                self._chunk(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n")
                if fault == "slow" and i == 0:
                    time.sleep(self.fake.slow_seconds)
            final = {
                "id": "c",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
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
        model = self.fake.served.get(model, (model, ""))[0]
        words = answer.split(" ")
        input_tokens = sum(
            len(str(m.get("content", "")).split()) for m in body.get("messages") or []
        )
        if not body.get("stream"):
            if fault == "malformed":
                return self._json(200, "{not json")
            return self._json(
                200,
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": answer}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": input_tokens, "output_tokens": len(words)},
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
                        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
                    },
                },
            )
            if fault == "malformed":
                self._release()
                self._chunk(
                    'event: content_block_delta\ndata: {"type": "content_block_delta", "del\n\n'
                )
                return self._end_stream()
            event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
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
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
                if fault == "slow" and i == 0:
                    time.sleep(self.fake.slow_seconds)
            event("content_block_stop", {"type": "content_block_stop", "index": 0})
            event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": len(words)},
                },
            )
            self._release()
            event("message_stop", {"type": "message_stop"})
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            pass


if __name__ == "__main__":  # a manual endpoint: python -m tests.fake_llm
    fake = FakeLLM(latency=0.2)
    print(f"fake LLM at {fake.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.close()
