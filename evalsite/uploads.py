"""Strict decoding shared by every upload (test sets, campaign files, outputs, review records).

Every upload follows the same rules: UTF-8 with or without BOM, invalid bytes reported with their offset,
JSON without NaN/Infinity or duplicate keys, and errors worded for the person who uploaded.
"""

import json
import math
import re
import sys
import unicodedata
from collections.abc import Hashable
from typing import Any

import yaml


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON (NaN and Infinity are not allowed)")


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(f"duplicate key {key!r}")
        self.key = key
        self.path = key  # where it is: "metadata.source" for a key inside "metadata" (strict_json)


class _Pairs(list):
    """An object's (key, value) pairs as decoded, duplicates kept."""


def _duplicate_path(text: str) -> str | None:
    """The path of the first repeated key in JSON `text` ("metadata.source", "turns[2].role"):
    the decoder's hook sees one object at a time, innermost first, and cannot tell where it is."""

    def walk(node, path: str) -> str | None:
        children = []
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, child in node:
                here = f"{path}.{key}" if path else key
                if key in seen:
                    return here
                seen.add(key)
                children.append((child, here))
        elif isinstance(node, list):
            children = [(child, f"{path}[{i}]") for i, child in enumerate(node)]
        for child, here in children:
            if found := walk(child, here):
                return found
        return None

    return walk(json.loads(text, object_pairs_hook=_Pairs), "")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return result


def _finite_float(text: str) -> float:
    value = float(text)
    # 1e999 parses to inf without ever reaching parse_constant; PostgreSQL's jsonb refuses it.
    if value in (math.inf, -math.inf):
        raise ValueError(f"the number {text[:30]} is out of range")
    return value


def _float_range_int(text: str) -> int:
    value = int(text)
    # 10**400 is valid JSON, but every figure made from it (float(), math.isfinite) raises.
    if abs(value) > sys.float_info.max:
        raise ValueError(f"the number {text[:30]}... is out of range")
    return value


_decoder = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=_finite_float,
    parse_int=_float_range_int,
    object_pairs_hook=_no_duplicate_keys,
)


# A "\u0000" or "\ud800" escape may decode to a character no database stores: PostgreSQL
# refuses NUL in text, and a lone surrogate cannot be encoded as UTF-8 at all.
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _unstorable(found: str) -> str:
    if found == "\x00":
        return "a string contains \\u0000 (a NUL character), which cannot be stored"
    return (
        f"a string contains an unpaired surrogate (\\u{ord(found):04x}); a character beyond"
        " U+FFFF is written as a pair, e.g. \\ud83d\\ude00"
    )


def _check_strings(value: Any) -> None:
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if found := _UNSTORABLE.search(value):
                raise ValueError(_unstorable(found.group()))
        elif isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def strict_json(text: str) -> Any:
    """json.loads that rejects NaN/Infinity, duplicate keys and strings no database can store
    (NUL, unpaired surrogates); errors are ValueError."""
    try:
        value = _decoder.decode(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            raise ValueError(
                f"unexpected text after the JSON value at column {exc.colno}"
            ) from None
        # "Invalid control character at" already ends in "at".
        message = exc.msg.removesuffix(" at")
        raise ValueError(f"not valid JSON: {message} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError("JSON is nested too deeply") from None
    except DuplicateKey as exc:
        exc.path = _duplicate_path(text) or exc.key
        raise
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise ValueError("a number has too many digits") from None
        raise  # NaN/Infinity and duplicate keys, already worded for the user
    if _UNSTORABLE_ESCAPE.search(text):  # rare: walk the value only when an escape may be one
        _check_strings(value)
    return value


def clean_id(text: str) -> str:
    """An identifier as it is stored and compared: without invisible format characters (a
    byte-order mark, zero-width spaces, direction marks: category Cf), NFC-normalized and
    stripped, so two ids that look the same are the same id."""
    visible = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return unicodedata.normalize("NFC", visible).strip()


def decode_utf8(data: bytes) -> tuple[str | None, list[tuple[int, str]]]:
    """(text, []) for valid UTF-8 (a BOM is dropped), else (None, [(line, message), ...]).
    A NUL byte is refused too: PostgreSQL cannot store it, and in a text file it means UTF-16
    or binary data."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None, [(1, "the file is UTF-16; save it as UTF-8 (with or without a BOM)")]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text:
        return text, []
    # Error path only: find the first bad byte on each line and report its absolute offset.
    errors, offset = [], 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            # utf-8-sig reports positions after a stripped BOM.
            bom = 3 if number == 1 and raw.startswith(b"\xef\xbb\xbf") else 0
            position = offset + exc.start + bom
            bad = data[position : position + 1].hex()
            errors.append((number, f"invalid UTF-8 (byte 0x{bad} at byte offset {position})"))
        else:
            if (nul := raw.find(b"\x00")) >= 0:
                errors.append(
                    (
                        number,
                        f"a NUL byte (0x00 at byte offset {offset + nul}): not UTF-8 text"
                        " (UTF-16? save it as UTF-8)",
                    )
                )
        offset += len(raw) + 1
    return None, errors


def yaml_problem(exc: Exception) -> str:
    """A YAML parse error in one line a user can act on ("line 2, column 9: mapping values
    are not allowed here"), not PyYAML's multi-line report with its caret drawing."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


class _StrictYamlLoader(yaml.SafeLoader):
    """yaml.safe_load's loader, refusing a key given twice in one mapping (as strict_json
    does): PyYAML keeps the last silently, so `min: 1, min: 2` would mean 2."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # "<<: *base": its keys may be overridden, as YAML allows
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                break  # SafeLoader's own check reports an unhashable key
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# Nodes a YAML document may stand for once its aliases are expanded (a campaign definition has
# a few hundred): "billion laughs" nests aliases to a billion from a few lines, and a recursive
# alias (`redact: &r [*r]`) never ends; both hung the walk over the value and create_campaign.
MAX_YAML_NODES = 100_000


def _yaml_nodes(root: yaml.Node) -> int:
    """How many nodes root stands for with every alias expanded, counted once per node (so a
    bomb costs its size in lines, not in expansions); YAMLError when an alias contains itself
    or past MAX_YAML_NODES."""
    sizes: dict[int, int] = {}
    entered: set[int] = set()  # the nodes being counted: the current one's ancestors
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = node.value if isinstance(node, yaml.CollectionNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in children for part in pair]
        if done:
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[id(node)] > MAX_YAML_NODES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"with its aliases expanded the document has over {MAX_YAML_NODES:,} "
                    "values; write it out or split it",
                    node.start_mark,
                )
            entered.discard(id(node))
        elif id(node) in entered:
            raise yaml.composer.ComposerError(
                None, None, "an alias refers to a value that contains it", node.start_mark
            )
        elif id(node) not in sizes:
            entered.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return sizes[id(root)]


def strict_yaml(text: str) -> Any:
    """yaml.safe_load that refuses duplicate keys, strings no database can store, alias bombs
    and recursive aliases; errors are yaml.YAMLError."""
    loader = _StrictYamlLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _yaml_nodes(node)
        value = loader.construct_document(node)
    except RecursionError:
        raise yaml.YAMLError("the YAML is nested too deeply") from None
    finally:
        loader.dispose()
    try:
        _check_strings(value)  # "\0" and "\ud800" escapes exist in YAML too
    except ValueError as exc:
        raise yaml.YAMLError(str(exc)) from None
    return value


class RowError(ValueError):
    """A problem with one field of one uploaded row, reported as "line L, field F: message"."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def kind(value: Any) -> str:
    """A value's JSON type in words, for a message: "an object", "a string", "null"..."""
    if value is None:
        return "null"
    return {
        dict: "an object",
        list: "an array",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
    }.get(type(value), type(value).__name__)
