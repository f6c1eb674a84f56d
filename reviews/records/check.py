"""Check: each parsed record against the campaign (test set, contenders, rubric) and the file.

The answers (scores, N/A, preference, flags, comment) are checked by reviews/rubric.py, with
the rules of the review page: a record cannot hold what a reviewer could not submit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from reviews.records.format import (
    JSONL_KEYS,
    MAX_SECONDS,
    REQUIRED_KEYS,
    SOURCES,
    USERNAME_RE,
    RecordError,
)
from reviews.rubric import CheckOptions, Mode, Rubric, TurnScoring, answers_check
from tasks.blinding.render import labels
from tasks.models import Campaign

BLIND_FILE = (
    "no record names its models (a blind export?): import the export with models "
    '(export_reviews --unblind, or "with models" on the dashboard)'
)


@dataclass
class Record:
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


def records_check(
    *, campaign: Campaign, parsed: list[tuple[int, dict]], text: str, errors: list[RecordError]
) -> tuple[list[Record], dict, dict]:
    """The clean records, the test set's tasks and the contenders by name; every problem of a
    line goes to `errors` (the file's own, and those against the campaign)."""
    # A judge's record (a review policy settled the item) is the judge's answer, not a
    # review: judging the campaign again makes it, so an import leaves it out.
    parsed = [(n, raw) for n, raw in parsed if raw.get("source") != "judge"]
    rubric = Rubric.of(campaign)  # a record's "scores": the rubric without per-turn scores
    tasks = {t.external_id: t for t in campaign.testset.tasks.all()}
    against = _Against(campaign, rubric, _TurnCheck(campaign, tasks))
    records = [r for r in (_check_record(n, raw, against, errors) for n, raw in parsed) if r]
    if parsed and not any(raw.get("models") for _, raw in parsed):
        # A blind export: one line says so, not "models: required" on every line.
        errors[:] = [e for e in errors if e.field != "models"]
        errors.append(RecordError(1, "models", BLIND_FILE))
    if not parsed and not errors:
        empty = not text.strip()
        errors.append(
            RecordError(1, "(file)", "the file is empty" if empty else "no records in the file")
        )
    contenders = {c.name: c for c in campaign.contenders.all()}
    _check_against_campaign(campaign, records, tasks, contenders, errors)
    for line, raw in parsed:
        category = raw.get("category")
        task = tasks.get(raw.get("task_id")) if isinstance(raw.get("task_id"), str) else None
        if category not in (None, "") and task is not None and category != task.category:
            message = f"{category!r} does not match the task's category {task.category!r}"
            errors.append(RecordError(line, "category", message))
    return records, tasks, contenders


def _check_against_campaign(campaign, records, tasks, contenders, errors) -> None:
    """Unknown tasks and contenders, and a judge's (or an arbiter's) second record of an item."""
    seen: dict[tuple, int] = {}
    for rec in records:
        if rec.task_id not in tasks:
            message = f"{rec.task_id!r} is not in test set {campaign.testset}"
            errors.append(RecordError(rec.line, "task_id", message))
        unknown = sorted(n for n in rec.models.values() if n not in contenders)
        if unknown:
            message = f"not a contender of this campaign: {', '.join(unknown)}"
            errors.append(RecordError(rec.line, "models", message))
        if rec.arbitration:
            key, where = (rec.item_key, "(arbitration)"), "arbitration"
            message = "this item was already arbitrated on line {}"
        else:
            key, where = (rec.item_key, rec.judge), "judge"
            message = f"{rec.judge} already reviewed this item on line {{}}"
        if key in seen:
            errors.append(RecordError(rec.line, where, message.format(seen[key])))
        seen.setdefault(key, rec.line)


@dataclass(frozen=True)
class _Against:
    """What each record is checked against: the campaign, its rubric (without per-turn
    scores) and the per-turn check of its conversations."""

    campaign: Campaign
    rubric: Rubric
    turns: _TurnCheck


def _check_record(line: int, raw: dict, against: _Against, errors: list) -> Record | None:
    campaign, rubric, turns = against.campaign, against.rubric, against.turns
    before = len(errors)

    def err(fld: str, message: str) -> None:
        errors.append(RecordError(line, fld, message))

    task_id, judge, sample, names, models = _check_identity(raw, campaign, err)
    arbitration = raw.get("arbitration")
    if arbitration is not None and not isinstance(arbitration, bool):
        err("arbitration", "must be true or false")
    if raw.get("source") not in (None, *SOURCES):
        err("source", f"must be one of {', '.join(SOURCES)}")
    answers = answers_check(
        rubric=rubric,
        labels=names or None,  # invalid candidates: labels are not checked against them
        data=raw,
        mode=Mode.RECORD,
        # An arbitration record may keep an agreed mean (3.5), or a reviewer's N/A, and its
        # comment is the arbiter's note: the arbitration rules judge them when it is replayed.
        options=CheckOptions(lenient=arbitration is True),
    )
    for where, message in answers.errors.items():
        err(where, message)
    for label, per_turn in turns.check(raw, names, arbitration is True, err).items():
        answers.scores.setdefault(label, {}).update(per_turn)
    when, seconds = _check_timing(raw, err)
    if len(errors) > before:
        return None
    return Record(
        line=line,
        task_id=task_id,
        sample=sample,
        judge=judge,
        labels=names,
        models=models,
        scores=answers.scores,
        preference=answers.preference,
        flags=answers.flags,
        comment=answers.comment,
        submitted_at=when,
        seconds=seconds,
        arbitration=bool(arbitration),
    )


class _TurnCheck:
    """A record's `turn_scores` ({"A": [4, 4, 3], ...}: one score per user turn of the task)
    as per-turn dimensions ("turn_quality@1", ...) for its scores. The values are checked by
    the rubric's one answers check, against the per-turn dimensions of the record's task."""

    def __init__(self, campaign: Campaign, tasks: dict):
        self.campaign, self.tasks = campaign, tasks
        self.scoring = TurnScoring.of(campaign)

    def check(self, raw: dict, names: list[str], arbitration: bool, err) -> dict:
        given = raw.get("turn_scores")
        if given in (None, {}):
            return {}
        if self.scoring is None:
            err(
                "turn_scores",
                "this campaign does not score turns (its definition has no score_turns)",
            )
            return {}
        if not isinstance(given, dict) or not all(isinstance(v, list) for v in given.values()):
            err(
                "turn_scores",
                'must map each label to a list of scores, one per turn: {"A": [4, 3]}',
            )
            return {}
        task_id = raw.get("task_id")
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            return {}  # the task's own error is told once, under task_id
        n = len(task.turns or [])
        if n == 0:
            err("turn_scores", f"task {task_id!r} is not a conversation (no turns): no turn scores")
            return {}
        keys = [d.key for d in self.scoring.dimensions(n)]
        scores, bad = {}, False
        for label, values in given.items():
            if len(values) != n:
                err(f"turn_scores.{label}", f"has {len(values)} scores; the task has {n} turns")
                bad = True
                continue
            # An arbiter decided some turns only: null is "not decided" in its record.
            scores[label] = {
                k: v for k, v in zip(keys, values, strict=True) if v is not None or not arbitration
            }
        if bad:
            return {}
        answers = answers_check(
            rubric=Rubric(self.scoring.dimensions(n)),
            labels=names or None,
            data={"scores": scores},
            mode=Mode.RECORD,
            options=CheckOptions(lenient=arbitration),
        )
        for where, message in answers.errors.items():
            # "scores.A.turn_quality@2" -> field turn_scores.A, "turn 2: ..."
            _, label, *rest = where.split(".", 2)
            turn = rest[0].rsplit("@", 1)[-1] if rest else ""
            err(f"turn_scores.{label}", f"turn {turn}: {message}" if turn else message)
        return {} if answers.errors else answers.scores


def _check_identity(raw: dict, campaign: Campaign, err) -> tuple:
    """(task_id, judge, sample, candidate labels, models) of a record: which review it is."""
    for key in raw:
        if key not in JSONL_KEYS:
            err(key, "unknown field")
    for key in REQUIRED_KEYS:
        if raw.get(key) in (None, "", [], {}):
            why = " on import (which contender each label is)" if key == "models" else ""
            err(key, "required" + why)
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
    return task_id, judge, sample, names, _check_models(raw.get("models"), names, err)


def _check_models(models, names: list[str], err) -> dict | None:
    if models in (None, {}, ""):
        return None
    if not isinstance(models, dict) or not all(isinstance(v, str) and v for v in models.values()):
        err("models", "must map each label to a contender name")
        return None
    if names and set(models) != set(names):
        err("models", f"labels {sorted(models)} do not match candidates {names}")
    elif len(set(models.values())) != len(models):
        err("models", "a contender appears under two labels")
    return models


def _check_timing(raw: dict, err) -> tuple[datetime | None, int | None]:
    """(submitted_at, seconds); `blind` is checked here too (it changes nothing on import)."""
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
    return when, seconds


def review_signature(
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
