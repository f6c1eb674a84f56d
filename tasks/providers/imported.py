"""`imported` contenders: outputs produced elsewhere and uploaded as JSONL.

One object per line: {"task_id": "T-1", "sample": 0, "output": "..."} plus optional
"input_tokens", "output_tokens", "latency_ms", "ttft_ms", "cost", "finish_reason" and
"contender" (when given, it must name the contender being imported).
Parsing is strict and all-or-nothing: every problem is reported as "line L, field F: message".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from evalsite.text import more_problems
from evalsite.uploads import clean_id, decode_utf8, strict_json

from .base import PermanentError

MAX_ERRORS = 50
INT_FIELDS = ("input_tokens", "output_tokens", "latency_ms", "ttft_ms")
# What the Generation columns hold: PositiveIntegerField, DecimalField(14, 8).
MAX_INT = 2**31 - 1
MAX_COST = Decimal("999999")
KNOWN_FIELDS = {
    "contender",
    "task_id",
    "external_id",
    "sample",
    "sample_index",
    "output",
    "text",
    "cost",
    "finish_reason",
    "model",
    *INT_FIELDS,
}


@dataclass
class ImportedOutput:
    line: int
    task_id: str
    sample: int
    output: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: int | None = None
    ttft_ms: int | None = None
    cost: Decimal | None = None
    finish_reason: str = ""
    contender: str = ""


class ImportErrors(Exception):
    """`errors` as shown (capped, ending in "... and N more problems"); `count` counts all."""

    def __init__(self, errors: list[str], count: int | None = None):
        super().__init__("; ".join(errors))
        self.errors = errors
        self.count = len(errors) if count is None else count


def capped(errors: list[str]) -> tuple[list[str], int]:
    """(the first MAX_ERRORS problems and how many more there are, the count of all)."""
    if len(errors) <= MAX_ERRORS:
        return errors, len(errors)
    return [*errors[:MAX_ERRORS], more_problems(len(errors) - MAX_ERRORS)], len(errors)


def generate(contender, messages):
    raise PermanentError("imported contenders are never called: upload their outputs instead")


def parse_outputs_collect(
    raw: bytes,
    *,
    max_bytes: int = 100 * 1024 * 1024,
    check: Callable[[int, dict], list[str]] | None = None,
):
    """(rows, errors): the valid rows and every problem found, in line order (`capped` cuts
    the list to show).

    `check(line, fields)` adds a caller's own problems for a line (e.g. against a campaign)
    even when the line has field errors: `fields` holds only the task_id, sample, output and
    contender values that are valid, so a check never reports a knock-on of a field error.
    A duplicate line passes no task_id or sample: they were checked on the line it repeats.
    """
    if len(raw) > max_bytes:
        return [], [f"file is {len(raw)} bytes, larger than the limit of {max_bytes}"]
    text, bad_bytes = decode_utf8(raw)
    if bad_bytes:
        return [], [f"line {number}, field (encoding): {message}" for number, message in bad_bytes]
    errors: list[str] = []
    rows: list[ImportedOutput] = []
    seen: dict[tuple[str, int], int] = {}
    # Split on \n only: str.splitlines() would also split on U+2028 inside a JSON string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = strict_json(line)
        except (ValueError, RecursionError) as exc:
            errors.append(f"line {number}, field (json): {exc}")
            continue
        if not isinstance(data, dict):
            errors.append(f"line {number}, field (json): each line must be a JSON object")
            continue
        row_errors = []
        valid = {}
        unknown = sorted(set(data) - KNOWN_FIELDS)
        for key in unknown:
            row_errors.append(f"line {number}, field {key}: unknown field")
        task_id = data.get("task_id", data.get("external_id"))
        if not isinstance(task_id, str) or not task_id.strip():
            row_errors.append(f"line {number}, field task_id: required, a non-empty string")
        else:
            # as test-set intake stores ids: NFC, invisible characters dropped
            task_id = valid["task_id"] = clean_id(task_id)
        sample = data.get("sample", data.get("sample_index", 0))
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
            row_errors.append(f"line {number}, field sample: must be an integer >= 0")
        else:
            valid["sample"] = sample
        output = data.get("output", data.get("text"))
        if not isinstance(output, str):
            row_errors.append(f"line {number}, field output: required, a string")
        else:
            valid["output"] = output
        values = {}
        for field in INT_FIELDS:
            value = data.get(field)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT
            ):
                row_errors.append(
                    f"line {number}, field {field}: must be an integer from 0 to {MAX_INT}"
                )
            values[field] = value
        cost = data.get("cost")
        if cost is not None:
            try:
                if isinstance(cost, bool):
                    raise InvalidOperation
                cost = Decimal(str(cost))
                if not 0 <= cost <= MAX_COST:
                    raise InvalidOperation
            except InvalidOperation:
                row_errors.append(
                    f"line {number}, field cost: must be a number from 0 to {MAX_COST}"
                )
        contender = data.get("contender") or ""
        if not isinstance(contender, str):
            row_errors.append(f"line {number}, field contender: must be a string")
        elif contender:
            valid["contender"] = contender
        finish_reason = data.get("finish_reason") or ""
        if not isinstance(finish_reason, str):
            row_errors.append(f"line {number}, field finish_reason: must be a string")
        if "task_id" in valid and "sample" in valid:
            key = (task_id, sample)
            if key in seen:
                row_errors.append(
                    f"line {number}, field task_id: duplicate of line {seen[key]} "
                    f"({task_id}, sample {sample})"
                )
                del valid["task_id"], valid["sample"]
            else:
                seen[key] = number
        if check is not None:
            row_errors.extend(check(number, valid))
        if row_errors:
            errors.extend(row_errors)
            continue
        rows.append(
            ImportedOutput(
                line=number,
                task_id=task_id,
                sample=sample,
                output=output,
                cost=cost,
                finish_reason=finish_reason[:50],
                **values,
            )
        )
    if not rows and not errors:
        errors.append("line 1, field (file): the file holds no outputs")
    return rows, errors
