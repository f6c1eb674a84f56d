"""The conversation runner: a task's user turns, and inside each turn the tool loop
(docs/tools.md, docs/conversations.md).

A task without tools and turns is one provider call, exactly as before, with an empty
transcript. Otherwise every user turn (`turns`, or one turn over the task's own conversation)
is answered with the contender's own earlier answers in the history, and inside a turn the
model is called with the task's tools until it answers without calling one, or `max_steps`
calls were made (then the turn ends with finish reason "max_steps" and the answer is what the
last call said). Each call is answered from the task's `tool_mocks`, first match wins.

A loop resumes (docs/tools.md, "Resuming"): after every model call the runner hands its whole
state (finished turns, the current turn's steps, the history, which mocks answered, the calls
kept) to `save_progress`, which the caller writes to the row under its claim; a later attempt
given that state as `resume` carries on from the last saved step, so after a failure the model
is asked again only for the step that failed. The mocks are deterministic, so the tool results
already shown to the model stay what they were. Nothing here touches the database.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from tasks.checks import transcripts
from tasks.checks.tools import args_match, call_record
from tasks.generation import providers
from tasks.generation.prices import Usage, call_costs, table_of
from tasks.generation.providers.base import (
    MAX_OUTPUT_CHARS,
    ProviderResult,
    RetryableError,
    ToolCall,
)

UNMOCKED = "no mocked result for this call"
NOT_AN_OBJECT = transcripts.NOT_AN_OBJECT


class LoopAbandoned(Exception):
    """The row is no longer this run's (cancelled, or reclaimed by another worker); `spent`:
    the tokens (input, output) of the call made that no saved state holds."""

    def __init__(self, message: str, spent: tuple[int, int] = (0, 0)) -> None:
        super().__init__(message)
        self.spent = spent


class TranscriptTooLong(RetryableError):
    """The transcript outgrew what is stored: the loop starts again from nothing, so every
    call it kept (`spent`) was paid for nothing."""

    def __init__(self, message: str, spent: tuple[int, int]) -> None:
        super().__init__(message)
        self.spent = spent


@dataclass
class RunResult:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int  # completion time: first request to last answer
    ttft_ms: int | None  # the first model call's
    finish_reason: str
    served_model: str = ""
    fingerprint: str = ""
    transcript: list = field(default_factory=list)
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    reasoning: str = ""  # the final answer's (each step's is in the transcript)
    # Each call priced at its own prompt length (a long loop's late calls may reach a tier).
    cost: Decimal | None = None
    reasoning_cost: Decimal | None = None
    tokens_per_s: float | None = None


def regime(task, *, single_turn: bool = False) -> tuple[list[dict], list[str | None]]:
    """(the history before the first turn, the user messages of the turns: None for a turn
    whose user message is already the history's last)."""
    if single_turn:  # the same request stated in one message, after the same prefix
        return [*(task.messages or []), {"role": "user", "content": task.single_turn}], [None]
    if task.turns:
        return list(task.messages or []), list(task.turns)
    return task.conversation(), [None]


def is_loop(task, *, single_turn: bool = False) -> bool:
    """Whether the task runs through the tool loop (tools, or turns of a scripted user)."""
    return bool(task.tools or (task.turns and not single_turn))


def conversation_run(
    *,
    contender,
    task,
    single_turn: bool = False,
    save_progress: Callable[[dict | None], bool] | None = None,
    resume: dict | None = None,
) -> RunResult:
    """Run the task for the contender. For a loop, `save_progress(state)` is called after every
    model call (and with None when the saved state must be dropped) and says whether the row
    is still ours (False: LoopAbandoned); `resume` is a state it saved, to carry on from."""
    if not is_loop(task, single_turn=single_turn):
        history, _ = regime(task, single_turn=single_turn)
        return single_result(contender, providers.generate(contender, history))
    run = _Run(contender, task, save_progress, resume or {})
    return run.run(*regime(task, single_turn=single_turn))


def single_result(contender, result: ProviderResult) -> RunResult:
    """One call's result as a run's, priced at the contender's prices."""
    return RunResult(
        text=result.text,
        latency_ms=result.latency_ms,
        ttft_ms=result.ttft_ms,
        finish_reason=result.finish_reason,
        served_model=result.served_model,
        fingerprint=result.fingerprint,
        reasoning=result.reasoning,
        **usage_totals(contender, [call_figures(result)]),
    )


def _total(values: list) -> int | Decimal | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def call_figures(result: ProviderResult) -> dict:
    """What a run keeps of one model call (JSON, so a loop's saved state holds it too)."""
    return {
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cache_read_tokens": result.cache_read_tokens,
        "cache_write_tokens": result.cache_write_tokens,
        "reasoning_tokens": result.reasoning_tokens,
        "ttft_ms": result.ttft_ms,
        "latency_ms": result.latency_ms,
        "stream_ms": result.stream_ms,
        "served_model": result.served_model,
        "fingerprint": result.fingerprint,
        "reasoning": result.reasoning,
    }


def usage_totals(contender, calls: list[dict]) -> dict:
    """The tokens, costs and streaming rate of a run's calls, each call priced on its own."""
    usages = [
        Usage(**{k: c.get(k) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                        "cache_write_tokens", "reasoning_tokens")})
        for c in calls
    ]  # fmt: skip
    costs = [call_costs(table_of(contender), usage) for usage in usages]
    streamed = [(c.get("output_tokens"), c.get("stream_ms") or c.get("latency_ms")) for c in calls]
    timed = [(n, ms) for n, ms in streamed if n is not None and ms]
    return {
        "input_tokens": _total([u.input_tokens for u in usages]),
        "output_tokens": _total([u.output_tokens for u in usages]),
        "cache_read_tokens": _total([u.cache_read_tokens for u in usages]),
        "cache_write_tokens": _total([u.cache_write_tokens for u in usages]),
        "reasoning_tokens": _total([u.reasoning_tokens for u in usages]),
        "cost": _total([c for c, _ in costs]),
        "reasoning_cost": _total([c for _, c in costs]),
        "tokens_per_s": tokens_per_s(timed),
    }


def tokens_per_s(timed: list[tuple[int, int]]) -> float | None:
    """Output tokens per second over the calls' streaming time (first token to the end; the
    whole call for an answer that came in one body). None without a timed token."""
    total_ms = sum(ms for _, ms in timed)
    if not timed or total_ms <= 0:
        return None
    return round(sum(n for n, _ in timed) * 1000 / total_ms, 3)


def _paid(call: dict) -> tuple[int, int]:
    return call.get("input_tokens") or 0, call.get("output_tokens") or 0


class _Run:
    def __init__(self, contender, task, save_progress, state: dict) -> None:
        self.contender = contender
        self.tools = list(task.tools or [])
        self.mocks = list(task.tool_mocks or [])
        self.max_steps = max(1, task.max_steps or 1)
        self.save_progress = save_progress
        # What earlier attempts saved (all empty on a first attempt).
        self.used: Counter[int] = Counter(
            {int(k): v for k, v in (state.get("used") or {}).items()}
        )  # times each mock answered, over the whole run
        self.calls: list[dict] = list(state.get("calls") or [])  # each kept call's figures
        self.size = state.get("size", 0)
        self.earlier_ms = state.get("elapsed_ms", 0)
        self.turns: list[dict] = list(state.get("turns") or [])
        self.open_turn: int | None = state.get("turn")
        self.open_steps: list[dict] = list(state.get("steps") or [])
        self.history: list[dict] | None = state.get("history")
        self.started = time.monotonic()

    def run(self, history: list[dict], users: list[str | None]) -> RunResult:
        if self.history is not None:  # resumed: the history as the model last saw it
            history = self.history
        for number, user in enumerate(users, start=1):
            if number <= len(self.turns):
                continue
            self.turns.append(self.turn(number, user, history))
        return RunResult(
            text=self.turns[-1]["answer"],
            **usage_totals(self.contender, self.calls),
            reasoning=(self.calls[-1].get("reasoning") or "") if self.calls else "",
            latency_ms=self.elapsed_ms(),
            ttft_ms=self.calls[0].get("ttft_ms") if self.calls else None,
            finish_reason=self.turns[-1]["finish_reason"],
            served_model=next((c["served_model"] for c in self.calls if c.get("served_model")), ""),
            fingerprint=next((c["fingerprint"] for c in self.calls if c.get("fingerprint")), ""),
            transcript=self.turns,
        )

    def elapsed_ms(self) -> int:
        return self.earlier_ms + int((time.monotonic() - self.started) * 1000)

    def turn(self, number: int, user: str | None, history: list[dict]) -> dict:
        if self.open_turn == number:  # resumed inside this turn: its user message is in
            steps, self.open_turn = self.open_steps, None
        else:
            if user is not None:
                history.append({"role": "user", "content": user})
            steps = []
        if steps and not steps[-1]["tool_calls"]:  # it had ended when it was saved
            return _turn(number, user, steps, steps[-1]["text"], steps[-1]["finish_reason"])
        while len(steps) < self.max_steps:
            result = self.call(history)
            calls = [
                call_record(call_id=c.id, name=c.name, raw=c.raw, tools=self.tools)
                for c in result.tool_calls
            ]
            answers = [self.answer(call) for call in calls]
            steps.append(_step(result, calls, answers))
            history.append(_assistant(result.text, result.tool_calls))
            if calls:
                history.extend(_tool_message(answer) for answer in answers)
            self.save(number, steps, history)
            if not calls:
                return _turn(number, user, steps, result.text, result.finish_reason)
        # Cut off: the calls of the last step were answered (a next turn's history needs every
        # call answered), but the model is not called again in this turn.
        return _turn(number, user, steps, steps[-1]["text"], "max_steps")

    def call(self, history: list[dict]) -> ProviderResult:
        result = providers.generate(self.contender, history, self.tools or None)
        self.calls.append(call_figures(result))
        self.size += len(result.text) + sum(len(c.raw) for c in result.tool_calls)
        if self.size > MAX_OUTPUT_CHARS:
            # Kept, it would fail every attempt the same way: dropped, and started afresh.
            if self.save_progress is not None:
                self.save_progress(None)
            spent = [_paid(c) for c in self.calls]
            raise TranscriptTooLong(
                f"the transcript is longer than {MAX_OUTPUT_CHARS:,} characters: not stored",
                spent=(sum(i for i, _ in spent), sum(o for _, o in spent)),
            )
        return result

    def save(self, number: int, steps: list[dict], history: list[dict]) -> None:
        """Hand the state after this step to the caller; a row no longer ours ends the run
        (the call just made is then held by no saved state: its tokens were spent)."""
        if self.save_progress is None:
            return
        state = {
            "turns": self.turns,
            "turn": number,
            "steps": steps,
            "history": history,
            "used": {str(k): v for k, v in self.used.items()},
            "calls": self.calls,
            "size": self.size,
            "elapsed_ms": self.elapsed_ms(),
        }
        if not self.save_progress(state):
            raise LoopAbandoned("the row is no longer this run's", spent=_paid(self.calls[-1]))

    def answer(self, call: dict) -> dict:
        """The tool result of one call, from the first mock that matches it."""
        answer = {"id": call["id"], "name": call["name"], "result": None, "error": ""}
        if call["arguments"] is None:
            return {**answer, "error": NOT_AN_OBJECT, "unmocked": False}
        for index, mock in enumerate(self.mocks):
            if mock.get("tool") != call["name"]:
                continue
            if "match" in mock and not args_match(mock["match"], call["arguments"]):
                continue
            if mock.get("times") is not None and self.used[index] >= mock["times"]:
                continue
            self.used[index] += 1
            if "error" in mock:
                return {**answer, "error": str(mock["error"]), "unmocked": False}
            return {**answer, "result": mock.get("result"), "unmocked": False}
        return {**answer, "error": UNMOCKED, "unmocked": True}


def _step(result: ProviderResult, calls: list[dict], answers: list[dict]) -> dict:
    return {
        "text": result.text,
        "tool_calls": calls,
        "tool_results": answers,
        "latency_ms": result.latency_ms,
        "ttft_ms": result.ttft_ms,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "finish_reason": result.finish_reason,
        **_step_extras(result),
    }


def _step_extras(result: ProviderResult) -> dict:
    """A step's reasoning and token parts, kept only when the provider sent them (older
    transcripts and answers without them read the same)."""
    extras = {
        "reasoning": result.reasoning or None,
        "reasoning_tokens": result.reasoning_tokens,
        "cache_read_tokens": result.cache_read_tokens,
        "cache_write_tokens": result.cache_write_tokens,
    }
    return {k: v for k, v in extras.items() if v is not None}


def _turn(number: int, user: str | None, steps: list[dict], answer: str, finish: str) -> dict:
    return {"turn": number, "user": user, "steps": steps, "answer": answer, "finish_reason": finish}


def _assistant(text: str, calls: list[ToolCall]) -> dict:
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw}}
            for c in calls
        ]
    return message


def _tool_message(answer: dict) -> dict:
    """What the model is sent back: the mocked result as JSON text, or the error as
    {"error": ...} (`is_error` tells the Anthropic translation to mark it)."""
    if answer["error"]:
        content = json.dumps({"error": answer["error"]}, ensure_ascii=False)
    else:
        result = answer["result"]
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    message = {"role": "tool", "tool_call_id": answer["id"], "content": content}
    if answer["error"]:
        message["is_error"] = True
    return message
