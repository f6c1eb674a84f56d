"""Automatic checks on an output, from the task's `checks`.

`checks` is a dict with any of:
    {"json_schema": {...}, "regex": "pattern" | ["p1", "p2"], "max_chars": 500,
     "must_include": ["term", ...]}
(a list of {"type": "<name>", ...} objects is accepted too). The result per check is
{"passed": bool, "detail": str}; `checks_passed` is None when the task has no checks.

json_schema: a small validator for the common subset of JSON Schema (type, enum, const,
properties, required, additionalProperties, items, min/maxItems, min/maxLength, pattern,
minimum/maximum, exclusiveMinimum/Maximum, anyOf/oneOf/allOf/not). Unknown keywords are ignored,
as the standard says. The output may be wrapped in a ```json fence.

The patterns (`regex`, and `pattern` in a schema) come from whoever wrote the test set and run
on the `regex` engine rather than Python's re, because it can stop a search: a pattern that
backtracks without end (`(a|a)+$` on a long run of a's) would otherwise hold a Celery worker,
or the web request of an output import, until it is killed. The patterns of one output share
PATTERN_TIMEOUT_SECONDS; past it the check fails with "pattern took too long".
"""

from __future__ import annotations

import json
import re
import time

import regex

KNOWN = ("json_schema", "regex", "max_chars", "must_include")
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.S)

# Time the patterns of one output's checks may take together (a schema's pattern may run on
# every item of an array, so a limit per search would not bound a check).
PATTERN_TIMEOUT_SECONDS = 1.0
# The engine expands counted repeats when it compiles, which no timeout covers: a 30-character
# (?:(?:(?:a{1000}){1000}){1000}) takes gigabytes. A pattern is refused past this many items
# (compiling one at the limit takes some 50 ms).
MAX_PATTERN_ITEMS = 10_000
# One token of a pattern, to count its items: an escape, a character class (to its end if it
# has none: one pass, no backtracking), a group's opening with its (?: (?P<name> (?= ... kind,
# its closing, a count {m}, {m,}, {,n} or {m,n}, or any other character.
_TOKEN = regex.compile(
    r"\\.|\[\^?\]?(?:\\.|[^\]\\])*+\]?|(\((?:\?(?:[:>=!|]|<[=!]|P?<\w+>))?)|(\))"
    r"|\{(\d{0,9})(?:,(\d{0,9}))?\}|.",
    regex.S,
)


class PatternError(Exception):
    """A pattern that the checks cannot run: it does not compile, or it took too long."""


def _items(pattern: str) -> int:
    """How many items the pattern's counted repeats expand to (nested counts multiply), an
    upper bound of what compiling it costs."""
    groups = [0]  # items so far in each open group
    last = 0  # items of the last atom, which a count repeats
    for token in _TOKEN.finditer(pattern):
        opening, closing, low, high = token.groups()
        if opening:
            groups.append(0)
            last = 0
        elif closing and len(groups) > 1:
            last = groups.pop()
            groups[-1] += last
        elif low is not None:
            count = max(int(low or 0), int(high or 0), 1)
            groups[-1] += last * (count - 1)
            last *= count
        else:
            last = 1
            groups[-1] += 1
    return sum(groups)


def compile_pattern(pattern: str, flags: int = 0) -> regex.Pattern:
    """The pattern as the checks run it; PatternError says why it cannot be (intake uses this
    too, so a test set is refused for exactly the patterns that could not run)."""
    if _items(pattern) > MAX_PATTERN_ITEMS:
        raise PatternError(f"its counted repeats expand to over {MAX_PATTERN_ITEMS:,} items")
    try:
        return regex.compile(pattern, flags)
    except (regex.error, RecursionError, OverflowError, MemoryError) as exc:
        raise PatternError(str(exc)) from None


def _search(pattern: str, text: str, deadline: float, flags: int = 0) -> bool:
    """Whether pattern matches in text, within what is left of the time until deadline."""
    try:
        if time.monotonic() >= deadline:
            raise TimeoutError
        try:
            compiled = compile_pattern(pattern, flags)
        except PatternError as exc:
            raise PatternError(f"invalid pattern ({exc}): {pattern}") from None
        return compiled.search(text, timeout=max(deadline - time.monotonic(), 0)) is not None
    except TimeoutError:
        raise PatternError(
            f"pattern took too long (stopped after {PATTERN_TIMEOUT_SECONDS:g} s on this "
            f"output): {pattern}"
        ) from None


def schema_errors(value, schema, path: str = "$", deadline: float = float("inf")) -> list[str]:
    """The ways value breaks schema. Raises PatternError for a pattern that cannot run, rather
    than count it as a mismatch (under "not" that would pass the check)."""
    if schema is True or not isinstance(schema, dict):
        return []
    if schema is False:
        return [f"{path}: no value allowed"]
    errors: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_TYPES.get(name, lambda v: True)(value) for name in names):
            return [f"{path}: expected {' or '.join(names)}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: must be one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {schema['const']!r}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "pattern" in schema and not _search(schema["pattern"], value, deadline):
            errors.append(f"{path}: does not match {schema['pattern']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: above {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: must be above {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append(f"{path}: must be below {schema['exclusiveMaximum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required property {key!r}")
        properties = schema.get("properties", {})
        for key, sub in properties.items():
            if key in value:
                errors.extend(schema_errors(value[key], sub, f"{path}.{key}", deadline))
        extra = schema.get("additionalProperties", True)
        for key in value.keys() - properties.keys():
            if extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                errors.extend(schema_errors(value[key], extra, f"{path}.{key}", deadline))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                errors.extend(schema_errors(item, schema["items"], f"{path}[{i}]", deadline))
    for key in ("allOf",):
        for sub in schema.get(key, []):
            errors.extend(schema_errors(value, sub, path, deadline))
    if "anyOf" in schema and not any(
        not schema_errors(value, s, path, deadline) for s in schema["anyOf"]
    ):
        errors.append(f"{path}: matches none of anyOf")
    if (
        "oneOf" in schema
        and sum(not schema_errors(value, s, path, deadline) for s in schema["oneOf"]) != 1
    ):
        errors.append(f"{path}: must match exactly one of oneOf")
    if "not" in schema and not schema_errors(value, schema["not"], path, deadline):
        errors.append(f"{path}: must not match the 'not' schema")
    return errors


def schema_patterns(schema):
    """Every `pattern` in schema that schema_errors may run (intake compiles them)."""
    if not isinstance(schema, dict):
        return
    if "pattern" in schema:
        yield schema["pattern"]
    properties = schema.get("properties")
    subs = [
        *(properties.values() if isinstance(properties, dict) else ()),
        schema.get("additionalProperties"),
        schema.get("items"),
        schema.get("not"),
    ]
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            subs.extend(schema[key])
    for sub in subs:
        yield from schema_patterns(sub)


def _json_schema(output: str, schema, deadline: float) -> tuple[bool, str]:
    text = output
    fenced = _FENCE.match(output)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except ValueError as exc:
        return False, f"not JSON: {exc}"
    try:
        errors = schema_errors(value, schema, deadline=deadline)
    except PatternError as exc:
        return False, str(exc)
    return (not errors), "; ".join(errors[:5]) or "valid"


def _regex(output: str, patterns, deadline: float) -> tuple[bool, str]:
    patterns = patterns if isinstance(patterns, list) else [patterns]
    for pattern in patterns:
        try:
            if not _search(pattern, output, deadline, regex.M):
                return False, f"no match for {pattern}"
        except PatternError as exc:
            return False, str(exc)
    return True, "matched"


def _max_chars(output: str, limit, deadline: float) -> tuple[bool, str]:
    return len(output) <= int(limit), f"{len(output)} of {limit} characters"


def _must_include(output: str, terms, deadline: float) -> tuple[bool, str]:
    terms = terms if isinstance(terms, list) else [terms]
    lowered = output.lower()
    missing = [t for t in terms if str(t).lower() not in lowered]
    return (not missing), ("missing: " + ", ".join(map(str, missing))) if missing else "all present"


RUNNERS = {
    "json_schema": _json_schema,
    "regex": _regex,
    "max_chars": _max_chars,
    "must_include": _must_include,
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
            value = entry.get(
                "value",
                entry.get(
                    {
                        "json_schema": "schema",
                        "regex": "pattern",
                        "max_chars": "max",
                        "must_include": "terms",
                    }[kind]
                ),
            )
            out[kind] = value
    return out


def run_checks(output: str, checks) -> tuple[dict, bool | None]:
    results = {}
    deadline = time.monotonic() + PATTERN_TIMEOUT_SECONDS
    for kind, spec in normalize(checks).items():
        try:
            passed, detail = RUNNERS[kind](output, spec, deadline)
        except (TypeError, ValueError) as exc:
            passed, detail = False, f"check could not run: {exc}"
        results[kind] = {"passed": passed, "detail": detail[:300]}
    if not results:
        return {}, None
    return results, all(r["passed"] for r in results.values())
