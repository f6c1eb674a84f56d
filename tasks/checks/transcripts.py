"""Small pure readers over a generation's transcript (docs/tools.md, "Transcripts").

A transcript is a list of turns, each with its model calls ("steps"), every step's tool calls
and the results the mocks gave back. These functions never raise on a malformed entry (an
imported transcript may be odd): what is not a dict, or not a list where one is expected, is
skipped. The checks, the report and the pages read transcripts through them, so "a call", "a
step" or "an unmocked call" means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

# What the tool loop answers a call whose arguments are not a JSON object (no mock sees it).
NOT_AN_OBJECT = "the arguments are not a JSON object"


def _dicts(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def turns(transcript) -> list[dict]:
    """The transcript's turns, in order."""
    return _dicts(transcript)


def steps(transcript) -> list[dict]:
    """Every model call of every turn, in order."""
    return [step for turn in turns(transcript) for step in _dicts(turn.get("steps"))]


def step_count(transcript) -> int:
    """How many model calls the task took (all turns)."""
    return len(steps(transcript))


def _joined(step: dict) -> Iterator[dict]:
    """A step's tool calls, each with the result it got (matched by id, else by position)."""
    results = _dicts(step.get("tool_results"))
    by_id = {r.get("id"): r for r in results if r.get("id") is not None}
    for position, call in enumerate(_dicts(step.get("tool_calls"))):
        result = by_id.get(call.get("id")) if call.get("id") is not None else None
        if result is None and position < len(results) and results[position].get("id") is None:
            result = results[position]
        yield {**call, "result": result}


def calls(transcript) -> list[dict]:
    """Every tool call, in order: the call's fields ("id", "name", "arguments", "raw", "valid",
    "unknown") plus "turn" (1-based), "step" (0-based within its turn) and "result" (the
    tool result it got, or None when there is none, e.g. the loop was cut off)."""
    out = []
    for t, turn in enumerate(turns(transcript), start=1):
        number = turn.get("turn") if isinstance(turn.get("turn"), int) else t
        for s, step in enumerate(_dicts(turn.get("steps"))):
            out.extend({**call, "turn": number, "step": s} for call in _joined(step))
    return out


def is_invalid(call: dict) -> bool:
    """The call's arguments were not a valid object for the tool's schema, or the task does
    not declare its tool (``valid`` false, or ``unknown`` true)."""
    return call.get("valid") is False or call.get("unknown") is True


def is_unmocked(call: dict) -> bool:
    """No mock matched the call (it got "no mocked result for this call")."""
    return bool((call.get("result") or {}).get("unmocked"))


def is_error(call: dict, *, include_unmocked: bool = False) -> bool:
    """The call's result was an error: by default only one a mock returned on purpose
    (``{"tool": .., "error": "timeout"}``), the kind an error-recovery scenario is about, never
    the loop's own refusal of arguments that are not a JSON object;
    ``include_unmocked`` adds the "no mocked result" errors."""
    result = call.get("result") or {}
    # A call whose arguments were not a JSON object never reached a mock: the loop itself
    # refused it ("the arguments are not a JSON object"). That is the model's invalid call
    # (counted as invalid), not a tool error it could recover from.
    refused = result.get("error") == NOT_AN_OBJECT
    return (
        bool(result.get("error"))
        and not refused
        and (include_unmocked or not result.get("unmocked"))
    )


def invalid(transcript) -> list[dict]:
    return [c for c in calls(transcript) if is_invalid(c)]


def unmocked(transcript) -> list[dict]:
    return [c for c in calls(transcript) if is_unmocked(c)]


def errors(transcript, *, include_unmocked: bool = False) -> list[dict]:
    return [c for c in calls(transcript) if is_error(c, include_unmocked=include_unmocked)]


def call_counts(transcript) -> dict[str, int]:
    """{"calls", "invalid", "unmocked", "errors" (mocked)} in one pass over the calls."""
    found = calls(transcript)
    return {
        "calls": len(found),
        "invalid": sum(map(is_invalid, found)),
        "unmocked": sum(map(is_unmocked, found)),
        "errors": sum(is_error(c) for c in found),
    }


def turn_checks(transcript) -> dict[int, bool]:
    """{turn number: checks_passed} for the turns that had turn checks."""
    out = {}
    for t, turn in enumerate(turns(transcript), start=1):
        number = turn.get("turn") if isinstance(turn.get("turn"), int) else t
        passed = turn.get("checks_passed")
        if isinstance(passed, bool):
            out[number] = passed
    return out
