"""JSON Schema validation and the pattern engine that the automatic checks run on.

Schemas are validated by the `jsonschema` package itself, every keyword of the draft the schema
declares (`$schema`, Draft 2020-12 by default), with `$ref`/`$defs` resolved by `referencing`
inside the schema only: nothing is ever fetched, so a `$ref` that does not resolve in the
schema (or in the drafts' own metaschemas) is refused, as is a `$schema` that names no draft
the library knows. `schema_problem` says why a schema cannot run (intake refuses it, a stored
one fails its check with the reason); `schema_errors` validates outputs (the `json_schema`
check) and tool-call arguments (the `tool_calls` check's `valid_args`). Formats are not
asserted, as the standard's default says.

The patterns (`regex`, and `pattern`/`patternProperties` in a schema) come from whoever wrote
the test set and are matched against what the model wrote, so they run on the `regex` engine
rather than Python's re, because it can stop a search: a pattern that backtracks without end
(`(a|a)+$` on a long run of a's) would otherwise hold a Celery worker, or the web request of an
output import, until it is killed. The library's validators are extended for that: its
`pattern`, `patternProperties` and `additionalProperties` keywords search with this engine, and
every keyword first checks the time budget. All the checks of one output share
CHECKS_TIMEOUT_SECONDS (a big schema walks a big output slowly too); past it a pattern fails
with "pattern took too long" and the checks not done with "time budget exceeded".
"""

from __future__ import annotations

import contextvars
import functools
import json
import math
import time
from collections.abc import Iterator

import regex
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import SchemaError
from jsonschema.validators import extend, validator_for
from jsonschema_specifications import REGISTRY as DRAFTS
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

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
        # No deadline (math.inf): the engine takes no infinite timeout, only none.
        remaining = None if deadline == math.inf else max(deadline - time.monotonic(), 0)
        return compiled.search(text, timeout=remaining) is not None
    except TimeoutError:
        raise PatternError(
            f"pattern took too long (stopped after {CHECKS_TIMEOUT_SECONDS:g} s on this "
            f"output): {pattern}"
        ) from None


# The deadline of the checks running in this thread (schema_errors sets it): the library calls
# the keyword functions with its own arguments only.
_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("schema_deadline")
# An empty registry: `$ref`s resolve inside the schema and the drafts' metaschemas (which the
# library adds), never over the network (its default registry would fetch an http $ref).
_NO_REMOTE = Registry()
# Keywords whose library code matches property names with Python's re: a schema with both
# cannot run on the checks' engine (the library's evaluated-keys walk is not replaceable).
_UNEVALUATED = ("unevaluatedProperties",)


def schema_problem(schema) -> str | None:
    """Why schema cannot run, or None: it is not valid under its metaschema, its `$schema`
    names no known draft, or a `$ref` does not resolve within it. Formats are not asserted:
    `pattern` is checked by compile_pattern with the engine the checks use, which accepts more
    than Python's re.

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


def _draft(schema):
    """The library's validator class for the draft schema declares; None for an unknown one."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return Draft202012Validator
    if not isinstance(schema["$schema"], str):
        return None
    return validator_for(schema, default=None)


def _schema_problem(schema) -> str | None:
    draft = _draft(schema)
    if draft is None:
        return f"unknown $schema {schema['$schema']!r}: use a JSON Schema draft's URI"
    try:
        draft.check_schema(schema, format_checker=None)
        if not isinstance(schema, dict):
            return None
        return _references_problem(schema, draft) or _engine_problem(schema, draft)
    except SchemaError as exc:
        return f"not a valid JSON Schema: at {exc.json_path}: {exc.message}"
    except RecursionError:
        return "not a valid JSON Schema: nested too deeply"


def _resources(schema: dict, draft):
    """(subschema, its resolver) for schema and every subschema under it, as the draft reads
    them (`properties`, `items`, `$defs`, ...; a nested `$id` changes the base of its refs)."""
    specification = specification_with(draft.META_SCHEMA.get("$schema", ""), default=DRAFT202012)
    root = specification.create_resource(schema)
    resolver = DRAFTS.combine(_NO_REMOTE).resolver_with_root(root)  # as the library resolves
    stack = [(root, resolver)]
    while stack:
        resource, resolver = stack.pop()
        yield resource.contents, resolver
        for sub in resource.subresources():
            stack.append((sub, resolver.in_subresource(sub)))


def _references_problem(schema: dict, draft) -> str | None:
    for contents, resolver in _resources(schema, draft):
        ref = contents.get("$ref") if isinstance(contents, dict) else None
        if not isinstance(ref, str):
            continue
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return (
                f"$ref {ref!r} does not resolve: it must point into the schema itself "
                "(such as #/$defs/Name); nothing is fetched"
            )
    return None


def _engine_problem(schema: dict, draft) -> str | None:
    used = set()
    for contents, _ in _resources(schema, draft):
        if isinstance(contents, dict):
            used.update(contents)
    if "patternProperties" in used and used.intersection(_UNEVALUATED):
        return (
            "patternProperties together with unevaluatedProperties is not supported (their "
            "patterns could not be stopped at the time limit)"
        )
    return None


def schema_patterns(schema) -> Iterator:
    """Every pattern in a valid schema that schema_errors may run (`pattern` values and
    `patternProperties` names; intake compiles them)."""
    if not isinstance(schema, dict):
        return
    draft = _draft(schema) or Draft202012Validator
    for contents, _ in _resources(schema, draft):
        if not isinstance(contents, dict):
            continue
        if "pattern" in contents:
            yield contents["pattern"]
        if isinstance(contents.get("patternProperties"), dict):
            yield from contents["patternProperties"]


def _search(pattern: str, text: str) -> bool:
    return search_pattern(pattern, text, _DEADLINE.get(math.inf))


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, extra, instance, schema):
    """The library's keyword, with the keys that patternProperties covers found by this
    engine (its own helper joins the patterns into one Python re search)."""
    if not validator.is_type(instance, "object"):
        return
    patterns = schema.get("patternProperties") or {}
    properties = schema.get("properties", {})
    extras = [
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    ]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif extra is False and extras:
        shown = ", ".join(repr(key) for key in sorted(extras))
        if patterns:
            joined = ", ".join(repr(p) for p in sorted(patterns))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{shown} {verb} not match any of the regexes: {joined}")
        else:
            yield ValidationError(f"Additional properties are not allowed ({shown} unexpected)")


def _timed(keyword):
    """A keyword that first checks the budget: an allOf of many schemas over a big output
    must stop at the limit, not after walking it all."""

    def check(validator, value, instance, schema):
        if time.monotonic() >= _DEADLINE.get(math.inf):
            raise BudgetExceeded
        errors = keyword(validator, value, instance, schema)
        if errors is not None:
            yield from errors

    return check


_OWN_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _checking(draft):
    """The draft's validator with this module's pattern keywords, every keyword timed."""
    keywords = {**draft.VALIDATORS, **_OWN_KEYWORDS}
    return extend(draft, {name: _timed(fn) for name, fn in keywords.items()})


def _validator(schema):
    """The checking validator of schema, remembered per schema text like schema_problem (in
    the schema's own key order: the errors come in it)."""
    try:
        text = json.dumps(schema)
    except (TypeError, ValueError, RecursionError):
        return _built(schema)
    return _remembered_validator(text)


@functools.lru_cache(maxsize=256)
def _remembered_validator(text: str):
    return _built(json.loads(text))


def _built(schema):
    return _checking(_draft(schema) or Draft202012Validator)(schema, registry=_NO_REMOTE)


def schema_errors(value, schema, deadline: float = math.inf) -> list[str]:
    """The ways value breaks schema (one that schema_problem accepts), each as "<JSON path>:
    <the library's message>". Raises PatternError for a pattern that cannot run and
    BudgetExceeded past deadline, rather than count either as a mismatch (under "not" that
    would pass the check), and CheckError for a schema that cannot be run on this value."""
    if time.monotonic() >= deadline:
        raise BudgetExceeded
    validator = _validator(schema)
    token = _DEADLINE.set(deadline)
    try:
        return [
            f"{error.json_path}: {_short(error.message)}" for error in validator.iter_errors(value)
        ]
    except Unresolvable as exc:
        raise CheckError(f"check could not run: $ref does not resolve: {exc}") from None
    except RecursionError:
        raise CheckError("check could not run: the schema refers to itself without end") from None
    finally:
        _DEADLINE.reset(token)


def _short(message: str, limit: int = 200) -> str:
    """A message names the value it judged, which may be a whole output."""
    return message if len(message) <= limit else message[: limit - 1] + "…"
