"""Intake of a task's `checks` and of each turn's checks in `turn_checks` (docs/testsets.md).

The rules match what tasks/checks/automatic.py can run, so a test set is refused for exactly the checks
that could not run: patterns compile with the checks' engine, schemas pass their metaschema,
a tool check names declared tools only, a reference check needs a reference it can read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from evalsite.uploads import RowError, kind
from tasks.checks.automatic import schema_problem
from tasks.checks.json_schema import PatternError, compile_pattern, schema_patterns
from tasks.checks.reference import fold, reference_choice, reference_number

MAX_CHECKS_CHARS = 20_000  # checks as compact JSON (each turn's checks too)
MAX_REGEX_CHARS = 1_000
MAX_MUST_INCLUDE = 50
CHECK_KEYS = ("json_schema", "regex", "max_chars", "must_include", "tool_calls", "reference")
TOOL_CHECK_KEYS = ("called", "not_called", "called_with", "order", "max_calls", "valid_args")
REFERENCE_MODES = ("exact", "normalized", "choice")
SCHEMA_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class CheckContext:
    """What a row's other fields say about its checks. None means "that field has a problem
    of its own", and the rules that need it are skipped rather than reported twice."""

    tools: frozenset[str] | None = frozenset()  # the declared tool names
    possible_calls: int | None = None  # the most tool calls the checks' scope can hold
    limit: str = ""  # how possible_calls is reached, for the message
    reference: str | None = ""  # the task's reference text


def schema_value(schema: Any, name: str) -> dict:
    """A JSON Schema as the checks run it: an object whose `type`s are known, valid under its
    metaschema, whose `$schema` is a known draft and whose `$ref`s resolve within it, and
    whose patterns compile with the checks' engine."""
    if not isinstance(schema, dict):
        raise RowError(name, f"must be a JSON Schema object, not {kind(schema)}")
    declared = schema.get("type")
    kinds = declared if isinstance(declared, list) else [declared] if declared is not None else []
    if any(not isinstance(k, str) or k not in SCHEMA_TYPES for k in kinds):
        raise RowError(name, f"'type' must be one of {', '.join(sorted(SCHEMA_TYPES))}")
    # The metaschema first: the patterns are found by walking a schema it accepted.
    problem = schema_problem(schema)
    if problem:
        raise RowError(name, problem)
    for pattern in schema_patterns(schema):
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            raise RowError(name, f"pattern {pattern!r} does not compile: {exc}") from None
    return schema


def checks_value(value: Any, *, name: str = "checks", context: CheckContext) -> dict:
    """The `checks` of a task (or of one turn, name "turn_checks.3"), validated."""
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise RowError(name, f"must be an object, not {kind(value)}")
    unknown = set(value) - set(CHECK_KEYS)
    if unknown:
        raise RowError(
            name, f"unknown check(s) {', '.join(sorted(unknown))}; use {', '.join(CHECK_KEYS)}"
        )
    if len(json.dumps(value, ensure_ascii=False)) > MAX_CHECKS_CHARS:
        raise RowError(name, f"is longer than {MAX_CHECKS_CHARS:,} characters as JSON")
    out: dict = {}
    if "json_schema" in value:
        out["json_schema"] = schema_value(value["json_schema"], f"{name}.json_schema")
    if "regex" in value:
        out["regex"] = _regex(value["regex"], f"{name}.regex")
    if "max_chars" in value:
        if not positive_int(value["max_chars"]):
            raise RowError(f"{name}.max_chars", "must be a positive whole number")
        out["max_chars"] = value["max_chars"]
    if "must_include" in value:
        out["must_include"] = _must_include(value["must_include"], f"{name}.must_include")
    if "tool_calls" in value:
        out["tool_calls"] = _tool_calls(value["tool_calls"], f"{name}.tool_calls", context)
    if "reference" in value:
        out["reference"] = _reference(value["reference"], f"{name}.reference", context)
    return out


def _regex(pattern: Any, name: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise RowError(name, "must be a non-empty string")
    if len(pattern) > MAX_REGEX_CHARS:
        raise RowError(name, f"is longer than {MAX_REGEX_CHARS:,} characters")
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        raise RowError(name, f"does not compile: {exc}") from None
    return pattern


def _must_include(items: Any, name: str) -> list:
    if not isinstance(items, list) or not items:
        raise RowError(name, "must be a non-empty array of strings")
    if len(items) > MAX_MUST_INCLUDE:
        raise RowError(name, f"has {len(items)} entries; the limit is {MAX_MUST_INCLUDE}")
    if any(not isinstance(s, str) or not s.strip() for s in items):
        raise RowError(name, "every entry must be a non-empty string")
    return items


def _tool_names(value: Any, name: str, context: CheckContext) -> list[str]:
    if not isinstance(value, list) or not value:
        raise RowError(name, "must be a non-empty array of tool names")
    for entry in value:
        if not isinstance(entry, str):
            raise RowError(name, f"every entry must be a tool name (a string), not {kind(entry)}")
        _declared(entry, name, context)
    return value


def _declared(tool: str, name: str, context: CheckContext) -> None:
    if context.tools is None or tool in context.tools:
        return
    declared = ", ".join(sorted(context.tools)) if context.tools else "none: the task has no tools"
    raise RowError(name, f"unknown tool {tool!r} (declared: {declared})")


def _tool_calls(value: Any, name: str, context: CheckContext) -> dict:
    if not isinstance(value, dict):
        raise RowError(name, f"must be an object with any of {', '.join(TOOL_CHECK_KEYS)}")
    unknown = set(value) - set(TOOL_CHECK_KEYS)
    if unknown:
        raise RowError(
            name, f"unknown key(s) {', '.join(sorted(unknown))}; use {', '.join(TOOL_CHECK_KEYS)}"
        )
    if not value:
        raise RowError(name, f"is empty; give any of {', '.join(TOOL_CHECK_KEYS)}")
    out: dict = {}
    for key in ("called", "not_called", "order"):
        if key in value:
            out[key] = _tool_names(value[key], f"{name}.{key}", context)
    if "called_with" in value:
        out["called_with"] = _called_with(value["called_with"], f"{name}.called_with", context)
    if "max_calls" in value:
        if not positive_int(value["max_calls"]):
            raise RowError(f"{name}.max_calls", "must be a positive whole number")
        out["max_calls"] = value["max_calls"]
    if "valid_args" in value:
        if not isinstance(value["valid_args"], bool):
            raise RowError(
                f"{name}.valid_args", f"must be true or false, not {kind(value['valid_args'])}"
            )
        out["valid_args"] = value["valid_args"]
    _never_passes(out, name, context)
    return out


def _called_with(value: Any, name: str, context: CheckContext) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise RowError(name, 'must be a non-empty array of {"tool", "args"} objects')
    for i, entry in enumerate(value):
        where = f"{name}[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"tool", "args"} or "tool" not in entry:
            raise RowError(where, 'must be an object with "tool" and "args" (and nothing else)')
        if not isinstance(entry["tool"], str):
            raise RowError(f"{where}.tool", f"must be a tool name, not {kind(entry['tool'])}")
        _declared(entry["tool"], f"{where}.tool", context)
        if not isinstance(entry.get("args", {}), dict):
            raise RowError(
                f"{where}.args", f"must be an object (a subset of the arguments), not "
                f"{kind(entry['args'])}"
            )  # fmt: skip
    return value


def _never_passes(check: dict, name: str, context: CheckContext) -> None:
    """Refuse a tool check no run can pass: it needs a tool it also forbids, more calls in
    order than the task can make, or more calls than its own max_calls allows."""
    forbidden = set(check.get("not_called", []))
    needed = [
        *check.get("called", []),
        *(e["tool"] for e in check.get("called_with", [])),
        *check.get("order", []),
    ]
    clash = sorted(forbidden.intersection(needed))
    if clash:
        raise RowError(
            f"{name}.not_called",
            f"{', '.join(clash)} is also required by this check: it could never pass",
        )
    order = check.get("order", [])
    if context.possible_calls is not None and len(order) > context.possible_calls:
        raise RowError(
            f"{name}.order",
            f"has {len(order)} entries, but at most {context.possible_calls} tool calls can "
            f"be made ({context.limit}, one call per model call)",
        )
    least = max(len(order), len(set(check.get("called", []))))
    if "max_calls" in check and check["max_calls"] < least:
        raise RowError(
            f"{name}.max_calls",
            f"is {check['max_calls']}, but the check needs at least {least} calls: it could "
            "never pass",
        )


def _reference(value: Any, name: str, context: CheckContext) -> str | dict:
    if isinstance(value, dict) and set(value) == {"number"}:
        tolerance = value["number"]
        if (
            isinstance(tolerance, bool)
            or not isinstance(tolerance, int | float)
            or not math.isfinite(tolerance)
            or tolerance < 0
        ):
            raise RowError(f"{name}.number", "the tolerance must be a number, 0 or more")
    elif value not in REFERENCE_MODES:
        raise RowError(
            name, f'must be {", ".join(REFERENCE_MODES)} or {{"number": tolerance}}, not '
            f"{json.dumps(value, ensure_ascii=False)[:60]}"
        )  # fmt: skip
    reference = context.reference
    if reference is None:
        return value
    if not reference.strip():
        raise RowError(name, "compares the answer with the task's reference, which is empty")
    if isinstance(value, dict) and reference_number(reference) is None:
        raise RowError(name, f"the task's reference has no number to compare with: {reference!r}")
    if value == "choice" and reference_choice(reference) == (None, ""):
        raise RowError(name, "the task's reference is neither an option letter nor a label")
    if value == "normalized" and not fold(reference):
        raise RowError(name, "the task's reference is only punctuation once folded")
    return value
