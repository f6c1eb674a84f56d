"""Providers against a real local HTTP server speaking the OpenAI and Anthropic protocols."""

import socket
from decimal import Decimal

import pytest
from django.test import SimpleTestCase, override_settings

from tasks.generation import providers
from tasks.generation.providers.base import PermanentError, RetryableError
from tasks.models import Contender
from tests.fake_llm import FakeLLM

MESSAGES = [{"role": "user", "content": "How do I reset my password?"}]


def contender(fake: FakeLLM, provider="openai", model="m1", **kw) -> Contender:
    defaults = {
        "name": f"c-{model}",
        "provider": provider,
        "base_url": fake.base_url,
        "model": model,
        "params": {"temperature": 0.2, "max_tokens": 64, "seed": 7},
        "price_in_per_mtok": Decimal("1.0"),
        "price_out_per_mtok": Decimal("2.0"),
    }
    defaults.update(kw)
    return Contender(**defaults)


@override_settings(GENERATION_READ_TIMEOUT=0.5, GENERATION_CONNECT_TIMEOUT=1)
class OpenAITests(SimpleTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM(slow_seconds=1.5)

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_it_streams_an_answer_with_tokens_ttft_and_cost(self):
        c = contender(self.fake, model="ok-model", system_prompt="Be brief.")
        result = providers.generate(c, MESSAGES)
        assert result.text == "ok-model answers: How do I reset my password?"
        assert result.finish_reason == "stop"
        assert result.input_tokens == 2 + 6  # system prompt + question, counted by the server
        assert result.output_tokens == 8
        assert result.ttft_ms is not None and 0 <= result.ttft_ms <= result.latency_ms
        assert providers.cost_of(c, result.usage()) == Decimal("0.00002400")
        body = self.fake.calls_for("ok-model")[-1]["body"]
        assert body["stream"] is True and body["seed"] == 7 and body["temperature"] == 0.2
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}

    def test_it_measures_time_to_first_token_separately_from_latency(self):
        fake = FakeLLM(latency=0.15, chunk_delay=0.02)
        try:
            result = providers.generate(contender(fake, model="timed"), MESSAGES)
        finally:
            fake.close()
        assert result.ttft_ms >= 150
        assert result.latency_ms >= result.ttft_ms + 7 * 20 - 5

    def test_it_sends_the_key_from_the_named_environment_variable(self):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("FAKE_KEY_VAR", "sk-test-123")
            providers.generate(
                contender(self.fake, model="keyed", api_key_env="FAKE_KEY_VAR"), MESSAGES
            )
        assert self.fake.calls_for("keyed")[-1]["headers"]["Authorization"] == "Bearer sk-test-123"

    def test_it_rejects_a_missing_key_variable_without_calling(self):
        with pytest.raises(PermanentError, match="NOT_SET_ANYWHERE is not set"):
            providers.generate(
                contender(self.fake, model="nokey", api_key_env="NOT_SET_ANYWHERE"), MESSAGES
            )
        assert self.fake.calls_for("nokey") == []

    def test_it_retries_429_honouring_retry_after(self):
        self.fake.script("r429", "429")
        with pytest.raises(RetryableError) as info:
            providers.generate(contender(self.fake, model="r429"), MESSAGES)
        assert info.value.status == 429 and info.value.retry_after == 1.0

    def test_it_does_not_retry_an_insufficient_quota_429(self):
        self.fake.script("quota", "quota")
        with pytest.raises(PermanentError, match="insufficient_quota"):
            providers.generate(contender(self.fake, model="quota"), MESSAGES)

    def test_it_retries_server_errors(self):
        for code in ("500", "502", "503"):
            self.fake.script("r5xx", code)
            with pytest.raises(RetryableError) as info:
                providers.generate(contender(self.fake, model="r5xx"), MESSAGES)
            assert info.value.status == int(code)

    def test_it_fails_a_400_permanently_with_the_provider_message(self):
        self.fake.script("bad", "400")
        with pytest.raises(PermanentError, match="max_tokens is too large"):
            providers.generate(contender(self.fake, model="bad"), MESSAGES)

    def test_it_times_out_a_stalled_stream(self):
        self.fake.script("slow", "slow")
        with pytest.raises(RetryableError, match="timeout"):
            providers.generate(contender(self.fake, model="slow"), MESSAGES)

    def test_it_treats_a_malformed_stream_as_retryable(self):
        self.fake.script("mal", "malformed")
        with pytest.raises(RetryableError, match="malformed"):
            providers.generate(contender(self.fake, model="mal"), MESSAGES)

    def test_it_keeps_line_separators_that_stand_raw_inside_a_chunk(self):
        # A stream line ends at CR or LF only; str.splitlines() would cut these JSON strings.
        prompt = "One\u2028two\u2029three\x85four\x0cfive\x1csix"
        result = providers.generate(
            contender(self.fake, model="seps"), [{"role": "user", "content": prompt}]
        )
        assert result.text == f"seps answers: {prompt}"

    def test_it_refuses_an_answer_past_the_size_cap(self):
        # A runaway endpoint must not fill the worker's memory and the row (nor make the
        # checks overrun the task's time limit, which left the row running until its lease
        # lapsed, once per attempt).
        from tasks.generation.providers import base

        prompt = "x" * base.MAX_OUTPUT_CHARS
        with pytest.raises(RetryableError, match="answer is longer than 1,000,000 characters"):
            providers.generate(
                contender(self.fake, model="huge"), [{"role": "user", "content": prompt}]
            )

    def test_it_treats_a_refused_connection_as_retryable(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        c = contender(self.fake, model="gone", base_url=f"http://127.0.0.1:{port}/v1")
        with pytest.raises(RetryableError, match="connection error"):
            providers.generate(c, MESSAGES)


@override_settings(GENERATION_READ_TIMEOUT=0.5, GENERATION_CONNECT_TIMEOUT=1)
class AnthropicTests(SimpleTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fake = FakeLLM(slow_seconds=1.5)

    @classmethod
    def tearDownClass(cls):
        cls.fake.close()
        super().tearDownClass()

    def test_it_streams_a_message_with_usage(self):
        c = contender(self.fake, provider="anthropic", model="claude-ok", system_prompt="Be brief.")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("ANTH_KEY", "ak-1")
            c.api_key_env = "ANTH_KEY"
            result = providers.generate(c, MESSAGES)
        assert result.text == "claude-ok answers: How do I reset my password?"
        assert result.finish_reason == "end_turn"
        assert (result.input_tokens, result.output_tokens) == (6, 8)
        assert result.ttft_ms is not None
        call = self.fake.calls_for("claude-ok")[-1]
        assert call["path"] == "/v1/messages"
        assert call["headers"]["x-api-key"] == "ak-1" and call["headers"]["anthropic-version"]
        assert call["body"]["system"] == "Be brief." and "seed" not in call["body"]
        assert call["body"]["max_tokens"] == 64

    def test_it_keeps_line_separators_that_stand_raw_inside_an_event(self):
        prompt = "One\u2028two\x85three"
        c = contender(self.fake, provider="anthropic", model="aseps")
        result = providers.generate(c, [{"role": "user", "content": prompt}])
        assert result.text == f"aseps answers: {prompt}"

    def test_it_refuses_an_answer_past_the_size_cap(self):
        from tasks.generation.providers import base

        c = contender(self.fake, provider="anthropic", model="ahuge")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(base, "MAX_OUTPUT_CHARS", 100)
            assert providers.generate(c, [{"role": "user", "content": "y" * 70}]).text
            with pytest.raises(RetryableError, match="longer than 100 characters: not stored"):
                providers.generate(c, [{"role": "user", "content": "y" * 90}])

    def test_it_retries_overloaded_529(self):
        self.fake.script("over", "529")
        with pytest.raises(RetryableError, match="overloaded"):
            providers.generate(contender(self.fake, provider="anthropic", model="over"), MESSAGES)

    def test_it_fails_a_400_permanently(self):
        self.fake.script("a400", "400")
        with pytest.raises(PermanentError, match="invalid_request_error"):
            providers.generate(contender(self.fake, provider="anthropic", model="a400"), MESSAGES)

    def test_it_treats_malformed_events_and_stalls_as_retryable(self):
        self.fake.script("amal", "malformed", "slow")
        c = contender(self.fake, provider="anthropic", model="amal")
        with pytest.raises(RetryableError, match="malformed"):
            providers.generate(c, MESSAGES)
        with pytest.raises(RetryableError, match="timeout"):
            providers.generate(c, MESSAGES)


def test_event_stream_lines_end_at_cr_lf_or_crlf_only_even_across_chunks():
    import httpx

    from tasks.generation.providers.base import iter_sse

    chunks = [b"data: a\r", b"\ndata: b\xe2\x80\xa8c\r\n\r", b"\nevent: x\rdata: d\n\n", b"data: e"]
    response = httpx.Response(200, content=iter(chunks))
    assert list(iter_sse(response)) == [("", "a\nb\u2028c"), ("x", "d"), ("", "e")]


def test_a_stream_line_that_never_ends_is_refused(monkeypatch):
    import httpx

    from tasks.generation.providers import base

    monkeypatch.setattr(base, "MAX_BODY_BYTES", 1000)
    response = httpx.Response(200, content=iter([b"data: " + b"y" * 600] * 3))
    with pytest.raises(RetryableError, match="stream line is longer than 1,000 characters"):
        list(base.iter_sse(response))


def test_a_200_page_that_is_not_an_event_stream_is_named_for_what_it_is():
    import httpx

    from tasks.generation.providers.base import iter_sse

    page = httpx.Response(
        200, headers={"content-type": "text/html"}, content=b"<!doctype html>\n<title>Chat</title>"
    )
    with pytest.raises(RetryableError, match=r"no stream events \(text/html; it begins '<!doctype"):
        list(iter_sse(page))
    with pytest.raises(RetryableError, match=r"no stream events .*it is empty\): is base_url"):
        list(iter_sse(httpx.Response(200, content=b"")))
