"""Review records: export and import in the team's record format (SPEC "Review record").

One record = one judge's review of one item. Candidates are labelled A, B, ... in the order
that judge was shown them (A = presented_order[0]), so position bias survives a round trip.

Export streams: a server-side cursor over the reviews plus one batched lookup of scores and
outputs per chunk, so memory does not depend on the campaign's size. Exports are blind
(no `models` key / columns) unless `unblind=True`, which only leads may ask for.

Import is all-or-nothing: every record is parsed and checked (against the campaign's test
set, contenders and rubric, and against reviews already stored) and nothing is kept if any
has a problem; all problems come back in one run as "line L, field F: message". Importing
the same file twice changes nothing: a judge's review of an item that is already stored and
identical is skipped, a different one is an error. Each item that received reviews is
settled by the dispute rules.

Resolved arbitrations are exported after the reviews as records with `"arbitration": true`
(judge = the arbiter, comment = the note) and replayed on import through the arbitration
module's own `resolution_build`, so an export imported into an empty campaign reproduces the
same final outcomes and report.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import secrets
import string
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from evalsite.csvsafe import FORMULA_START, csv_lines
from evalsite.text import more_problems
from evalsite.uploads import decode_utf8, strict_json
from tasks.models import Campaign, Generation

from .disputes import not_whole_error
from .models import (
    COMMENT_MAX_CHARS,
    FLAGS,
    Arbitration,
    ItemOutput,
    Preference,
    Review,
    ReviewItem,
    Score,
)
from .readiness import item_rotations
from .readiness import pair_key as readiness_pair_key

MAX_SECONDS = 2**31 - 1  # what Review.seconds_spent holds on every database

JSONL_KEYS = (
    "task_id",
    "category",
    "candidates",
    "scores",
    "judge",
    "blind",
    "models",
    "preference",
    "sample",
    "flags",
    "comment",
    "submitted_at",
    "seconds",
    "arbitration",
)
REQUIRED_KEYS = ("task_id", "candidates", "judge", "models")
MAX_ERRORS = 200
EXPORT_CHUNK = 2000
CSV_FIELD_LIMIT = 131072
USERNAME_RE = re.compile(r"^[\w.@+-]{1,150}$")
FORMATS = ("jsonl", "csv")


def max_import_bytes() -> int:
    return settings.REVIEWS_IMPORT_MAX_BYTES


def too_big_problem() -> str:
    """What a file over the limit is told: by the import, the dashboard form and, before the
    upload, the browser."""
    return f"the file is larger than {max_import_bytes():,} bytes (REVIEWS_IMPORT_MAX_BYTES)"


def labels(n: int) -> list[str]:
    """A, B, ..., Z, AA, AB, ... (more than 26 candidates is unusual but not an error)."""
    out = []
    for i in range(n):
        name, i = "", i + 1
        while i:
            i, rem = divmod(i - 1, 26)
            name = string.ascii_uppercase[rem] + name
        out.append(name)
    return out


def _number(value: float | None):
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return int(value) if value.is_integer() else value


def _iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------
# Export


def _dimension_keys(campaign: Campaign) -> list[str]:
    return [d["key"] for d in campaign.rubric]


def records_iter(
    *, campaign: Campaign, unblind: bool = False, chunk_size: int = EXPORT_CHUNK
) -> Iterator[dict]:
    """Every review of the campaign as a record dict, streamed in a stable order."""
    dims = _dimension_keys(campaign)
    dim_rank = {d: i for i, d in enumerate(dims)}
    contender_names = dict(campaign.contenders.values_list("id", "name"))
    rows = (
        Review.objects.filter(item__campaign=campaign)
        .order_by(
            "item__task__position",
            "item__sample_index",
            "item__pair_key",
            "item_id",
            "submitted_at",
            "id",
        )
        .values_list(
            "id",
            "item_id",
            "item__task__external_id",
            "item__task__category",
            "item__sample_index",
            "reviewer__username",
            "preference",
            "preferred_output_id",
            "flags",
            "comment",
            "submitted_at",
            "presented_order",
            "seconds_spent",
        )
        .iterator(chunk_size=chunk_size)
    )
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= chunk_size:
            yield from _records_for_batch(batch, dim_rank, contender_names, unblind)
            batch = []
    if batch:
        yield from _records_for_batch(batch, dim_rank, contender_names, unblind)
    yield from _arbitration_records(campaign, unblind, dim_rank, contender_names, chunk_size)


def _arbitration_records(
    campaign, unblind, dim_rank, contender_names, chunk_size
) -> Iterator[dict]:
    """Resolved arbitrations, after all reviews: the arbiter's decisions, so a re-import
    reproduces the final outcomes too. Marked `"arbitration": true`; `comment` is the note."""
    rows = (
        Arbitration.objects.filter(item__campaign=campaign, state=Arbitration.State.RESOLVED)
        .order_by("item__task__position", "item__sample_index", "item__pair_key", "item_id")
        .values_list(
            "item_id",
            "item__task__external_id",
            "item__task__category",
            "item__sample_index",
            "arbiter__username",
            "order",
            "final_values",
            "note",
            "resolved_at",
        )
        .iterator(chunk_size=chunk_size)
    )
    batch: list[tuple] = []

    def flush(batch):
        output_contender = dict(
            ItemOutput.objects.filter(item_id__in={r[0] for r in batch}).values_list(
                "id", "generation__contender_id"
            )
        )
        for _item, task_id, category, sample, arbiter, order, values, note, resolved_at in batch:
            order = [int(o) for o in order or []]
            names = labels(len(order))
            label_of = {str(o): name for o, name in zip(order, names, strict=True)}
            values = values or {}
            record = {
                "task_id": task_id,
                "category": category,
                "candidates": names,
                "scores": {
                    label_of[o]: {
                        d: _number(v)
                        for d, v in sorted(
                            dims.items(), key=lambda kv: (dim_rank.get(kv[0], 1e9), kv[0])
                        )
                    }
                    for o, dims in sorted(
                        (values.get("scores") or {}).items(), key=lambda kv: label_of.get(kv[0], "")
                    )
                    if o in label_of
                },
                "judge": arbiter or "",
                "blind": True,
            }
            if unblind:
                record["models"] = {
                    label_of[str(o)]: contender_names.get(output_contender.get(o), "")
                    for o in order
                }
            preference = values.get("preference")
            record["preference"] = label_of.get(preference, preference) if preference else None
            record["sample"] = sample
            record["flags"] = {
                label_of[o]: list(fl)
                for o, fl in sorted(
                    (values.get("flags") or {}).items(), key=lambda kv: label_of.get(kv[0], "")
                )
                if o in label_of
            }
            record["comment"] = note
            record["submitted_at"] = _iso(resolved_at)
            record["arbitration"] = True
            yield record

    for row in rows:
        batch.append(row)
        if len(batch) >= chunk_size:
            yield from flush(batch)
            batch = []
    if batch:
        yield from flush(batch)


def _records_for_batch(batch, dim_rank, contender_names, unblind) -> Iterator[dict]:
    review_ids = [r[0] for r in batch]
    item_ids = {r[1] for r in batch}
    scores: dict[int, dict[int, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for review_id, output_id, dim, value in Score.objects.filter(
        review_id__in=review_ids
    ).values_list("review_id", "output_id", "dimension", "value"):
        scores[review_id][output_id][dim] = value
    item_outputs: dict[int, list[int]] = defaultdict(list)
    output_contender: dict[int, int] = {}
    for output_id, item_id, contender_id in (
        ItemOutput.objects.filter(item_id__in=item_ids)
        .order_by("id")
        .values_list("id", "item_id", "generation__contender_id")
    ):
        item_outputs[item_id].append(output_id)
        output_contender[output_id] = contender_id
    for (
        review_id,
        item_id,
        task_id,
        category,
        sample,
        judge,
        preference,
        preferred,
        flags,
        comment,
        submitted_at,
        order,
        seconds,
    ) in batch:
        order = [int(o) for o in (order or [])] or item_outputs[item_id]
        names = labels(len(order))
        label_of = dict(zip(order, names, strict=True))
        review_scores = scores.get(review_id, {})
        record = {
            "task_id": task_id,
            "category": category,
            "candidates": names,
            "scores": {
                label_of[o]: _ordered_scores(review_scores.get(o, {}), dim_rank) for o in order
            },
            "judge": judge,
            "blind": True,
        }
        if unblind:
            record["models"] = {
                label_of[o]: contender_names.get(output_contender.get(o), "") for o in order
            }
        if preference == Preference.OUTPUT:
            record["preference"] = label_of.get(preferred)
        else:
            record["preference"] = preference or None
        record["sample"] = sample
        record["flags"] = {
            label_of[int(o)]: list(fl)
            for o, fl in sorted((flags or {}).items(), key=lambda kv: label_of.get(int(kv[0]), ""))
            if fl and int(o) in label_of
        }
        record["comment"] = comment
        record["submitted_at"] = _iso(submitted_at)
        if seconds is not None:
            record["seconds"] = seconds
        yield record


def _ordered_scores(per_dim: dict, dim_rank: dict) -> dict:
    """Scores in rubric order (the common case is checked first: it is the hot loop)."""
    if all(d in dim_rank for d in per_dim):
        ordered = sorted(per_dim, key=dim_rank.__getitem__)
    else:
        ordered = sorted(per_dim, key=lambda d: (dim_rank.get(d, len(dim_rank)), d))
    return {d: _number(per_dim[d]) for d in ordered}


def records_jsonl(*, campaign: Campaign, unblind: bool = False) -> Iterator[str]:
    for record in records_iter(campaign=campaign, unblind=unblind):
        yield json.dumps(record, ensure_ascii=False) + "\n"


def csv_max_candidates(campaign: Campaign) -> int:
    most = (
        ItemOutput.objects.filter(item__campaign=campaign)
        .values("item_id")
        .annotate(n=Count("id"))
        .aggregate(m=Max("n"))["m"]
    )
    return max(2, most or campaign.contenders.count())


CSV_FIXED = (
    "task_id",
    "category",
    "sample",
    "judge",
    "blind",
    "submitted_at",
    "candidates",
    "preference",
    "comment",
    "seconds",
    "arbitration",
)


def csv_columns(*, campaign: Campaign, unblind: bool = False) -> list[str]:
    """The flattened record: one row per review; list cells are joined with ';'."""
    names = labels(csv_max_candidates(campaign))
    columns = list(CSV_FIXED)
    if unblind:
        columns += [f"models.{label}" for label in names]
    columns += [f"scores.{label}.{d}" for label in names for d in _dimension_keys(campaign)]
    columns += [f"flags.{label}" for label in names]
    return columns


def _csv_rows(campaign: Campaign, columns: list[str], unblind: bool) -> Iterator[list]:
    for record in records_iter(campaign=campaign, unblind=unblind):
        flat = {
            "task_id": record["task_id"],
            "category": record["category"],
            "sample": record["sample"],
            "judge": record["judge"],
            "blind": "true" if record["blind"] else "false",
            "submitted_at": record["submitted_at"],
            "candidates": ";".join(record["candidates"]),
            "preference": record["preference"],
            "comment": record["comment"],
            "seconds": record.get("seconds"),
            "arbitration": "true" if record.get("arbitration") else None,
        }
        for label, name in record.get("models", {}).items():
            flat[f"models.{label}"] = name
        for label, dims in record["scores"].items():
            for d, v in dims.items():
                # An explicit N/A is "null", as in JSON (an empty cell means "not given").
                flat[f"scores.{label}.{d}"] = "null" if v is None else v
        for label, fl in record["flags"].items():
            # An arbiter's explicitly empty list is "none" (an empty cell means "not given").
            flat[f"flags.{label}"] = ";".join(fl) or "none"
        yield [flat.get(c) for c in columns]


def records_csv(*, campaign: Campaign, unblind: bool = False) -> Iterator[str]:
    """One CSV line at a time; every text cell is formula-escaped (evalsite.csvsafe)."""
    columns = csv_columns(campaign=campaign, unblind=unblind)
    return csv_lines(columns, _csv_rows(campaign, columns, unblind))


def records_export(
    *, campaign: Campaign, fmt: str = "jsonl", unblind: bool = False
) -> Iterator[str]:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose jsonl or csv")
    return (
        records_jsonl(campaign=campaign, unblind=unblind)
        if fmt == "jsonl"
        else records_csv(campaign=campaign, unblind=unblind)
    )


def export_filename(*, campaign: Campaign, fmt: str, unblind: bool) -> str:
    return f"{campaign.slug}-reviews{'-unblind' if unblind else ''}.{fmt}"


# --------------------------------------------------------------------------------------------
# Import: parsing


@dataclass
class RecordError:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, field {self.field or '(record)'}: {self.message}"


class RecordImportError(Exception):
    """The first MAX_ERRORS problems in line order in `errors`; how many there are in `count`."""

    def __init__(self, errors: list[RecordError]):
        self.count = len(errors)
        self.errors = sorted(errors, key=lambda e: (e.line, e.field))[:MAX_ERRORS]
        super().__init__("\n".join(str(e) for e in self.errors))

    def messages(self) -> list[str]:
        """Every listed problem, plus a closing line saying how many were left out (as the
        test-set import says it)."""
        out = [str(e) for e in self.errors]
        if self.count > len(self.errors):
            out.append(more_problems(self.count - len(self.errors)))
        return out


@dataclass
class ImportSummary:
    records: int = 0
    reviews_created: int = 0
    reviews_unchanged: int = 0
    items_created: int = 0
    judges_created: list[str] = field(default_factory=list)
    items_settled: int = 0
    arbitrations_created: int = 0
    arbitrations_unchanged: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _decode(data: bytes) -> str:
    text, errors = decode_utf8(data)
    if errors:
        raise RecordImportError(
            [RecordError(number, "(encoding)", message) for number, message in errors]
        )
    return text


def _parse_jsonl(text: str, errors: list[RecordError]) -> list[tuple[int, dict]]:
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


CSV_COLUMN_RE = re.compile(r"^(?:models\.([A-Z]+)|scores\.([A-Z]+)\.(.+)|flags\.([A-Z]+))$")


def _csv_value(raw: str):
    """Score cells: empty = not rated; numbers as JSON numbers so validation is shared."""
    if raw == "" or raw.lower() == "null":
        return None
    try:
        value = strict_json(raw)
    except ValueError:
        return raw  # validation reports "must be a number"
    return value if isinstance(value, int | float) and not isinstance(value, bool) else raw


def _parse_csv(text: str, errors: list[RecordError]) -> list[tuple[int, dict]]:
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
    for key in ("task_id", "category", "judge", "submitted_at", "comment"):
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
    models, scores, flags = {}, {}, {}
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
    if models:
        record["models"] = models
    record["scores"] = scores
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


# --------------------------------------------------------------------------------------------
# Import: validation


@dataclass
class _Record:
    line: int
    task_id: str
    sample: int
    judge: str
    labels: list[str]
    models: dict[str, str]  # label -> contender name
    scores: dict[str, dict[str, float | None]]
    preference: str | None  # label, "tie", "both_bad" or None
    flags: dict[str, list[str]]
    comment: str
    submitted_at: datetime | None
    seconds: int | None
    arbitration: bool = False

    @property
    def item_key(self) -> tuple:
        return (self.task_id, self.sample, frozenset(self.models.values()))


def _check_record(
    line: int, raw: dict, campaign: Campaign, rubric: dict, errors: list
) -> _Record | None:
    before = len(errors)

    def err(fld: str, message: str) -> None:
        errors.append(RecordError(line, fld, message))

    for key in raw:
        if key not in JSONL_KEYS:
            err(key, "unknown field")
    for key in REQUIRED_KEYS:
        if raw.get(key) in (None, "", [], {}):
            err(
                key,
                "required"
                + (" on import (which contender each label is)" if key == "models" else ""),
            )
    task_id = raw.get("task_id")
    if task_id is not None and not isinstance(task_id, str):
        err("task_id", "must be a string")
    judge = raw.get("judge")
    if judge is not None and (not isinstance(judge, str) or not USERNAME_RE.match(judge)):
        err("judge", "must be a user name of letters, digits and @.+-_ (at most 150)")
    sample = raw.get("sample", 0)
    if sample is None:
        sample = 0
    if (
        not isinstance(sample, int)
        or isinstance(sample, bool)
        or not 0 <= sample < campaign.samples_per_task
    ):
        err("sample", f"must be an integer from 0 to {campaign.samples_per_task - 1}")
    candidates = raw.get("candidates")
    names: list[str] = []
    if candidates not in (None, [], ""):
        if (
            not isinstance(candidates, list)
            or not all(isinstance(c, str) for c in candidates)
            or len(candidates) < 2
            or candidates != labels(len(candidates))
        ):
            err("candidates", "must be the labels A, B, ... in order (at least two)")
        else:
            names = candidates
    models = raw.get("models")
    if models not in (None, {}, ""):
        if not isinstance(models, dict) or not all(
            isinstance(v, str) and v for v in models.values()
        ):
            err("models", "must map each label to a contender name")
            models = None
        elif names and set(models) != set(names):
            err("models", f"labels {sorted(models)} do not match candidates {names}")
        elif len(set(models.values())) != len(models):
            err("models", "a contender appears under two labels")
    else:
        models = None
    scores = raw.get("scores", {})
    if scores is None:
        scores = {}
    if not isinstance(scores, dict):
        err("scores", "must be an object of label -> {dimension: score}")
        scores = {}
    clean_scores: dict[str, dict] = {}
    for label, dims in scores.items():
        if names and label not in names:
            err(f"scores.{label}", "not one of the candidates")
            continue
        if dims is None:
            dims = {}
        if not isinstance(dims, dict):
            err(f"scores.{label}", "must be an object of dimension -> score")
            continue
        clean_scores[label] = {}
        for dim, value in dims.items():
            where = f"scores.{label}.{dim}"
            spec = rubric.get(dim)
            if spec is None:
                err(where, f"unknown dimension (the rubric has {', '.join(rubric) or 'none'})")
                continue
            if value is None:
                clean_scores[label][dim] = None
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                err(where, "must be a number or null")
                continue
            low, high = spec.get("min", 1), spec.get("max", 5)
            if not low <= value <= high:
                err(where, f"{value} is outside the rubric range {low}..{high}")
                continue
            # The reviewer's rule. An arbitration record may keep an agreed mean (3.5): the
            # arbitration rules judge its values when it is replayed.
            fraction = None if raw.get("arbitration") is True else not_whole_error(spec, value)
            if fraction:
                err(where, f"{value:g}: {fraction}")
                continue
            clean_scores[label][dim] = float(value)
    preference = raw.get("preference")
    if preference == "":
        preference = None
    if preference is not None and (
        not isinstance(preference, str)
        or preference not in (*names, Preference.TIE, Preference.BOTH_BAD)
    ):
        err(
            "preference",
            f"must be one of the candidate labels, tie, both_bad or null; got {preference!r}",
        )
    flags = raw.get("flags") or {}
    if not isinstance(flags, dict):
        err("flags", "must be an object of label -> [flag, ...]")
        flags = {}
    clean_flags: dict[str, list[str]] = {}
    for label, values in flags.items():
        if names and label not in names:
            err(f"flags.{label}", "not one of the candidates")
            continue
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            err(f"flags.{label}", "must be a list of flag names")
            continue
        unknown = [v for v in values if v not in FLAGS]
        if unknown:
            err(
                f"flags.{label}", f"unknown flag(s) {', '.join(unknown)}; known: {', '.join(FLAGS)}"
            )
            continue
        # Empty lists are kept: in an arbitration record they mean "this output has no flags".
        clean_flags[label] = list(dict.fromkeys(values))
    comment = raw.get("comment", "")
    if comment is None:
        comment = ""
    if not isinstance(comment, str):
        err("comment", "must be a string")
    elif len(comment) > COMMENT_MAX_CHARS and raw.get("arbitration") is not True:
        # the submit API's limit; an arbitration record's note is checked as the note it is
        err("comment", f"is {len(comment):,} characters long; the limit is {COMMENT_MAX_CHARS:,}")
    blind = raw.get("blind")
    if blind is not None and not isinstance(blind, bool):
        err("blind", "must be true or false")
    submitted_at = raw.get("submitted_at")
    when = None
    if submitted_at not in (None, ""):
        try:
            when = parse_datetime(submitted_at) if isinstance(submitted_at, str) else None
        except ValueError:
            when = None
        if when is None:
            err("submitted_at", "must be an ISO 8601 date-time, e.g. 2026-11-30T10:00:00Z")
        elif timezone.is_naive(when):
            when = timezone.make_aware(when, UTC)
    seconds = raw.get("seconds")
    # Review.seconds_spent is a 32-bit column: 2**31 was a 500 on PostgreSQL, 2**63 on SQLite.
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, int) or not 0 <= seconds <= MAX_SECONDS
    ):
        err("seconds", f"must be a whole number of seconds from 0 to {MAX_SECONDS}")
    arbitration = raw.get("arbitration")
    if arbitration is not None and not isinstance(arbitration, bool):
        err("arbitration", "must be true or false")
    if len(errors) > before:
        return None
    return _Record(
        line=line,
        task_id=task_id,
        sample=sample,
        judge=judge,
        labels=names,
        models=models,
        scores=clean_scores,
        preference=preference,
        flags=clean_flags,
        comment=comment,
        submitted_at=when,
        seconds=seconds,
        arbitration=bool(arbitration),
    )


def _review_signature(
    *, scores: dict, preference: str | None, flags: dict, comment: str, order: list
) -> tuple:
    """What makes two reviews the same, keyed by contender name (labels differ per judge).

    A null score and a missing one both mean "not rated", so they compare equal.
    """
    flat_scores = tuple(
        sorted((c, d, v) for c, dims in scores.items() for d, v in dims.items() if v is not None)
    )
    flat_flags = tuple(sorted((c, tuple(sorted(f))) for c, f in flags.items() if f))
    return (flat_scores, preference or "", flat_flags, comment, tuple(order))


# --------------------------------------------------------------------------------------------
# Import: writing


BLIND_FILE = (
    "no record names its models (a blind export?): import the export with models "
    '(export_reviews --unblind, or "with models" on the dashboard)'
)


def reviews_import(
    *, campaign: Campaign, data: bytes, fmt: str | None = None, filename: str = ""
) -> ImportSummary:
    """Parse, check and store review records; all or nothing. Raises RecordImportError."""
    if len(data) > max_import_bytes():
        raise RecordImportError([RecordError(0, "(file)", too_big_problem())])
    fmt = fmt or detect_format(filename, data)
    if fmt not in FORMATS:
        raise RecordImportError(
            [RecordError(0, "(file)", f"unknown format {fmt!r}; use jsonl or csv")]
        )
    text = _decode(data)
    errors: list[RecordError] = []
    parsed = _parse_jsonl(text, errors) if fmt == "jsonl" else _parse_csv(text, errors)
    rubric = {d["key"]: d for d in campaign.rubric}
    records = [
        r for r in (_check_record(line, raw, campaign, rubric, errors) for line, raw in parsed) if r
    ]
    if parsed and not any(raw.get("models") for _, raw in parsed):
        # A blind export: one line says so, not "models: required" on every line.
        errors[:] = [e for e in errors if e.field != "models"]
        errors.append(RecordError(1, "models", BLIND_FILE))
    if not parsed and not errors:
        empty = not text.strip()
        errors.append(
            RecordError(1, "(file)", "the file is empty" if empty else "no records in the file")
        )
    tasks = {t.external_id: t for t in campaign.testset.tasks.all()}
    contenders = {c.name: c for c in campaign.contenders.all()}
    seen: dict[tuple, int] = {}
    for rec in records:
        if rec.task_id not in tasks:
            errors.append(
                RecordError(
                    rec.line, "task_id", f"{rec.task_id!r} is not in test set {campaign.testset}"
                )
            )
        unknown = sorted(n for n in rec.models.values() if n not in contenders)
        if unknown:
            errors.append(
                RecordError(
                    rec.line, "models", f"not a contender of this campaign: {', '.join(unknown)}"
                )
            )
        if rec.arbitration:
            key = (rec.item_key, "(arbitration)")
            if key in seen:
                errors.append(
                    RecordError(
                        rec.line,
                        "arbitration",
                        f"this item was already arbitrated on line {seen[key]}",
                    )
                )
        else:
            key = (rec.item_key, rec.judge)
            if key in seen:
                errors.append(
                    RecordError(
                        rec.line,
                        "judge",
                        f"{rec.judge} already reviewed this item on line {seen[key]}",
                    )
                )
        seen.setdefault(key, rec.line)
    for line, raw in parsed:
        category = raw.get("category")
        task = tasks.get(raw.get("task_id")) if isinstance(raw.get("task_id"), str) else None
        if category not in (None, "") and task is not None and category != task.category:
            errors.append(
                RecordError(
                    line,
                    "category",
                    f"{category!r} does not match the task's category {task.category!r}",
                )
            )
    try:
        with transaction.atomic():
            # _write checks the records against what is stored too and raises every problem,
            # these above and its own, before it writes anything.
            summary = _write(
                campaign=campaign,
                records=records,
                tasks=tasks,
                contenders=contenders,
                errors=errors,
                raw_lines=dict(parsed),
            )
    except IntegrityError:
        # Another import (or the review engine) wrote the same rows meanwhile; nothing of
        # this one was kept, and running it again is safe (the import is idempotent).
        raise RecordImportError(
            [
                RecordError(
                    0,
                    "(file)",
                    "the campaign changed while importing; nothing was imported, try again",
                )
            ]
        ) from None
    return summary


def _write(
    *,
    campaign: Campaign,
    records: list[_Record],
    tasks: dict,
    contenders: dict,
    errors: list[RecordError],
    raw_lines: dict[int, dict],
) -> ImportSummary:
    """Check the records against the stored reviews, store them, check the arbitration
    records against the disputes they make, and raise every problem (`errors` included), so
    that nothing is kept unless no line has one. Records whose task or models are unknown are
    in `errors` already; they match no stored item and are checked like new ones."""
    from .disputes import item_settle

    summary = ImportSummary(records=len(records))
    arbitration_records = [r for r in records if r.arbitration]
    review_records = [r for r in records if not r.arbitration]
    contender_name = {c.pk: c.name for c in contenders.values()}
    # Existing items of the campaign, keyed like records: (task external id, sample, contender names).
    existing: dict[tuple, ReviewItem] = {}
    outputs_by_item: dict[int, dict[str, int]] = defaultdict(
        dict
    )  # item -> contender name -> ItemOutput id
    items = {i.pk: i for i in ReviewItem.objects.filter(campaign=campaign).select_related("task")}
    for output_id, item_id, contender_id in ItemOutput.objects.filter(
        item__campaign=campaign
    ).values_list("id", "item_id", "generation__contender_id"):
        outputs_by_item[item_id][contender_name.get(contender_id, f"#{contender_id}")] = output_id
    for item in items.values():
        key = (item.task.external_id, item.sample_index, frozenset(outputs_by_item[item.pk]))
        existing[key] = item

    User = get_user_model()
    judge_names = sorted({r.judge for r in records})
    users = {u.username: u for u in User.objects.filter(username__in=judge_names)}

    # Reviews already stored, for idempotency: (item id, user id) -> signature.
    stored: dict[tuple[int, int], tuple] = {}
    item_ids = [i.pk for i in existing.values()]
    if item_ids:
        stored = _stored_signatures(item_ids, outputs_by_item, contender_name)

    new_items: dict[tuple, ReviewItem] = {}
    to_create: list[tuple[_Record, tuple]] = []
    for rec in review_records:
        item = existing.get(rec.item_key)
        by_label = rec.models
        signature = _review_signature(
            scores={by_label[label]: dims for label, dims in rec.scores.items()},
            preference=by_label.get(rec.preference, rec.preference) if rec.preference else None,
            flags={by_label[label]: f for label, f in rec.flags.items()},
            comment=rec.comment,
            order=[by_label[label] for label in rec.labels],
        )
        if item is not None:
            user = users.get(rec.judge)  # a new judge has no stored review
            if user is not None and (item.pk, user.pk) in stored:
                if stored[(item.pk, user.pk)] == signature:
                    summary.reviews_unchanged += 1
                    continue
                errors.append(
                    RecordError(
                        rec.line,
                        "judge",
                        f"{rec.judge} already has a different review of this item",
                    )
                )
                continue
            if item.state == ReviewItem.State.RESOLVED:
                errors.append(
                    RecordError(
                        rec.line,
                        "task_id",
                        "this item was already arbitrated; new reviews cannot be added",
                    )
                )
                continue
            if item.live_count or item.assignments.filter(state="active").exists():
                errors.append(
                    RecordError(
                        rec.line,
                        "task_id",
                        "this item is being reviewed on the site; import into a campaign without live review",
                    )
                )
                continue
        to_create.append((rec, rec.item_key))
    bad_lines = {e.line for e in errors}
    arbitration_records = [r for r in arbitration_records if r.line not in bad_lines]
    if errors and not arbitration_records:
        raise RecordImportError(errors)
    # The arbitration rules need the items settled by the file's reviews, so the clean review
    # lines are written even when some line has a problem (all of it is rolled back then):
    # one run lists the arbitration records' problems with the review lines'.
    unsettled = _unsettled_tasks(bad_lines, raw_lines)
    to_create = [(rec, key) for rec, key in to_create if rec.line not in bad_lines]

    # Judges: unknown ones become inactive users without a password.
    for name in judge_names:
        if name not in users:
            user = User(username=name, is_active=False)
            user.set_unusable_password()
            user.save()
            users[name] = user
            summary.judges_created.append(name)

    # Items and their outputs (with imported-style generations where none exist yet).
    generations = {
        (g.task_id, g.contender_id, g.sample_index): g
        for g in Generation.objects.filter(campaign=campaign)
    }
    now = timezone.now()
    fresh = list(dict.fromkeys(key for _, key in to_create if key not in existing))
    sizes = [len(key[2]) for key in fresh]
    rotations = dict(zip(fresh, item_rotations(campaign_id=campaign.pk, sizes=sizes), strict=True))
    for rec, key in to_create:
        if key in existing or key in new_items:
            continue
        task = tasks[rec.task_id]
        chosen = [contenders[n] for n in sorted(key[2])]
        # The generation side's key, so review_items_sync later finds the same item.
        pair_key = (
            ""
            if len(chosen) == len(contenders)
            else readiness_pair_key(campaign.pk, tuple(c.pk for c in chosen))
        )
        item = ReviewItem.objects.create(
            campaign=campaign,
            task=task,
            sample_index=rec.sample,
            pair_key=pair_key,
            overlap=campaign.overlap,
            ready=True,
            state=ReviewItem.State.OPEN,
            imported=True,
            shuffle_key=secrets.randbelow(2**31),
            rotation=rotations[key],
        )
        for contender in chosen:
            gen = generations.get((task.pk, contender.pk, rec.sample))
            if gen is None:
                gen = Generation.objects.create(
                    campaign=campaign,
                    task=task,
                    contender=contender,
                    sample_index=rec.sample,
                    status=Generation.Status.DONE,
                    finished_at=now,
                )
                generations[(task.pk, contender.pk, rec.sample)] = gen
            out = ItemOutput.objects.create(item=item, generation=gen)
            outputs_by_item[item.pk][contender.name] = out.pk
        new_items[key] = item
        summary.items_created += 1

    touched: dict[int, ReviewItem] = {}
    reviews: list[Review] = []
    label_outputs: list[dict[str, int]] = []
    for rec, key in to_create:
        item = existing.get(key) or new_items[key]
        out_of = {label: outputs_by_item[item.pk][rec.models[label]] for label in rec.labels}
        preferred = None
        preference = ""
        if rec.preference in out_of:
            preference, preferred = Preference.OUTPUT, out_of[rec.preference]
        elif rec.preference:
            preference = rec.preference
        reviews.append(
            Review(
                item=item,
                reviewer=users[rec.judge],
                preference=preference,
                preferred_output_id=preferred,
                flags={str(out_of[label]): f for label, f in rec.flags.items() if f},
                comment=rec.comment,
                seconds_spent=rec.seconds,
                submitted_at=rec.submitted_at or now,
                presented_order=[out_of[label] for label in rec.labels],
            )
        )
        label_outputs.append(out_of)
        touched[item.pk] = item
    # bulk_create sets primary keys on PostgreSQL and SQLite >= 3.35.
    Review.objects.bulk_create(reviews, batch_size=1000)
    summary.reviews_created = len(reviews)
    scores: list[Score] = []
    for review, (rec, _key), out_of in zip(reviews, to_create, label_outputs, strict=True):
        for label, dims in rec.scores.items():
            for dim, value in dims.items():
                scores.append(
                    Score(review=review, output_id=out_of[label], dimension=dim, value=value)
                )
    Score.objects.bulk_create(scores, batch_size=2000)

    for item in touched.values():
        item.submitted_count = item.reviews.count()
        # An item still waiting for the campaign's own generations is reviewed and settled
        # now: it counts as ready, like an item the import creates (a generation finishing
        # later opens waiting items only, so it leaves this one settled).
        item.ready = True
        item.save(update_fields=["submitted_count", "ready"])
        item_settle(item)
        summary.items_settled += 1
    if arbitration_records:
        items_by_key = {**existing, **new_items}
        _write_arbitrations(
            arbitration_records,
            items_by_key,
            outputs_by_item,
            users,
            now,
            summary,
            errors,
            unsettled,
        )
    if errors:
        raise RecordImportError(errors)
    return summary


def _unsettled_tasks(bad_lines: set[int], raw_lines: dict[int, dict]) -> set[str] | None:
    """The tasks with a review line that has a problem: their items' disputes are unknown
    until it is fixed. None when such a line names no task (bad JSON, say): any may be."""
    tasks = set()
    for line in bad_lines:
        raw = raw_lines.get(line)
        if raw is not None and raw.get("arbitration") is True:
            continue  # an arbitration record settles no item
        task_id = raw.get("task_id") if raw is not None else None
        if not isinstance(task_id, str):
            return None
        tasks.add(task_id)
    return tasks


def _write_arbitrations(
    records: list[_Record],
    items_by_key: dict,
    outputs_by_item: dict,
    users: dict,
    now,
    summary: ImportSummary,
    errors: list[RecordError],
    unsettled: set[str] | None,
) -> None:
    """Replay arbiters' decisions through the arbitration rules (`resolution_build`): the same
    validation as the arbitration page, and the same final outcome as the original. Problems
    go to `errors`; a record of an `unsettled` task (None: every task) is checked only where
    its item's reviews do not matter, so their problems are not echoed as its own."""
    from .arbitration import ResolveInvalid, note_checked, resolution_build

    for rec in records:
        if unsettled is None or rec.task_id in unsettled:
            _text, problem = note_checked(rec.comment)
            if problem:
                errors.append(RecordError(rec.line, "comment", problem))
            continue
        item = items_by_key.get(rec.item_key)
        if item is None:
            errors.append(RecordError(rec.line, "task_id", "no reviews of this item to arbitrate"))
            continue
        item.refresh_from_db()
        arbiter = users[rec.judge]
        out_of = {label: outputs_by_item[item.pk][rec.models[label]] for label in rec.labels}
        arbitration = Arbitration.objects.filter(item=item).first()
        if item.state == ReviewItem.State.RESOLVED and arbitration is not None:
            if arbitration.arbiter_id == arbiter.pk and arbitration.has_values(
                scores={out_of[label]: dims for label, dims in rec.scores.items()},
                preference=str(out_of.get(rec.preference, rec.preference))
                if rec.preference
                else None,
                flags={out_of[label]: f for label, f in rec.flags.items()},
                note=rec.comment,
            ):
                summary.arbitrations_unchanged += 1
            else:
                errors.append(
                    RecordError(
                        rec.line, "arbitration", "this item was already arbitrated differently"
                    )
                )
            continue
        if item.state != ReviewItem.State.DISPUTED or arbitration is None:
            errors.append(
                RecordError(
                    rec.line, "arbitration", "the reviews of this item agree: nothing to arbitrate"
                )
            )
            continue
        if Review.objects.filter(item=item, reviewer=arbiter).exists():
            errors.append(
                RecordError(
                    rec.line, "judge", f"{rec.judge} reviewed this item and cannot arbitrate it"
                )
            )
            continue
        arbitration.order = [out_of[label] for label in rec.labels]
        try:
            final, values = resolution_build(
                arbitration=arbitration,
                scores=rec.scores,
                preference=rec.preference,
                flags=rec.flags or None,
                note=rec.comment,
            )
        except ResolveInvalid as exc:
            for where, message in exc.errors.items():
                errors.append(
                    RecordError(rec.line, "comment" if where == "note" else where, message)
                )
            continue
        note = values.pop("note")
        Arbitration.objects.filter(pk=arbitration.pk).update(
            state=Arbitration.State.RESOLVED,
            arbiter=arbiter,
            order=arbitration.order,
            final_values=values,
            note=note,
            resolved_at=rec.submitted_at or now,
            lease_expires_at=None,
        )
        ReviewItem.objects.filter(pk=item.pk).update(final=final, state=ReviewItem.State.RESOLVED)
        summary.arbitrations_created += 1


def _stored_signatures(
    item_ids: Iterable[int], outputs_by_item: dict, contender_name: dict
) -> dict:
    name_of_output = {o: name for outs in outputs_by_item.values() for name, o in outs.items()}
    reviews = {r.pk: r for r in Review.objects.filter(item_id__in=item_ids)}
    scores: dict[int, dict] = defaultdict(lambda: defaultdict(dict))
    for review_id, output_id, dim, value in Score.objects.filter(review_id__in=reviews).values_list(
        "review_id", "output_id", "dimension", "value"
    ):
        scores[review_id][name_of_output.get(output_id)][dim] = value
    out = {}
    for r in reviews.values():
        preference = (
            name_of_output.get(r.preferred_output_id)
            if r.preference == Preference.OUTPUT
            else r.preference
        )
        out[(r.item_id, r.reviewer_id)] = _review_signature(
            scores=scores.get(r.pk, {}),
            preference=preference or None,
            flags={name_of_output.get(int(o)): f for o, f in (r.flags or {}).items()},
            comment=r.comment,
            order=[name_of_output.get(int(o)) for o in r.presented_order],
        )
    return out
