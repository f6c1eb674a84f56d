"""What every provider shares: the result shape, the error classification and HTTP plumbing.

Celery owns the retry budget, so providers never retry on their own: they make one call and
either return a `ProviderResult` or raise `RetryableError` / `PermanentError`.
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import httpx
from django.conf import settings

from tasks.generation.prices import Usage, call_costs, table_of
from tasks.images.store import image_base64

# Statuses that will not change on a retry. A 429 is retryable unless the quota is exhausted.
PERMANENT_STATUSES = {400, 401, 403, 404, 405, 413, 422}
RETRYABLE_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504, 529}
# An answer longer than this is not stored (about 250k tokens, past any model's output limit):
# a runaway endpoint would otherwise fill the worker's memory and the database row, and the
# checks and masking of the answer would overrun the task's time limit.
MAX_OUTPUT_CHARS = 1_000_000
# The most read of a body that is not a stream (a JSON answer, an error page), and the longest
# line of a stream (one chunk is a few hundred bytes).
MAX_BODY_BYTES = 8 * 1024 * 1024
# SSE lines end with CRLF, LF or CR, and only those: U+2028, U+0085, form feed ... may stand
# raw inside a JSON string (servers that do not escape them: vLLM, llama.cpp).
_EOL = re.compile(r"\r\n|\r|\n")


class ProviderError(Exception):
    retryable = False

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after


class RetryableError(ProviderError):
    retryable = True


class PermanentError(ProviderError):
    retryable = False


@dataclass
class ToolCall:
    """A tool call as the model made it: `raw` is the argument text exactly as sent (it may
    not be valid JSON; the conversation runner decides what it means)."""

    id: str
    name: str
    raw: str


@dataclass
class ProviderResult:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int
    ttft_ms: int | None
    finish_reason: str
    # What the endpoint says it served: the `model` of its answer (it may differ from the one
    # asked for: a dated snapshot, or a lighter model it routed to) and OpenAI's
    # `system_fingerprint` (the backend configuration). Empty when the endpoint sends none.
    served_model: str = ""
    fingerprint: str = ""
    # The tools the model called in this answer (an answer that calls none is final).
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Parts of the tokens above as the usage block reports them (None: not reported):
    # input_tokens counts every prompt token, cached or not; output_tokens every output token,
    # reasoning included.
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    # The model's reasoning, as OpenAI-compatible servers (reasoning_content / reasoning) and
    # Anthropic (thinking blocks) send it.
    reasoning: str = ""
    # The streaming time of the answer: first token of any kind (reasoning too) to the end.
    stream_ms: int | None = None

    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens,
        )


def history_tool_calls(message: dict) -> list[ToolCall]:
    """An assistant message's tool calls, in the OpenAI shape of the test sets and of the
    histories the conversation runner builds ({"id", "type": "function", "function": {"name",
    "arguments"}}); a flat {"id", "name", "arguments"} is read too. Arguments given as an
    object are sent as their JSON text."""
    calls = []
    for position, call in enumerate(message.get("tool_calls") or []):
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(
            ToolCall(
                id=str(call.get("id") or f"call_{position + 1}"),
                name=str(function.get("name") or ""),
                raw=arguments,
            )
        )
    return calls


def image_data(part: dict) -> tuple[str, str]:
    """(media type, base64) of a stored image part, read through the storage API."""
    try:
        return part.get("media_type") or "image/png", image_base64(part["image"])
    except (KeyError, FileNotFoundError):
        raise PermanentError(f"the task's image {part.get('image')!r} is not stored") from None


def tool_result_text(content) -> str:
    """A tool message's content as the text a provider sends (a structured result as JSON)."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def cost_of(contender, usage: Usage) -> Decimal | None:
    """Cost in the contender's currency at its price table (tasks/generation/prices.py): None when the
    provider reported no tokens."""
    return call_costs(table_of(contender), usage)[0]


def tokens(value) -> int | None:
    """A token count from a usage block: a non-negative integer, else unknown."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def api_key_for(contender) -> str:
    """The key from the environment variable the contender names ('' when it names none)."""
    if not contender.api_key_env:
        return ""
    key = os.environ.get(contender.api_key_env, "")
    if not key:
        raise PermanentError(
            f"environment variable {contender.api_key_env} is not set for contender {contender.name}"
        )
    return key


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from `retry-after-ms`, `Retry-After` (seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_message(body: bytes) -> str:
    """The provider's own error message when the body is the usual {"error": {...}} JSON."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            parts = [str(err.get(k)) for k in ("type", "code", "message") if err.get(k)]
            if parts:
                return ": ".join(parts)[:500]
        elif isinstance(err, str):
            return err[:500]
    return text[:500]


def classify_status(status: int, headers: httpx.Headers, body: bytes) -> ProviderError:
    message = f"HTTP {status}: {error_message(body)}"
    if status == 429 and b"insufficient_quota" in body:
        # OpenAI's "you have run out of credit": waiting will not help.
        return PermanentError(message, status=status)
    if status in RETRYABLE_STATUSES or status >= 500:
        return RetryableError(message, status=status, retry_after=parse_retry_after(headers))
    return PermanentError(message, status=status)


def timeouts() -> httpx.Timeout:
    return httpx.Timeout(
        connect=settings.GENERATION_CONNECT_TIMEOUT,
        read=settings.GENERATION_READ_TIMEOUT,
        write=settings.GENERATION_READ_TIMEOUT,
        pool=settings.GENERATION_CONNECT_TIMEOUT,
    )


_clients: dict[int, httpx.Client] = {}
_clients_lock = threading.Lock()


def http_client() -> httpx.Client:
    """One pooled client per process (httpx clients are thread-safe); rebuilt after a fork."""
    pid = os.getpid()
    client = _clients.get(pid)
    if client is None:
        with _clients_lock:
            client = _clients.get(pid)
            if client is None:
                limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
                client = httpx.Client(timeout=timeouts(), limits=limits, follow_redirects=False)
                _clients[pid] = client
    return client


class OutputText:
    """An answer's text as it streams in, refused past MAX_OUTPUT_CHARS."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def add(self, text: str) -> None:
        self.size += len(text)
        if self.size > MAX_OUTPUT_CHARS:
            raise RetryableError(too_long())
        self.parts.append(text)

    def count(self, size: int) -> None:
        """Text that is kept elsewhere (a tool call's arguments) counts toward the limit too."""
        self.size += size
        if self.size > MAX_OUTPUT_CHARS:
            raise RetryableError(too_long())

    def text(self) -> str:
        return "".join(self.parts)


def too_long() -> str:
    return f"the answer is longer than {MAX_OUTPUT_CHARS:,} characters: not stored"


def read_body(response: httpx.Response) -> bytes:
    """The body of a response that is not a stream, cut off at MAX_BODY_BYTES."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= MAX_BODY_BYTES:
            break
    return b"".join(chunks)[:MAX_BODY_BYTES]


def iter_lines(response: httpx.Response) -> Iterator[str]:
    """The lines of an event stream (httpx's iter_lines splits like str.splitlines())."""
    buffer = ""
    for text in response.iter_text():
        buffer += text
        # A CR at the end may be the first half of a CRLF: keep it for the next chunk.
        held = "\r" if buffer.endswith("\r") else ""
        *lines, buffer = _EOL.split(buffer[: len(buffer) - len(held)])
        buffer += held
        if len(buffer) > MAX_BODY_BYTES:
            raise RetryableError(f"a stream line is longer than {MAX_BODY_BYTES:,} characters")
        yield from lines
    if buffer:
        yield from _EOL.split(buffer)


def iter_sse(response: httpx.Response) -> Iterator[tuple[str, str]]:
    """(event, data) pairs from a server-sent-events stream.

    A 200 that holds no event at all (an HTML page from a wrong base_url, an empty body) is
    named for what it is rather than as a stream that ended early.
    """
    event, data_lines = "", []
    seen, first_line = False, ""
    # The read timeout bounds silence; this bounds a stream that trickles forever (the threads
    # pool enforces no task time limit, and the claim's lease must outlive the call).
    deadline = time.monotonic() + settings.CELERY_TASK_SOFT_TIME_LIMIT
    for line in iter_lines(response):
        if time.monotonic() > deadline:
            raise RetryableError("the stream exceeded the total time limit")
        if line == "":
            if data_lines:
                seen = True
                yield event, "\n".join(data_lines)
            event, data_lines = "", []
            continue
        first_line = first_line or line.strip()
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data_lines.append(value)
    if data_lines:
        yield event, "\n".join(data_lines)
    elif not seen:
        kind = response.headers.get("content-type") or "no content type"
        begins = f"it begins {first_line[:120]!r}" if first_line else "it is empty"
        raise RetryableError(
            f"the provider's answer holds no stream events ({kind}; {begins}): "
            "is base_url the API's address (often ending in /v1)?"
        )


def load_json(raw: str, what: str) -> dict:
    try:
        data = json.loads(raw)
    except ValueError:
        raise RetryableError(f"malformed {what} from the provider: {raw[:200]!r}") from None
    if not isinstance(data, dict):
        raise RetryableError(f"malformed {what} from the provider: expected an object")
    return data


class StreamingCall:
    """Times one streaming HTTP call: total latency and time to the first content token."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first_token: float | None = None
        self.first_any: float | None = None

    def token(self) -> None:
        if self.first_token is None:
            self.first_token = time.monotonic()
        self.any_token()

    def any_token(self) -> None:
        """A token of any kind (reasoning too): where the streaming time starts."""
        if self.first_any is None:
            self.first_any = time.monotonic()

    def stream_ms(self) -> int | None:
        if self.first_any is None:
            return None
        return int((time.monotonic() - self.first_any) * 1000)

    def latency_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def ttft_ms(self) -> int | None:
        if self.first_token is None:
            return None
        return int((self.first_token - self.started) * 1000)


def post_stream(url: str, *, headers: dict, payload: dict, parse) -> ProviderResult:
    """POST with streaming, map transport failures and HTTP errors to the two error classes.

    `parse(response, call)` reads the 200 response and returns a ProviderResult.
    """
    call = StreamingCall()
    try:
        with http_client().stream(
            "POST", url, headers=headers, json=payload, timeout=timeouts()
        ) as response:
            if response.status_code != 200:
                body = read_body(response)
                raise classify_status(response.status_code, response.headers, body)
            return parse(response, call)
    except ProviderError:
        raise
    except httpx.TimeoutException as exc:
        raise RetryableError(f"timeout talking to the provider ({type(exc).__name__})") from None
    except (httpx.TransportError, httpx.StreamError) as exc:
        raise RetryableError(f"connection error: {type(exc).__name__}: {exc}") from None
