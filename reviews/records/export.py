"""Export: every review (then every resolved arbitration) of a campaign as records.

Streams: a server-side cursor over the reviews plus one batched lookup of scores and outputs
per chunk, so memory does not depend on the campaign's size. Exports are blind (no `models`
key / columns) unless `unblind=True`, which only leads may ask for.

An item an admin dropped (reported as revealing its model: reviews/identity_reports) is out
of the campaign and its figures, so its reviews, its arbitration and a judge's outcome are
out of the export too: the record format has no place to mark them, and a re-import of the
export then reproduces the report's figures.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Count, Max

from evalsite.csvsafe import csv_lines
from reviews.models import Arbitration, ItemOutput, Preference, Review, ReviewItem, Score
from reviews.records.format import CSV_FIXED, EXPORT_CHUNK, FORMATS
from reviews.rubric import TURN_MARK, Rubric, TurnScoring
from tasks.blinding.render import labels
from tasks.models import Campaign

# An item dropped by an admin is in no export (the module's docstring).
DROPPED = ReviewItem.State.DROPPED


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


def records_iter(
    *, campaign: Campaign, unblind: bool = False, chunk_size: int = EXPORT_CHUNK
) -> Iterator[dict]:
    """Every review of the campaign as a record dict, streamed in a stable order."""
    dims = Rubric.of(campaign).keys
    dim_rank = {d: i for i, d in enumerate(dims)}
    contender_names = dict(campaign.contenders.values_list("id", "name"))
    turns = _Turns.of(campaign)
    rows = (
        Review.objects.filter(item__campaign=campaign)
        .exclude(item__state=DROPPED)
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
            yield from turns.split(_records_for_batch(batch, dim_rank, contender_names, unblind))
            batch = []
    if batch:
        yield from turns.split(_records_for_batch(batch, dim_rank, contender_names, unblind))
    yield from turns.split(
        _arbitration_records(campaign, unblind, dim_rank, contender_names, chunk_size)
    )
    yield from _judge_records(campaign, unblind, dim_rank, contender_names)


def _judge_records(campaign, unblind, dim_rank, contender_names) -> Iterator[dict]:
    """The items a review policy's judge settled, last: the judge's combined answer under the
    labels of the outputs' id order, marked `"source": "judge"` and `judge` its name."""
    items = (
        ReviewItem.objects.filter(campaign=campaign, source="judge", final__isnull=False)
        .exclude(state=DROPPED)
        .order_by("task__position", "sample_index", "pair_key", "pk")
        .values_list("pk", "task__external_id", "task__category", "sample_index", "final")
    )
    for batch in _chunks(items.iterator(chunk_size=EXPORT_CHUNK), EXPORT_CHUNK):
        item_outputs, output_contender = _batch_outputs({row[0] for row in batch})
        for item_id, task_id, category, sample, final in batch:
            order = item_outputs[item_id]
            label_of = dict(zip(order, labels(len(order)), strict=True))
            scores = final.get("scores") or {}
            record = {
                "task_id": task_id,
                "category": category,
                "candidates": list(label_of.values()),
                "scores": {
                    label: _ordered_scores(scores.get(str(o)) or {}, dim_rank)
                    for o, label in label_of.items()
                },
                "judge": final.get("judge", ""),
                "blind": True,
            }
            if unblind:
                record["models"] = {
                    label: contender_names.get(output_contender.get(o), "")
                    for o, label in label_of.items()
                }
            preference = final.get("preference")
            by_id = {str(o): label for o, label in label_of.items()}
            record["preference"] = by_id.get(preference, preference) if preference else None
            record["sample"] = sample
            record["flags"] = {}
            record["comment"] = ""
            record["submitted_at"] = None
            record["source"] = "judge"
            yield record


def _chunks(rows, size: int) -> Iterator[list]:
    batch: list = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Turns:
    """A campaign's per-turn scores out of a record's `scores` into its `turn_scores`: a list
    per label, one score per user turn of the task (null where an arbiter decided nothing)."""

    def __init__(self, scoring: TurnScoring | None, counts: dict[str, int]):
        self.scoring, self.counts = scoring, counts

    @classmethod
    def of(cls, campaign: Campaign) -> _Turns:
        scoring = TurnScoring.of(campaign)
        if scoring is None:
            return cls(None, {})
        tasks = campaign.testset.tasks.values_list("external_id", "turns")
        return cls(scoring, {external_id: len(turns or []) for external_id, turns in tasks})

    def split(self, records: Iterator[dict]) -> Iterator[dict]:
        if self.scoring is None:
            yield from records
            return
        prefix = self.scoring.dimension + TURN_MARK
        for record in records:
            n = self.counts.get(record["task_id"], 0)
            turn_scores = {}
            for label, dims in record["scores"].items():
                keys = [k for k in dims if k.startswith(prefix)]
                if not keys or not n:
                    continue
                per_turn = [None] * n
                for key in keys:
                    turn = key[len(prefix) :]
                    value = dims.pop(key)
                    if turn.isdigit() and 1 <= int(turn) <= n:
                        per_turn[int(turn) - 1] = value
                turn_scores[label] = per_turn
            if turn_scores:
                # Right after "scores", its neighbour in the format.
                items = list(record.items())
                at = list(record).index("scores") + 1
                record = dict([*items[:at], ("turn_scores", turn_scores), *items[at:]])
            yield record


def _arbitration_records(
    campaign, unblind, dim_rank, contender_names, chunk_size
) -> Iterator[dict]:
    """Resolved arbitrations, after all reviews: the arbiter's decisions, so a re-import
    reproduces the final outcomes too. Marked `"arbitration": true`; `comment` is the note."""
    rows = (
        Arbitration.objects.filter(item__campaign=campaign, state=Arbitration.State.RESOLVED)
        .exclude(item__state=DROPPED)
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
    for row in rows:
        batch.append(row)
        if len(batch) >= chunk_size:
            yield from _arbitrations_for_batch(batch, dim_rank, contender_names, unblind)
            batch = []
    if batch:
        yield from _arbitrations_for_batch(batch, dim_rank, contender_names, unblind)


def _arbitrations_for_batch(batch, dim_rank, contender_names, unblind) -> Iterator[dict]:
    """One batch of arbitration rows as records (one query for their outputs' contenders)."""
    output_contender = dict(
        ItemOutput.objects.filter(item_id__in={r[0] for r in batch}).values_list(
            "id", "generation__contender_id"
        )
    )
    for row in batch:
        yield _arbitration_record(row, dim_rank, contender_names, unblind, output_contender)


def _arbitration_record(row, dim_rank, contender_names, unblind, output_contender) -> dict:
    """One resolved arbitration as a record: the arbiter's values under the labels of the
    order they saw, models named only when `unblind`."""
    _item, task_id, category, sample, arbiter, order, values, note, resolved_at = row
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
                for d, v in sorted(dims.items(), key=lambda kv: (dim_rank.get(kv[0], 1e9), kv[0]))
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
            label_of[str(o)]: contender_names.get(output_contender.get(o), "") for o in order
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
    record["source"] = "human"
    return record


def _records_for_batch(batch, dim_rank, contender_names, unblind) -> Iterator[dict]:
    item_outputs, output_contender = _batch_outputs({r[1] for r in batch})
    read = _BatchRead(_batch_scores([r[0] for r in batch]), item_outputs, output_contender)
    for row in batch:
        yield _review_record(row, read, dim_rank, contender_names, unblind)


def _batch_scores(review_ids: list[int]) -> dict[int, dict[int, dict[str, float | None]]]:
    """{review: {output: {dimension: value}}} for a batch of reviews, in one query."""
    scores: dict[int, dict[int, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for review_id, output_id, dim, value in Score.objects.filter(
        review_id__in=review_ids
    ).values_list("review_id", "output_id", "dimension", "value"):
        scores[review_id][output_id][dim] = value
    return scores


def _batch_outputs(item_ids: set[int]) -> tuple[dict[int, list[int]], dict[int, int]]:
    """The batch's items' outputs in id order, and each output's contender, in one query."""
    item_outputs: dict[int, list[int]] = defaultdict(list)
    output_contender: dict[int, int] = {}
    for output_id, item_id, contender_id in (
        ItemOutput.objects.filter(item_id__in=item_ids)
        .order_by("id")
        .values_list("id", "item_id", "generation__contender_id")
    ):
        item_outputs[item_id].append(output_id)
        output_contender[output_id] = contender_id
    return item_outputs, output_contender


@dataclass(frozen=True)
class _BatchRead:
    """What a batch of reviews reads besides their rows: each review's scores, each item's
    outputs in id order, each output's contender."""

    scores: dict[int, dict[int, dict[str, float | None]]]
    item_outputs: dict[int, list[int]]
    output_contender: dict[int, int]


def _review_record(row, read: _BatchRead, dim_rank, contender_names, unblind) -> dict:
    """One review as a record, under the labels of the order its reviewer saw (the outputs'
    id order when none was stored); models named only when `unblind`."""
    (
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
    ) = row
    scores, item_outputs, output_contender = read.scores, read.item_outputs, read.output_contender
    order = [int(o) for o in (order or [])] or item_outputs[item_id]
    names = labels(len(order))
    label_of = dict(zip(order, names, strict=True))
    review_scores = scores.get(review_id, {})
    record = {
        "task_id": task_id,
        "category": category,
        "candidates": names,
        "scores": {label_of[o]: _ordered_scores(review_scores.get(o, {}), dim_rank) for o in order},
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
    record["source"] = "human"
    return record


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


def csv_columns(*, campaign: Campaign, unblind: bool = False) -> list[str]:
    """The flattened record: one row per review; list cells are joined with ';'."""
    names = labels(csv_max_candidates(campaign))
    columns = list(CSV_FIXED)
    if unblind:
        columns += [f"models.{label}" for label in names]
    columns += [f"scores.{label}.{d}" for label in names for d in Rubric.of(campaign).keys]
    if TurnScoring.of(campaign) is not None:
        # One cell per output: the turn scores in turn order, joined with ';' ("4;4;3").
        columns += [f"turn_scores.{label}" for label in names]
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
            "source": record.get("source"),
        }
        for label, name in record.get("models", {}).items():
            flat[f"models.{label}"] = name
        for label, dims in record["scores"].items():
            for d, v in dims.items():
                # An explicit N/A is "null", as in JSON (an empty cell means "not given").
                flat[f"scores.{label}.{d}"] = "null" if v is None else v
        for label, values in record.get("turn_scores", {}).items():
            flat[f"turn_scores.{label}"] = ";".join("null" if v is None else str(v) for v in values)
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
