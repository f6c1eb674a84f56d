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
"""

from __future__ import annotations

import json
import re

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


def schema_errors(value, schema, path: str = "$") -> list[str]:
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
        if "pattern" in schema and not re.search(schema["pattern"], value):
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
                errors.extend(schema_errors(value[key], sub, f"{path}.{key}"))
        extra = schema.get("additionalProperties", True)
        for key in value.keys() - properties.keys():
            if extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                errors.extend(schema_errors(value[key], extra, f"{path}.{key}"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                errors.extend(schema_errors(item, schema["items"], f"{path}[{i}]"))
    for key in ("allOf",):
        for sub in schema.get(key, []):
            errors.extend(schema_errors(value, sub, path))
    if "anyOf" in schema and not any(not schema_errors(value, s, path) for s in schema["anyOf"]):
        errors.append(f"{path}: matches none of anyOf")
    if "oneOf" in schema and sum(not schema_errors(value, s, path) for s in schema["oneOf"]) != 1:
        errors.append(f"{path}: must match exactly one of oneOf")
    if "not" in schema and not schema_errors(value, schema["not"], path):
        errors.append(f"{path}: must not match the 'not' schema")
    return errors


def _json_schema(output: str, schema) -> tuple[bool, str]:
    text = output
    fenced = _FENCE.match(output)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except ValueError as exc:
        return False, f"not JSON: {exc}"
    errors = schema_errors(value, schema)
    return (not errors), "; ".join(errors[:5]) or "valid"


def _regex(output: str, patterns) -> tuple[bool, str]:
    patterns = patterns if isinstance(patterns, list) else [patterns]
    for pattern in patterns:
        try:
            if not re.search(pattern, output, re.M):
                return False, f"no match for {pattern}"
        except re.error as exc:
            return False, f"invalid pattern {pattern!r}: {exc}"
    return True, "matched"


def _max_chars(output: str, limit) -> tuple[bool, str]:
    return len(output) <= int(limit), f"{len(output)} of {limit} characters"


def _must_include(output: str, terms) -> tuple[bool, str]:
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
    for kind, spec in normalize(checks).items():
        try:
            passed, detail = RUNNERS[kind](output, spec)
        except (TypeError, ValueError) as exc:
            passed, detail = False, f"check could not run: {exc}"
        results[kind] = {"passed": passed, "detail": detail[:300]}
    if not results:
        return {}, None
    return results, all(r["passed"] for r in results.values())
