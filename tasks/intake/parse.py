"""Test-set intake: JSONL or CSV bytes -> validated task dicts, all-or-nothing.

`parse_testset` never raises on bad input: it returns every problem it found as
"line L, field F: message" (up to MAX_ERRORS) next to the tasks it could read. A caller
imports only when `errors` is empty. The traps handled here (docs/testsets.md):
size first, BOM, invalid UTF-8 by byte offset, strict CSV with a field-size limit,
JSONL split on "\\n" only, NaN/Infinity, duplicate keys, huge integers and deep nesting.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from evalsite.text import more_problems
from evalsite.uploads import DuplicateKey, RowError, clean_id, decode_utf8, strict_json
from evalsite.uploads import kind as _kind
from tasks.images.bundle import BundleProblem, bundle_read, is_zip
from tasks.images.parts import ImageSource, image_source_reset, image_source_set
from tasks.intake.checks import checks_value
from tasks.intake.conversation import (
    CONVERSATION_FIELDS,
    MAX_TEXT_CHARS,
    conversation_fields,
    messages_value,
    turn_checks_value,
)

# Limits (documented in docs/testsets.md; the checks' and conversations' in their modules).
MAX_ERRORS = 200
MAX_TASKS = 100_000
MAX_ID_CHARS = 100
MAX_CATEGORY_CHARS = 100
MAX_METADATA_CHARS = 10_000  # metadata as compact JSON
CSV_FIELD_LIMIT = 131_072  # characters per CSV cell
MAX_NAME_CHARS = 100

TIERS = ("base", "advanced", "boundary")
CASE_TYPES = ("typical", "edge", "failure")
# Always in a normalized task; the conversation fields only when they differ from their
# defaults (tasks/intake/conversation.py), so older test sets keep their checksums.
BASE_FIELDS = (
    "external_id",
    "category",
    "tier",
    "case_type",
    "prompt",
    "messages",
    "reference",
    "checks",
    "metadata",
)
FIELDS = (*BASE_FIELDS, *CONVERSATION_FIELDS)
REQUIRED = ("external_id", "category", "tier", "case_type")
JSON_COLUMNS = ("messages", "checks", "metadata", "tools", "tool_mocks", "turns", "turn_checks")
INT_COLUMNS = ("max_steps",)  # a CSV cell of digits is read as the number
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def testset_name_problem(name: str) -> str | None:
    """Why `name` is not a usable test-set name (it appears in URLs and campaign files), or None."""
    if not name:
        return "a name is required"
    if len(name) > MAX_NAME_CHARS:
        return f"the name is {len(name)} characters long; the limit is {MAX_NAME_CHARS}"
    if not NAME_RE.match(name):
        return "use letters, digits, '.', '_' and '-' only, starting with a letter or digit"
    return None


@dataclass
class ParsedTestSet:
    format: str
    tasks: list[dict] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # the file line each task starts on
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    # The checked images the tasks' content parts name ({neutral name: CheckedImage}),
    # written only when the whole test set imports.
    images: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    @property
    def more_errors(self) -> int:
        return self.error_count - len(self.errors)

    def add(self, line: int, field_name: str, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(f"line {line}, field {field_name}: {message}")

    def error_report(self) -> list[str]:
        """Every listed problem, plus a closing line saying how many were left out."""
        if self.more_errors:
            return [*self.errors, more_problems(self.more_errors)]
        return list(self.errors)

    @property
    def checksum(self) -> str:
        return testset_checksum(self.tasks)

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {"category": {}, "tier": {}, "case_type": {}}
        for task in self.tasks:
            for key, bucket in out.items():
                bucket[task[key]] = bucket.get(task[key], 0) + 1
        return out


def testset_checksum(tasks: list[dict]) -> str:
    """SHA-256 of the canonical JSON of the normalized task list (order matters)."""
    canonical = json.dumps(tasks, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# --- decoding -----------------------------------------------------------------------------


def _decode(data: bytes, result: ParsedTestSet) -> str | None:
    text, errors = decode_utf8(data)
    for number, message in errors:
        result.add(number, "(encoding)", message)
    return text


# --- row validation -----------------------------------------------------------------------


def _text(value: Any, name: str, *, limit: int, required: bool = False, strip: bool = False) -> str:
    if value is None or value == "":
        if required:
            raise RowError(name, "is required")
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RowError(name, f"must be a string, not {_kind(value)}")
    text = str(value)
    if strip:
        text = text.strip()
        if required and not text:
            raise RowError(name, "is required")
    if len(text) > limit:
        raise RowError(name, f"is {len(text):,} characters long; the limit is {limit:,}")
    return text


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    text = _text(value, name, limit=50, required=True, strip=True)
    if text not in allowed:
        raise RowError(name, f"unknown value {text!r}; use one of {', '.join(allowed)}")
    return text


def _metadata(value: Any) -> dict:
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise RowError("metadata", f"must be an object, not {_kind(value)}")
    size = len(json.dumps(value, ensure_ascii=False))
    if size > MAX_METADATA_CHARS:
        raise RowError(
            "metadata", f"is {size:,} characters long as JSON; the limit is {MAX_METADATA_CHARS:,}"
        )
    return value


class _RowCheck:
    """A row's task as its fields validate, and the problems found so far."""

    def __init__(self, row: dict) -> None:
        self.problems: list[RowError] = [
            RowError(k, "unknown field; free-form data belongs under metadata")
            for k in row
            if k not in FIELDS
        ]
        self.task: dict[str, Any] = {"prompt": "", "messages": None}

    def check(self, name: str, fn, *args, **kwargs) -> None:
        """Store field `name` as `fn` reads it, or its problem."""
        try:
            self.task[name] = fn(*args, **kwargs)
        except RowError as exc:
            self.problems.append(exc)


def validate_row(row: dict) -> tuple[dict, list[RowError]]:
    """One raw row (JSON object, or CSV with its JSON columns decoded) -> (task, problems).

    Every field is checked, so one pass reports all of a row's problems. With problems, the
    task is partial (only the fields that validated).
    """
    rc = _RowCheck(row)
    _check_labels(rc, row)
    conversation = conversation_fields(row)
    _check_statement(rc, row)
    before = len(rc.problems)
    rc.check("reference", _text, row.get("reference"), "reference", limit=MAX_TEXT_CHARS)
    # None: the reference has a problem of its own, so a reference check is not judged on it.
    reference = rc.task.get("reference", "") if len(rc.problems) == before else None
    rc.check(
        "checks", checks_value, row.get("checks"), context=conversation.context(reference=reference)
    )
    rc.check("metadata", _metadata, row.get("metadata"))
    rc.problems.extend(conversation.problems)
    turn_checks = row.get("turn_checks")
    rc.check(
        "turn_checks", turn_checks_value, turn_checks, fields=conversation, reference=reference
    )
    task, problems = rc.task, rc.problems
    if problems:
        return task, problems  # partial: the fields that did validate
    extra = conversation.values
    if task["turn_checks"]:
        extra = {**extra, "turn_checks": task["turn_checks"]}
    return {**{k: task[k] for k in BASE_FIELDS}, **extra}, []


def _check_labels(rc: _RowCheck, row: dict) -> None:
    """The task's id, category, tier and case type."""
    external_id = row.get("external_id")
    if isinstance(external_id, str):  # stored cleaned, so duplicates are found as people see them
        external_id = clean_id(external_id)
    rc.check(
        "external_id",
        _text,
        external_id,
        "external_id",
        limit=MAX_ID_CHARS,
        required=True,
        strip=True,
    )
    rc.check(
        "category",
        _text,
        row.get("category"),
        "category",
        limit=MAX_CATEGORY_CHARS,
        required=True,
        strip=True,
    )
    rc.check("tier", _choice, row.get("tier"), "tier", TIERS)
    rc.check("case_type", _choice, row.get("case_type"), "case_type", CASE_TYPES)


def _check_statement(rc: _RowCheck, row: dict) -> None:
    """What the task asks: a prompt, or messages, or turns (after an optional messages
    prefix), never a prompt with either."""
    prompt, messages = row.get("prompt"), row.get("messages")
    has_prompt = prompt is not None and prompt != ""
    has_messages = messages is not None and messages != ""
    has_turns = row.get("turns") not in (None, "")
    if has_prompt and has_messages:
        rc.problems.append(RowError("prompt", "give either prompt or messages, not both"))
    elif has_prompt and has_turns:
        rc.problems.append(
            RowError(
                "prompt", "give turns (after an optional messages prefix) or a prompt, not both"
            )
        )
    elif has_prompt:
        rc.check("prompt", _text, prompt, "prompt", limit=MAX_TEXT_CHARS)
        task = rc.task
        if isinstance(task["prompt"], str) and task["prompt"] and not task["prompt"].strip():
            rc.problems.append(RowError("prompt", "is blank"))
    elif has_messages:
        rc.check("messages", messages_value, messages, prefix=has_turns)
    elif not has_turns:
        rc.problems.append(RowError("prompt", "is required (or give a messages array, or turns)"))


# --- formats ------------------------------------------------------------------------------


def _accept(result: ParsedTestSet, seen: dict[str, int], line: int, row: dict) -> None:
    task, problems = validate_row(row)
    for problem in problems:
        result.add(line, problem.field, problem.message)
    # Duplicates are checked even on an otherwise invalid row, so one pass reports both.
    external_id = task.get("external_id")
    if external_id:
        first = seen.get(external_id)
        if first is not None:
            result.add(
                line, "external_id", f"duplicate {external_id!r} (first used on line {first})"
            )
            return
        seen[external_id] = line
    if problems:
        return
    if len(result.tasks) == MAX_TASKS:
        result.add(line, "(file)", f"more than {MAX_TASKS:,} tasks; split the test set")
        return
    result.tasks.append(task)
    result.lines.append(line)


def _parse_jsonl(text: str, result: ParsedTestSet) -> None:
    seen: dict[str, int] = {}
    # Split on "\n" only: str.splitlines() would also split on U+2028/U+2029/U+0085 inside strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
            continue
        try:
            row = strict_json(line)
        except DuplicateKey as exc:
            rule = (
                "field may appear once per line" if exc.path == exc.key else "key may appear once"
            )
            result.add(number, exc.path, f"duplicate key (each {rule})")
            continue
        except ValueError as exc:
            result.add(number, "(json)", str(exc))
            continue
        if not isinstance(row, dict):
            hint = (
                " (JSONL wants one object per line, not one array)" if isinstance(row, list) else ""
            )
            result.add(number, "(json)", f"each line must be a JSON object, not {_kind(row)}{hint}")
            continue
        _accept(result, seen, number, row)


def _parse_csv(text: str, result: ParsedTestSet) -> None:
    # newline="" semantics: the csv module handles \r\n and newlines inside quoted cells itself.
    # The limit is process-wide state; setting (never restoring) the same value is thread-safe.
    csv.field_size_limit(CSV_FIELD_LIMIT)
    _read_csv(csv.reader(io.StringIO(text, newline=""), strict=True), result)


def _read_csv(reader, result: ParsedTestSet) -> None:
    names = _csv_header(reader, result)
    if names is None:
        return
    width = len(names)
    seen_ids: dict[str, int] = {}
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            result.add(start, "(row)", _csv_error_message(exc))
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue  # blank line
        if len(cells) != width:
            result.add(line, "(row)", f"has {len(cells)} cells; the header has {width}")
            continue
        row = _csv_row(names, cells, line, result)
        if row is not None:
            _accept(result, seen_ids, line, row)


def _csv_header(reader, result: ParsedTestSet) -> list[str] | None:
    """The header's column names; None when there is none, or it has a problem (reported)."""
    try:
        header = next(reader)
    except StopIteration:
        return None
    except csv.Error as exc:
        result.add(1, "(header)", f"unreadable CSV header: {exc}")
        return None
    names = [h.strip() for h in header]
    if len(names) == 1:  # one column: maybe a spreadsheet's semicolon or tab separated export
        for separator, word in ((";", "semicolons"), ("\t", "tabs")):
            if set(n.strip() for n in names[0].split(separator)) & set(REQUIRED):
                result.add(
                    1,
                    "(header)",
                    f"the columns are separated by {word}; save the file as comma-separated "
                    "CSV (in a spreadsheet: CSV, comma delimited)",
                )
                return None
    return None if _header_problems(names, result) else names


def _header_problems(names: list[str], result: ParsedTestSet) -> bool:
    """Report empty, duplicate, unknown and missing columns; True when there was any."""
    problems = False
    seen_names: set[str] = set()
    for position, name in enumerate(names, start=1):
        if not name:
            result.add(1, f"(column {position})", "empty column name in the header")
            problems = True
        elif name in seen_names:
            result.add(1, name, "duplicate column in the header")
            problems = True
        elif name not in FIELDS:
            result.add(1, name, f"unknown column; use {', '.join(FIELDS)}")
            problems = True
        seen_names.add(name)
    for name in REQUIRED:
        if name not in seen_names:
            result.add(1, name, "missing column in the header")
            problems = True
    if not seen_names & {"prompt", "messages", "turns"}:
        result.add(1, "prompt", "missing column in the header (or a messages or turns column)")
        problems = True
    return problems


def _csv_error_message(exc: csv.Error) -> str:
    """A row the csv module could not read, said for people."""
    message = str(exc)
    if "unexpected end of data" in message:
        message = (
            "unterminated quoted field (a missing closing quote swallows the rest of the file)"
        )
    elif "field larger than field limit" in message:
        message = f"a cell is longer than {CSV_FIELD_LIMIT:,} characters"
    return message


def _csv_row(names: list[str], cells: list[str], line: int, result: ParsedTestSet) -> dict | None:
    """One row's cells by column, JSON columns decoded; None when a JSON cell is bad (every
    bad cell of the row is reported, not only the first)."""
    row: dict[str, Any] = {}
    bad = False
    for name, cell in zip(names, cells, strict=True):
        if name in JSON_COLUMNS and cell.strip():
            try:
                row[name] = strict_json(cell)
            except ValueError as exc:
                result.add(line, name, f"JSON column: {exc}")
                bad = True
        elif name in INT_COLUMNS and re.fullmatch(r"\s*[0-9]{1,6}\s*", cell):
            row[name] = int(cell)
        elif cell != "":
            row[name] = cell
    return None if bad else row


def detect_format(filename: str, data: bytes) -> str:
    lower = filename.lower()
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return "jsonl" if head.startswith(b"{") else "csv"


def parse_testset(data: bytes, *, filename: str = "", format: str | None = None) -> ParsedTestSet:
    """Parse and validate a whole file (JSONL or CSV, or a zip of one with its images). Check
    `.ok` before importing `.tasks` and storing `.images`."""
    limit = settings.TESTSET_MAX_BYTES
    source = ImageSource()
    if is_zip(data) and len(data) <= limit:
        try:
            bundle = bundle_read(data)
        except BundleProblem as exc:
            result = ParsedTestSet(format="zip")
            result.add(1, "(zip)", str(exc))
            return result
        source = ImageSource(files=bundle.files, root=posixpath.dirname(bundle.filename))
        data, filename, format = bundle.data, bundle.filename, None
    token = image_source_set(source)
    try:
        result = _parse_file(data, filename=filename, format=format)
    finally:
        image_source_reset(token)
    if result.ok:
        result.images = dict(source.found)
    return result


def _parse_file(data: bytes, *, filename: str, format: str | None) -> ParsedTestSet:
    fmt = format or detect_format(filename, data)
    result = ParsedTestSet(format=fmt)
    if fmt not in ("jsonl", "csv"):
        result.add(1, "(file)", f"unknown format {fmt!r}; use jsonl or csv")
        return result
    limit = settings.TESTSET_MAX_BYTES
    if len(data) > limit:
        result.add(
            1, "(file)", f"the file is {size_text(len(data))}; the limit is {size_text(limit)}"
        )
        return result
    text = _decode(data, result)
    if text is None:
        return result
    if fmt == "jsonl":
        _parse_jsonl(text, result)
    else:
        _parse_csv(text, result)
    if result.ok and not result.tasks:
        result.add(1, "(file)", "the file contains no tasks")
    return result


def oversize_result(size: int, *, filename: str = "") -> ParsedTestSet | None:
    """The size verdict alone, for callers that can check before reading the bytes."""
    limit = settings.TESTSET_MAX_BYTES
    if size <= limit:
        return None
    result = ParsedTestSet(format=detect_format(filename, b""))
    result.add(1, "(file)", f"the file is {size_text(size)}; the limit is {size_text(limit)}")
    return result


MULTIPART_SLACK = 64 * 1024  # boundaries and the other form fields around the file


def oversize_request(request) -> ParsedTestSet | None:
    """Refuse a request whose declared body cannot hold an acceptable file, before reading it."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    limit = settings.TESTSET_MAX_BYTES
    if length <= limit + MULTIPART_SLACK:
        return None
    result = ParsedTestSet(format="")
    result.add(
        1,
        "(file)",
        f"the upload is {size_text(length)}; the limit for a file is {size_text(limit)}",
    )
    return result


def size_text(n: int) -> str:
    """A size in words for a message: "1.5 MiB (1,572,864 bytes)", "512 bytes"."""
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB ({n:,} bytes)"
    return f"{n:,} bytes"
