"""Automatic checks on an output, from the task's `checks` (docs/testsets.md, "Checks").

`checks` is a dict with any of:
    {"json_schema": {...}, "regex": "pattern" | ["p1", "p2"], "max_chars": 500,
     "must_include": ["term", ...], "reference": "exact" | "normalized" | "choice" | {"number": t},
     "tool_calls": {"called": [...], "not_called": [...], "called_with": [...], "order": [...],
                    "max_calls": n, "valid_args": true}}
(a list of {"type": "<name>", ...} objects is accepted too). The result per check is
{"passed": bool, "detail": str}; `checks_passed` is None when the task has no checks.

json_schema validates the output (which may be wrapped in a ```json fence) with the validator
of tasks/checks/json_schema.py (the jsonschema library, patterns on the regex engine); reference compares it with the task's reference
(tasks/checks/reference.py); tool_calls judges the calls of the generation's transcript
(tasks/checks/tools.py). A check that cannot run is always a failed check with its reason, never
an exception: in a worker that would retry a paid call. All the checks of one output share
CHECKS_TIMEOUT_SECONDS, and so do all the turn checks of one transcript.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

import regex

from tasks.checks import transcripts
from tasks.checks.json_schema import (
    CHECKS_TIMEOUT_SECONDS,
    BudgetExceeded,
    CheckError,
    schema_errors,
    schema_problem,
    search_pattern,
)
from tasks.checks.reference import reference_check
from tasks.checks.tools import tool_calls_check

# The order the checks run in: the linear ones first, so the budget a pattern or a schema
# used up never costs an output its length, term and reference results.
KNOWN = ("max_chars", "must_include", "reference", "tool_calls", "regex", "json_schema")
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.S)


@dataclass(frozen=True)
class Subject:
    """What the checks judge: the answer, the tool calls made on the way (in order), the
    task's tools and reference."""

    output: str
    calls: list[dict] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)
    reference: str | None = None


def _json_schema(subject: Subject, schema, deadline: float) -> tuple[bool, str]:
    text = subject.output
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    problem = schema_problem(schema)
    if problem:  # stored before intake checked schemas
        raise CheckError(f"check could not run: {problem}")
    try:
        value = json.loads(text)
    except ValueError as exc:
        return False, f"not JSON: {exc}"
    errors = schema_errors(value, schema, deadline=deadline)
    return (not errors), "; ".join(errors[:5]) or "valid"


def _regex(subject: Subject, patterns, deadline: float) -> tuple[bool, str]:
    patterns = patterns if isinstance(patterns, list) else [patterns]
    for pattern in patterns:
        if not search_pattern(pattern, subject.output, deadline, regex.M):
            return False, f"no match for {pattern}"
    return True, "matched"


def _max_chars(subject: Subject, limit, deadline: float) -> tuple[bool, str]:
    length = len(subject.output)
    return length <= int(limit), f"{length} of {limit} characters"


def _must_include(subject: Subject, terms, deadline: float) -> tuple[bool, str]:
    terms = terms if isinstance(terms, list) else [terms]
    lowered = subject.output.lower()
    missing = [t for t in terms if str(t).lower() not in lowered]
    return (not missing), ("missing: " + ", ".join(map(str, missing))) if missing else "all present"


def _reference(subject: Subject, spec, deadline: float) -> tuple[bool, str]:
    return reference_check(subject.output, spec, subject.reference)


def _tool_calls(subject: Subject, spec, deadline: float) -> tuple[bool, str]:
    return tool_calls_check(spec, subject.calls, subject.tools, deadline)


RUNNERS = {
    "json_schema": _json_schema,
    "regex": _regex,
    "max_chars": _max_chars,
    "must_include": _must_include,
    "reference": _reference,
    "tool_calls": _tool_calls,
}
# The value's key in the list form, {"type": "regex", "pattern": ...} ("value" works for all).
_LIST_VALUE_KEYS = {
    "json_schema": "schema",
    "regex": "pattern",
    "max_chars": "max",
    "must_include": "terms",
    "reference": "mode",
    "tool_calls": "spec",
}


def normalize(checks) -> dict:
    """Accept the dict form or a list of {"type": ..., ...} objects."""
    if not checks:
        return {}
    if isinstance(checks, dict):
        return {k: v for k, v in checks.items() if k in RUNNERS}
    out = {}
    for entry in checks if isinstance(checks, list) else []:
        if isinstance(entry, dict) and entry.get("type") in RUNNERS:
            kind = entry["type"]
            out[kind] = entry.get("value", entry.get(_LIST_VALUE_KEYS[kind]))
    return out


def run_checks(
    output: str,
    checks,
    *,
    transcript: list | None = None,
    tools: list[dict] | None = None,
    reference: str | None = None,
) -> tuple[dict, bool | None]:
    """Every check of the task on output, within one CHECKS_TIMEOUT_SECONDS budget: the
    answer's checks on output, `tool_calls` on every call of transcript (none without one),
    against the task's tools; `reference` against reference. Never raises: a check that
    cannot run is a failed result that says why."""
    deadline = time.monotonic() + CHECKS_TIMEOUT_SECONDS
    subject = Subject(
        output=output or "",
        calls=transcripts.calls(transcript),
        tools=list(tools or []),
        reference=reference,
    )
    return _run_all(subject, normalize(checks), deadline)


def turn_checks_run(
    transcript: list,
    turn_checks: dict,
    *,
    tools: list[dict] | None = None,
    reference: str | None = None,
) -> list:
    """The transcript with each turn's "checks" and "checks_passed" filled in from
    turn_checks ({"3": {...checks...}}, 1-based): a turn's checks judge its answer and its own
    tool calls. A turn without turn checks gets "checks_passed": None and no "checks". All the
    turn checks of the transcript share one CHECKS_TIMEOUT_SECONDS budget. Returns new turn
    dicts; the transcript passed in is not changed."""
    deadline = time.monotonic() + CHECKS_TIMEOUT_SECONDS
    out = []
    for index, turn in enumerate(transcript or [], start=1):
        if not isinstance(turn, dict):
            out.append(turn)
            continue
        number = turn.get("turn") if isinstance(turn.get("turn"), int) else index
        filled = {k: v for k, v in turn.items() if k != "checks"}
        specs = normalize((turn_checks or {}).get(str(number)))
        results, passed = {}, None
        if specs:
            subject = Subject(
                output=turn.get("answer") or "",
                calls=transcripts.calls([turn]),
                tools=list(tools or []),
                reference=reference,
            )
            results, passed = _run_all(subject, specs, deadline)
            filled["checks"] = results
        filled["checks_passed"] = passed
        out.append(filled)
    return out


def _run_all(subject: Subject, specs: dict, deadline: float) -> tuple[dict, bool | None]:
    results = {
        kind: _run_one(kind, subject, specs[kind], deadline) for kind in KNOWN if kind in specs
    }
    if not results:
        return {}, None
    return results, all(r["passed"] for r in results.values())


def _run_one(kind: str, subject: Subject, spec, deadline: float) -> dict:
    try:
        if time.monotonic() >= deadline:
            raise BudgetExceeded
        passed, detail = RUNNERS[kind](subject, spec, deadline)
    except CheckError as exc:
        passed, detail = False, str(exc)
    except Exception as exc:  # noqa: BLE001 - a worker would retry a paid call for it
        passed, detail = False, f"check could not run: {type(exc).__name__}: {exc}"
    return {"passed": passed, "detail": detail[:300]}
