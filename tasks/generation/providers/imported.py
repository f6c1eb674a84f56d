"""`imported` contenders: outputs produced elsewhere and uploaded as JSONL.

One object per line: {"task_id": "T-1", "sample": 0, "output": "..."} plus optional
"input_tokens", "output_tokens", "latency_ms", "ttft_ms", "cost", "finish_reason",
"reasoning" and "reasoning_tokens" (a reasoning model's reasoning, shown to reviewers only
where the campaign says show_reasoning), "contender" (when given, it must name the contender
being imported), "single_turn" (true: the
answer to the task's single-turn statement) and "transcript" (the turns, steps, tool calls and
results, as generation keeps them: docs/tools.md; the output may then be left out: it is the
last turn's answer). Parsing is strict and all-or-nothing: every problem is reported as
"line L, field F: message".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from evalsite.text import more_problems
from evalsite.uploads import clean_id, decode_utf8, strict_json
from tasks.generation.providers.base import MAX_OUTPUT_CHARS, PermanentError

MAX_ERRORS = 50
INT_FIELDS = ("input_tokens", "output_tokens", "latency_ms", "ttft_ms", "reasoning_tokens")
# What the Generation columns hold: PositiveIntegerField, DecimalField(14, 8).
MAX_INT = 2**31 - 1
MAX_COST = Decimal("999999")
KNOWN_FIELDS = {
    "contender",
    "task_id",
    "external_id",
    "sample",
    "sample_index",
    "output",
    "text",
    "cost",
    "finish_reason",
    "model",
    "single_turn",
    "transcript",
    "reasoning",
    *INT_FIELDS,
}
# What an imported transcript may hold (docs/tools.md, "Transcripts").
MAX_TURNS = 20
MAX_STEPS = 50
MAX_CALLS = 64
TURN_KEYS = {"turn", "user", "steps", "answer", "finish_reason", "checks", "checks_passed"}
STEP_KEYS = {
    "text",
    "tool_calls",
    "tool_results",
    "latency_ms",
    "ttft_ms",
    "input_tokens",
    "output_tokens",
    "finish_reason",
    # what generation keeps of a reasoning model's step and a cached prompt
    "reasoning",
    "reasoning_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
}
CALL_KEYS = {"id", "name", "arguments", "raw", "valid", "unknown"}
RESULT_KEYS = {"id", "name", "result", "error", "unmocked"}


@dataclass
class ImportedOutput:
    line: int
    task_id: str
    sample: int
    output: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: int | None = None
    ttft_ms: int | None = None
    cost: Decimal | None = None
    finish_reason: str = ""
    contender: str = ""
    single_turn: bool = False
    transcript: list | None = None
    reasoning: str = ""
    reasoning_tokens: int | None = None


class ImportErrors(Exception):
    """`errors` as shown (capped, ending in "... and N more problems"); `count` counts all."""

    def __init__(self, errors: list[str], count: int | None = None):
        super().__init__("; ".join(errors))
        self.errors = errors
        self.count = len(errors) if count is None else count


def capped(errors: list[str]) -> tuple[list[str], int]:
    """(the first MAX_ERRORS problems and how many more there are, the count of all)."""
    if len(errors) <= MAX_ERRORS:
        return errors, len(errors)
    return [*errors[:MAX_ERRORS], more_problems(len(errors) - MAX_ERRORS)], len(errors)


def generate(contender, messages, tools=None):
    raise PermanentError("imported contenders are never called: upload their outputs instead")


def parse_outputs_collect(
    raw: bytes,
    *,
    max_bytes: int = 100 * 1024 * 1024,
    check: Callable[[int, dict], list[str]] | None = None,
):
    """(rows, errors): the valid rows and every problem found, in line order (`capped` cuts
    the list to show).

    `check(line, fields)` adds a caller's own problems for a line (e.g. against a campaign)
    even when the line has field errors: `fields` holds only the task_id, sample, output and
    contender values that are valid, so a check never reports a knock-on of a field error.
    A duplicate line passes no task_id or sample: they were checked on the line it repeats.
    """
    if len(raw) > max_bytes:
        return [], [f"file is {len(raw)} bytes, larger than the limit of {max_bytes}"]
    text, bad_bytes = decode_utf8(raw)
    if bad_bytes:
        return [], [f"line {number}, field (encoding): {message}" for number, message in bad_bytes]
    errors: list[str] = []
    rows: list[ImportedOutput] = []
    seen: dict[tuple[str, int, bool], int] = {}
    # Split on \n only: str.splitlines() would also split on U+2028 inside a JSON string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        data, problem = _line_object(number, line)
        if problem:
            errors.append(problem)
            continue
        row, row_errors = _line_row(number, data, seen=seen, check=check)
        if row_errors:
            errors.extend(row_errors)
            continue
        rows.append(row)
    if not rows and not errors:
        errors.append("line 1, field (file): the file holds no outputs")
    return rows, errors


def _line_object(number: int, line: str) -> tuple[dict | None, str]:
    """(the line's JSON object, "") or (None, the problem)."""
    try:
        data = strict_json(line)
    except (ValueError, RecursionError) as exc:
        return None, f"line {number}, field (json): {exc}"
    if not isinstance(data, dict):
        return None, f"line {number}, field (json): each line must be a JSON object"
    return data, ""


def _line_row(
    number: int,
    data: dict,
    *,
    seen: dict[tuple[str, int, bool], int],
    check: Callable[[int, dict], list[str]] | None,
) -> tuple[ImportedOutput | None, list[str]]:
    """(the line's output, []) or (None, every problem of the line, in field order).

    `valid` collects the values that passed their checks, for `check`; `seen` maps each
    (task_id, sample, single_turn) read so far to its line, to catch duplicates."""
    row_errors = [
        f"line {number}, field {key}: unknown field" for key in sorted(set(data) - KNOWN_FIELDS)
    ]
    valid: dict = {}
    task_id, sample = _line_ids(number, data, valid, row_errors)
    output, transcript = _line_output(number, data, valid, row_errors)
    single_turn = data.get("single_turn", False)
    if not isinstance(single_turn, bool):
        row_errors.append(f"line {number}, field single_turn: must be true or false")
    else:
        valid["single_turn"] = single_turn
    values, cost = _line_usage(number, data, row_errors)
    contender = data.get("contender") or ""
    if not isinstance(contender, str):
        row_errors.append(f"line {number}, field contender: must be a string")
    elif contender:
        valid["contender"] = contender
    finish_reason = data.get("finish_reason") or ""
    if not isinstance(finish_reason, str):
        row_errors.append(f"line {number}, field finish_reason: must be a string")
    reasoning = data.get("reasoning") or ""
    if not isinstance(reasoning, str):
        row_errors.append(f"line {number}, field reasoning: must be a string")
    elif len(reasoning) > MAX_OUTPUT_CHARS:
        row_errors.append(
            f"line {number}, field reasoning: is longer than {MAX_OUTPUT_CHARS:,} characters"
        )
    if "task_id" in valid and "sample" in valid:
        key = (task_id, sample, single_turn is True)
        if key in seen:
            row_errors.append(
                f"line {number}, field task_id: duplicate of line {seen[key]} "
                f"({task_id}, sample {sample}{', single turn' if key[2] else ''})"
            )
            del valid["task_id"], valid["sample"]
        else:
            seen[key] = number
    if check is not None:
        row_errors.extend(check(number, valid))
    if row_errors:
        return None, row_errors
    row = ImportedOutput(
        line=number,
        task_id=task_id,
        sample=sample,
        output=output,
        cost=cost,
        finish_reason=finish_reason[:50],
        single_turn=single_turn,
        transcript=transcript,
        reasoning=reasoning,
        **values,
    )
    return row, []


def _line_ids(number: int, data: dict, valid: dict, row_errors: list[str]) -> tuple:
    """(task_id, sample) as given; each valid one also goes to `valid`, a problem to `row_errors`."""
    task_id = data.get("task_id", data.get("external_id"))
    if not isinstance(task_id, str) or not task_id.strip():
        row_errors.append(f"line {number}, field task_id: required, a non-empty string")
    else:
        # as test-set intake stores ids: NFC, invisible characters dropped
        task_id = valid["task_id"] = clean_id(task_id)
    sample = data.get("sample", data.get("sample_index", 0))
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        row_errors.append(f"line {number}, field sample: must be an integer >= 0")
    else:
        valid["sample"] = sample
    return task_id, sample


def _line_output(number: int, data: dict, valid: dict, row_errors: list[str]) -> tuple:
    """(output, transcript): the output may be left out when a transcript ends in it."""
    transcript, transcript_problems = None, []
    if data.get("transcript") is not None:
        transcript, transcript_problems = transcript_value(data["transcript"])
        row_errors += [f"line {number}, field {problem}" for problem in transcript_problems]
    output = data.get("output", data.get("text"))
    if transcript_problems:
        transcript = None  # its problems say it; the output is not judged against it
    elif output is None and transcript:
        output = transcript[-1]["answer"]
    if transcript_problems and output is None:
        pass
    elif not isinstance(output, str):
        row_errors.append(f"line {number}, field output: required, a string")
    elif transcript and output != transcript[-1]["answer"]:
        row_errors.append(f"line {number}, field output: is not the transcript's last answer")
    else:
        valid["output"] = output
        if transcript:
            valid["transcript"] = transcript
    return output, transcript


def _line_usage(number: int, data: dict, row_errors: list[str]) -> tuple[dict, Decimal | None]:
    """(the token counts and timings by field, the cost as a Decimal)."""
    values = {}
    for field in INT_FIELDS:
        value = data.get(field)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT
        ):
            row_errors.append(
                f"line {number}, field {field}: must be an integer from 0 to {MAX_INT}"
            )
        values[field] = value
    cost = data.get("cost")
    if cost is not None:
        try:
            if isinstance(cost, bool):
                raise InvalidOperation
            cost = Decimal(str(cost))
            if not 0 <= cost <= MAX_COST:
                raise InvalidOperation
        except InvalidOperation:
            row_errors.append(f"line {number}, field cost: must be a number from 0 to {MAX_COST}")
    return values, cost


def transcript_value(value) -> tuple[list, list[str]]:
    """(the transcript with its optional fields filled in, its problems as "field: message"
    with the path, e.g. "transcript[0].steps[1].tool_calls[0].id: ..."). The calls' "valid"
    and "unknown" are judged again against the task's tools when the output is stored."""
    if not isinstance(value, list) or not value:
        return [], ["transcript: must be a non-empty array of turns"]
    if len(value) > MAX_TURNS:
        return [], [f"transcript: has {len(value)} turns; the limit is {MAX_TURNS}"]
    problems: list[str] = []
    turns = []
    for t, turn in enumerate(value):
        where = f"transcript[{t}]"
        if not isinstance(turn, dict):
            problems.append(f"{where}: must be an object (turn, user, steps, answer)")
            continue
        problems += _unknown_keys(turn, TURN_KEYS, where)
        if turn.get("turn", t + 1) != t + 1:
            problems.append(f"{where}.turn: must be {t + 1} (turns are numbered from 1)")
        user = turn.get("user")
        if user is not None and not isinstance(user, str):
            problems.append(f"{where}.user: must be a string or null")
        answer = turn.get("answer")
        if not isinstance(answer, str):
            problems.append(f"{where}.answer: required, a string")
        finish = turn.get("finish_reason") or ""
        if not isinstance(finish, str):
            problems.append(f"{where}.finish_reason: must be a string")
        steps = turn.get("steps")
        if not isinstance(steps, list) or not steps or len(steps) > MAX_STEPS:
            problems.append(f"{where}.steps: must be an array of 1 to {MAX_STEPS} model calls")
            continue
        parsed = [_step(step, f"{where}.steps[{s}]", problems) for s, step in enumerate(steps)]
        turns.append(
            {
                "turn": t + 1,
                "user": user,
                "steps": parsed,
                "answer": answer,
                "finish_reason": finish[:50] if isinstance(finish, str) else "",
            }
        )
    return turns, problems


def _unknown_keys(value: dict, known: set[str], where: str) -> list[str]:
    return [f"{where}.{key}: unknown field" for key in sorted(set(value) - known)]


def _count(value, where: str, problems: list[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        problems.append(f"{where}: must be an integer from 0 to {MAX_INT}")
        return None
    return value


def _step(step, where: str, problems: list[str]) -> dict:
    if not isinstance(step, dict):
        problems.append(f"{where}: must be an object (text, tool_calls, tool_results, ...)")
        return {}
    problems += _unknown_keys(step, STEP_KEYS, where)
    text = step.get("text", "")
    if not isinstance(text, str):
        problems.append(f"{where}.text: must be a string")
    finish = step.get("finish_reason") or ""
    if not isinstance(finish, str):
        problems.append(f"{where}.finish_reason: must be a string")
    out = {
        "text": text if isinstance(text, str) else "",
        "tool_calls": _list(step, "tool_calls", where, problems, _call),
        "tool_results": _list(step, "tool_results", where, problems, _result),
        **{
            key: _count(step.get(key), f"{where}.{key}", problems)
            for key in ("latency_ms", "ttft_ms", "input_tokens", "output_tokens")
        },
        "finish_reason": finish[:50] if isinstance(finish, str) else "",
    }
    return out


def _list(step: dict, key: str, where: str, problems: list[str], parse) -> list[dict]:
    value = step.get(key, [])
    if not isinstance(value, list) or len(value) > MAX_CALLS:
        problems.append(f"{where}.{key}: must be an array of at most {MAX_CALLS}")
        return []
    return [parse(item, f"{where}.{key}[{i}]", problems) for i, item in enumerate(value)]


def _call(call, where: str, problems: list[str]) -> dict:
    if not isinstance(call, dict):
        problems.append(f"{where}: must be an object (id, name, arguments or raw)")
        return {}
    problems += _unknown_keys(call, CALL_KEYS, where)
    for key in ("id", "name"):
        if not isinstance(call.get(key), str) or not call[key]:
            problems.append(f"{where}.{key}: required, a non-empty string")
    raw, arguments = call.get("raw"), call.get("arguments")
    if raw is None and not isinstance(arguments, dict):
        problems.append(f"{where}: needs raw (the argument text) or arguments (an object)")
    elif raw is not None and not isinstance(raw, str):
        problems.append(f"{where}.raw: must be a string")
    elif arguments is not None and not isinstance(arguments, dict):
        problems.append(f"{where}.arguments: must be an object or null")
    if raw is None and isinstance(arguments, dict):
        raw = json.dumps(arguments, ensure_ascii=False)
    return {"id": call.get("id"), "name": call.get("name"), "raw": raw}


def _result(result, where: str, problems: list[str]) -> dict:
    if not isinstance(result, dict):
        problems.append(f"{where}: must be an object (id, result or error)")
        return {}
    problems += _unknown_keys(result, RESULT_KEYS, where)
    if not isinstance(result.get("id"), str) or not result["id"]:
        problems.append(f"{where}.id: required, a non-empty string (the call's id)")
    error = result.get("error") or ""
    if not isinstance(error, str):
        problems.append(f"{where}.error: must be a string")
    unmocked = result.get("unmocked", False)
    if not isinstance(unmocked, bool):
        problems.append(f"{where}.unmocked: must be true or false")
    name = result.get("name")
    return {
        "id": result.get("id"),
        "name": name if isinstance(name, str) else "",
        "result": result.get("result"),
        "error": error if isinstance(error, str) else "",
        "unmocked": unmocked is True,
    }
