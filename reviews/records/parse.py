"""Parse: the bytes of a JSONL or CSV file into (line number, raw record dict) pairs.

Decoding and parsing problems are listed as RecordErrors; the records are checked in check.py.
"""

from __future__ import annotations

import csv
import io
import re

from evalsite.csvsafe import FORMULA_START
from evalsite.uploads import decode_utf8, strict_json
from reviews.records.format import CSV_FIELD_LIMIT, CSV_FIXED, RecordError, RecordImportError


def decode(data: bytes) -> str:
    text, errors = decode_utf8(data)
    if errors:
        raise RecordImportError(
            [RecordError(number, "(encoding)", message) for number, message in errors]
        )
    return text


def parse_jsonl(text: str, errors: list[RecordError]) -> list[tuple[int, dict]]:
    records = []
    # Split on \n only: str.splitlines() would also split on U+2028 inside JSON strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = strict_json(line)
        except ValueError as exc:
            errors.append(RecordError(number, "(json)", str(exc)))
            continue
        if not isinstance(value, dict):
            errors.append(RecordError(number, "(json)", "each line must be a JSON object"))
            continue
        records.append((number, value))
    return records


def _unescape(cell: str) -> str:
    # Undo the export's formula escaping: "'" followed by a trigger character.
    if cell.startswith("'") and cell[1:].startswith(FORMULA_START):
        return cell[1:]
    return cell


CSV_COLUMN_RE = re.compile(
    r"^(?:models\.([A-Z]+)|scores\.([A-Z]+)\.(.+)|flags\.([A-Z]+)|turn_scores\.([A-Z]+))$"
)


def _csv_value(raw: str):
    """Score cells: empty = not rated; numbers as JSON numbers so validation is shared."""
    if raw == "" or raw.lower() == "null":
        return None
    try:
        value = strict_json(raw)
    except ValueError:
        return raw  # validation reports "must be a number"
    return value if isinstance(value, int | float) and not isinstance(value, bool) else raw


def parse_csv(text: str, errors: list[RecordError]) -> list[tuple[int, dict]]:
    csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records = []
    try:
        header = next(reader, None)
    except csv.Error as exc:
        errors.append(RecordError(1, "(csv)", f"header: {exc}"))
        return []
    if not header:
        errors.append(RecordError(1, "(file)", "the file is empty"))
        return []
    header = [_unescape(h.strip()) for h in header]
    bad_header = False
    for column in header:
        if column not in CSV_FIXED and not CSV_COLUMN_RE.match(column):
            errors.append(RecordError(1, column, "unknown column"))
            bad_header = True
    for dup in {c for c in header if header.count(c) > 1}:
        errors.append(RecordError(1, dup, "duplicate column"))
        bad_header = True
    if bad_header:
        return []
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.append(RecordError(start, "(csv)", str(exc)))
            return records
        line, start = start, reader.line_num + 1
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(header):
            errors.append(
                RecordError(line, "(csv)", f"expected {len(header)} cells, found {len(row)}")
            )
            continue
        records.append(
            (line, _csv_record(dict(zip(header, (_unescape(c) for c in row), strict=True))))
        )
    return records


def _csv_record(row: dict[str, str]) -> dict:
    record: dict = {}
    for key in ("task_id", "category", "judge", "submitted_at", "comment", "source"):
        if row.get(key, "") != "" or key == "comment" and key in row:
            record[key] = row[key]
    if row.get("sample", "") != "":
        record["sample"] = _csv_value(row["sample"])
    if row.get("seconds", "") != "":
        record["seconds"] = _csv_value(row["seconds"])
    if row.get("blind", "") != "":
        record["blind"] = {"true": True, "false": False}.get(
            row["blind"].strip().lower(), row["blind"]
        )
    if row.get("preference", "") != "":
        record["preference"] = row["preference"]
    if row.get("arbitration", "") != "":
        record["arbitration"] = {"true": True, "false": False}.get(
            row["arbitration"].strip().lower(), row["arbitration"]
        )
    if row.get("candidates", "") != "":
        record["candidates"] = [c.strip() for c in row["candidates"].split(";")]
    models, scores, flags, turn_scores = {}, {}, {}, {}
    for column, raw in row.items():
        m = CSV_COLUMN_RE.match(column)
        if not m or raw == "":
            continue
        if m.group(1):
            models[m.group(1)] = raw
        elif m.group(2):
            scores.setdefault(m.group(2), {})[m.group(3)] = _csv_value(raw)
        elif m.group(4):
            flags[m.group(4)] = (
                [] if raw.strip() == "none" else [f.strip() for f in raw.split(";") if f.strip()]
            )
        elif m.group(5):
            turn_scores[m.group(5)] = [_csv_value(v.strip()) for v in raw.split(";")]
    if models:
        record["models"] = models
    record["scores"] = scores
    if turn_scores:
        record["turn_scores"] = turn_scores
    if flags:
        record["flags"] = flags
    return record


def detect_format(filename: str, data: bytes) -> str:
    lower = (filename or "").lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if lower.endswith(".csv"):
        return "csv"
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    return "jsonl" if head == b"{" else "csv"
