"""JSON Schema validation and the pattern engine that the automatic checks run on.

A schema must be valid under its metaschema (`$schema`, Draft 2020-12 by default; the
`jsonschema` package checks it): intake refuses one that is not. `schema_errors` is a small
validator for the common subset (type, enum, const, properties, required,
additionalProperties, items, min/maxItems, min/maxLength, pattern, minimum/maximum,
exclusiveMinimum/Maximum, anyOf/oneOf/allOf/not); unknown keywords are ignored, as the
standard says. It validates outputs (the `json_schema` check) and tool-call arguments (the
`tool_calls` check's `valid_args`).

The patterns (`regex`, and `pattern` in a schema) come from whoever wrote the test set and run
on the `regex` engine rather than Python's re, because it can stop a search: a pattern that
backtracks without end (`(a|a)+$` on a long run of a's) would otherwise hold a Celery worker,
or the web request of an output import, until it is killed. All the checks of one output share
CHECKS_TIMEOUT_SECONDS (a big schema walks a big output slowly too); past it a pattern fails
with "pattern took too long" and the checks not done with "time budget exceeded".
"""

from __future__ import annotations

import functools
import json
import time

import regex
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

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

# Time all the checks of one output may take together (a schema's pattern may run on every
# item of an array, and an allOf of many schemas walks a big output many times, so a limit per
# search or per check would not bound a run).
CHECKS_TIMEOUT_SECONDS = 1.0
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


class CheckError(Exception):
    """A check that cannot run on this output; its message is the check's detail."""


class PatternError(CheckError):
    """A pattern that the checks cannot run: it does not compile, or it took too long."""


class BudgetExceeded(CheckError):
    def __init__(self) -> None:
        super().__init__(
            f"check could not run: time budget exceeded ({CHECKS_TIMEOUT_SECONDS:g} s for all "
            "the checks of this output)"
        )


def schema_problem(schema) -> str | None:
    """Why schema is not a valid JSON Schema under its metaschema, or None. Formats are not
    asserted: `pattern` is checked by compile_pattern with the engine the checks use, which
    accepts more than Python's re.

    Remembered per schema text: checking a schema against its metaschema takes some 3 ms, and
    a tool's schema is checked again for every call of every generation (tool_checks)."""
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return _schema_problem(schema)
    return _remembered_problem(text)


@functools.lru_cache(maxsize=512)
def _remembered_problem(text: str) -> str | None:
    return _schema_problem(json.loads(text))


def _schema_problem(schema) -> str | None:
    declared = schema.get("$schema", "") if isinstance(schema, dict) else ""
    draft = Draft202012Validator
    if isinstance(declared, str):
        draft = validator_for(schema, default=Draft202012Validator)
    try:
        draft.check_schema(schema, format_checker=None)
    except SchemaError as exc:
        return f"not a valid JSON Schema: at {exc.json_path}: {exc.message}"
    except RecursionError:
        return "not a valid JSON Schema: nested too deeply"
    return None


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


def search_pattern(pattern: str, text: str, deadline: float, flags: int = 0) -> bool:
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
            f"pattern took too long (stopped after {CHECKS_TIMEOUT_SECONDS:g} s on this "
            f"output): {pattern}"
        ) from None


def schema_errors(value, schema, path: str = "$", deadline: float = float("inf")) -> list[str]:
    """The ways value breaks schema (a valid one: see schema_problem). Raises PatternError for
    a pattern that cannot run and BudgetExceeded past deadline, rather than count either as a
    mismatch (under "not" that would pass the check)."""
    if time.monotonic() >= deadline:
        raise BudgetExceeded
    if schema is False:
        return [f"{path}: no value allowed"]
    if not isinstance(schema, dict):
        return []
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_TYPES.get(name, lambda v: True)(value) for name in names):
            return [f"{path}: expected {' or '.join(names)}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: must be one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {schema['const']!r}")
    if isinstance(value, str):
        errors += _string_errors(value, schema, path, deadline)
    if isinstance(value, int | float) and not isinstance(value, bool):
        errors += _number_errors(value, schema, path)
    if isinstance(value, dict):
        errors += _object_errors(value, schema, path, deadline)
    if isinstance(value, list):
        errors += _array_errors(value, schema, path, deadline)
    return errors + _combined_errors(value, schema, path, deadline)


def _string_errors(value: str, schema: dict, path: str, deadline: float) -> list[str]:
    errors = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']}")
    if "pattern" in schema and not search_pattern(schema["pattern"], value, deadline):
        errors.append(f"{path}: does not match {schema['pattern']}")
    return errors


def _number_errors(value, schema: dict, path: str) -> list[str]:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    # Draft 4's exclusiveMinimum/Maximum are booleans that make minimum/maximum exclusive.
    if above is True:
        above, low = low, None
    if below is True:
        below, high = high, None
    errors = []
    if low is not None and value < low:
        errors.append(f"{path}: below {low}")
    if high is not None and value > high:
        errors.append(f"{path}: above {high}")
    if not isinstance(above, bool | None) and value <= above:
        errors.append(f"{path}: must be above {above}")
    if not isinstance(below, bool | None) and value >= below:
        errors.append(f"{path}: must be below {below}")
    return errors


def _object_errors(value: dict, schema: dict, path: str, deadline: float) -> list[str]:
    errors = [
        f"{path}: missing required property {key!r}"
        for key in schema.get("required", [])
        if key not in value
    ]
    properties = schema.get("properties", {})
    for key, sub in properties.items():
        if key in value:
            errors += schema_errors(value[key], sub, f"{path}.{key}", deadline)
    extra = schema.get("additionalProperties", True)
    for key in value.keys() - properties.keys():
        if extra is False:
            errors.append(f"{path}: unexpected property {key!r}")
        elif isinstance(extra, dict):
            errors += schema_errors(value[key], extra, f"{path}.{key}", deadline)
    return errors


def _array_errors(value: list, schema: dict, path: str, deadline: float) -> list[str]:
    errors = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{path}: more than {schema['maxItems']} items")
    if isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{path}[{i}]", deadline)
    return errors


def _combined_errors(value, schema: dict, path: str, deadline: float) -> list[str]:
    errors = []
    for sub in schema.get("allOf", []):
        errors += schema_errors(value, sub, path, deadline)
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
