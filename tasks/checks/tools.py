"""The `tool_calls` check, and the rules a tool call is judged by (docs/tools.md, "Tool checks").

    "tool_calls": {"called": ["get_order"], "not_called": ["refund"],
                   "called_with": [{"tool": "get_order", "args": {"order_id": "A-17"}}],
                   "order": ["get_order", "send_email"], "max_calls": 4, "valid_args": true}

Every condition given must hold; the detail names each one that does not. The calls are every
tool call of the transcript (for a turn check, of that turn), valid or not, in order; a
generation without a transcript made no calls. `order` is a subsequence: other calls may come
between and around the named ones. `valid_args`: every call names a declared tool and its
arguments are a JSON object that validates against the tool's `parameters`.

`args_match` and `call_problem` are shared with generation, so the mock that answered a call
and the check that judges it apply the same subset rule and the same validity.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tasks.checks.json_schema import (
    CHECKS_TIMEOUT_SECONDS,
    CheckError,
    schema_errors,
    schema_problem,
)

MAX_SHOWN = 3  # problems named per condition before "and N more"


def parse_arguments(raw) -> dict | None:
    """A call's argument text as the object it encodes, or None when it is not a JSON object.
    Blank text is an empty object (some endpoints send "" for a tool without parameters)."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def args_match(expected: Any, actual: Any) -> bool:
    """Whether actual holds expected: an object's keys are a subset (recursively: a nested
    object is matched as a subset too), arrays are equal item by item, scalars are equal, with
    booleans kept apart from numbers (true is not 1) and 1 equal to 1.0."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and args_match(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(args_match(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(actual, dict | list):
        return False
    return expected == actual


def call_arguments(call: dict) -> dict | None:
    """The call's arguments as an object: its parsed "arguments", else its "raw" text parsed."""
    if "arguments" in call:
        args = call["arguments"]
        return args if isinstance(args, dict) else None
    return parse_arguments(call.get("raw"))


def call_problem(call: dict, tools: list[dict], *, deadline: float | None = None) -> str | None:
    """Why a call is not valid (an undeclared tool, arguments that are not a JSON object or
    that break the tool's schema), or None. Raises CheckError when the schema cannot be run
    (a pattern that does not compile or took too long, the budget spent)."""
    name = call.get("name")
    tool = next((t for t in tools if isinstance(t, dict) and t.get("name") == name), None)
    if tool is None:
        return f"unknown tool {name!r}"
    args = call_arguments(call)
    if args is None:
        raw = call.get("raw")
        shown = raw if isinstance(raw, str) else json.dumps(call.get("arguments"))
        return f"arguments are not a JSON object: {_short(shown)}"
    schema = tool.get("parameters") or {}
    problem = schema_problem(schema)
    if problem:
        raise CheckError(f"check could not run: tool {name!r}: {problem}")
    if deadline is None:
        deadline = time.monotonic() + CHECKS_TIMEOUT_SECONDS
    errors = schema_errors(args, schema, deadline=deadline)
    return "; ".join(errors[:MAX_SHOWN]) or None


def call_record(*, call_id: str, name: str, raw: str, tools: list[dict]) -> dict:
    """A transcript's tool call entry ({"id", "name", "arguments", "raw", "valid", "unknown"})
    for a call as the model sent it, judged as the `valid_args` check judges it."""
    arguments = parse_arguments(raw)
    unknown = not any(isinstance(t, dict) and t.get("name") == name for t in tools)
    try:
        problem = call_problem({"name": name, "arguments": arguments, "raw": raw}, tools)
    except CheckError as exc:  # a schema that cannot run: the call cannot be shown valid
        problem = str(exc)
    return {
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "raw": raw,
        "valid": problem is None,
        "unknown": unknown,
    }


def tool_calls_check(
    spec: dict, calls: list[dict], tools: list[dict], deadline: float
) -> tuple[bool, str]:
    """The tool_calls check on calls (a transcript's, in order): (passed, detail)."""
    if not isinstance(spec, dict):
        raise CheckError(f"check could not run: tool_calls must be an object, not {spec!r}")
    names = [call.get("name") for call in calls]
    failures = [
        *_called(spec, names),
        *_called_with(spec, calls),
        *_order(spec, names),
        *_max_calls(spec, names),
    ]
    if spec.get("valid_args"):
        failures += _valid_args(calls, tools or [], deadline)
    count = f"{len(calls)} call{'' if len(calls) == 1 else 's'}"
    if failures:
        return False, f"{'; '.join(failures)} ({count})"
    return True, f"{count}: {', '.join(names) or 'none'}; every condition met"


def _called(spec: dict, names: list) -> list[str]:
    failures = []
    missing = [tool for tool in spec.get("called") or [] if tool not in names]
    if missing:
        failures.append(f"not called: {', '.join(missing)}")
    forbidden = [
        f"{tool} ({names.count(tool)}x)" for tool in spec.get("not_called") or [] if tool in names
    ]
    if forbidden:
        failures.append(f"called though it must not be: {', '.join(forbidden)}")
    return failures


def _called_with(spec: dict, calls: list[dict]) -> list[str]:
    failures = []
    for entry in spec.get("called_with") or []:
        tool, expected = entry.get("tool"), entry.get("args") or {}
        same_tool = [call for call in calls if call.get("name") == tool]
        if any(args_match(expected, call_arguments(call)) for call in same_tool):
            continue
        wanted = f"no {tool} call with {_short(json.dumps(expected, ensure_ascii=False))}"
        if same_tool:
            got = call_arguments(same_tool[0])
            seen = json.dumps(got, ensure_ascii=False) if got is not None else "bad JSON"
            wanted += f" (first {tool} call had {_short(seen)})"
        failures.append(wanted)
    return failures


def _order(spec: dict, names: list) -> list[str]:
    order = spec.get("order") or []
    remaining = iter(names)
    if all(tool in remaining for tool in order):  # `in` consumes the iterator: a subsequence
        return []
    seen = ", ".join(str(n) for n in names[:10]) + (", ..." if len(names) > 10 else "")
    return [f"order {' > '.join(order)} not followed (calls: {seen or 'none'})"]


def _max_calls(spec: dict, names: list) -> list[str]:
    limit = spec.get("max_calls")
    if limit is None or len(names) <= limit:
        return []
    return [f"{len(names)} calls, more than max_calls {limit}"]


def _valid_args(calls: list[dict], tools: list[dict], deadline: float) -> list[str]:
    problems = []
    for position, call in enumerate(calls, start=1):
        problem = call_problem(call, tools, deadline=deadline)
        if problem:
            problems.append(f"call {position} ({call.get('name')}): {problem}")
    if not problems:
        return []
    more = len(problems) - MAX_SHOWN
    shown = "; ".join(problems[:MAX_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return [f"invalid: {shown}"]


def _short(text, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
