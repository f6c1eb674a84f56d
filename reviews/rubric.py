"""A campaign's rubric and the one check of answers to them.

`Rubric.of(campaign)` reads the stored rubric (a list of dicts, written by the campaign
definition's reader in tasks/campaigns/definition.py) once into typed `Dimension`s with every default
filled in, so no other module reads `dim.get("min", 1)` by hand.

`labels(n)` (tasks/blinding/render.py) names the outputs a reviewer or arbiter is shown: A..Z, then
AA, AB, ... AZ, BA, ... (spreadsheet columns). More than 26 outputs on one item is unusual,
never an error, and every page, API, export and import names them the same way.

Per-turn scores (a campaign's `score_turns`, docs/campaigns.md): `Rubric.for_item(item)` (or
`Rubric.of(campaign, turns=n)`) adds one synthetic dimension per user turn of the item's task,
keyed "<dimension>@<turn>" (1-based), interval level, no N/A, the campaign's gap rule, so the
submit, the dispute rules and the arbiter's resolve treat a turn score like any dimension.
`rubric.final` is the rubric without them: statistics over rubric dimensions read that one.

`answers_check(...)` parses and checks label-keyed answers (scores per label per dimension,
N/A, preference, flags, comment or note) for three callers, each in its own mode:

- REVIEW: a reviewer's submit (page and API). Every score of every output is required.
- RESOLUTION: an arbiter's decision. Values for at least the disputed parts (the arbitration
  module checks which those are); a reviewer's N/A on a cell makes N/A a legitimate value.
- RECORD: a review record being imported. Scores are as given (a missing one is "not rated");
  values are JSON numbers or null. An arbitration record is checked leniently here
  (fractions, N/A and the note are judged when it is replayed as a resolution).

The rules are the same in all three; the wording of a few messages differs, because each
caller's users (and scripts) already read them: see `WORDING`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reviews.models import COMMENT_MAX_CHARS, FLAGS
from tasks.blinding.render import labels
from tasks.models import Task

TIE, BOTH_BAD = "tie", "both_bad"
NA_WORDS = frozenset({"na", "n/a"})
# Levels whose points are categories or ranks: 4.5 is no point of such a scale, and ordinal
# alpha would count it as a category of its own. Interval and ratio scales take fractions.
WHOLE_LEVELS = ("nominal", "ordinal")


def label_map(order: Sequence[int]) -> dict[str, str]:
    """{"A": "<ItemOutput id>", ...} for a presented order."""
    return {label: str(pk) for label, pk in zip(labels(len(order)), order, strict=True)}


TURN_MARK = "@"


def turn_key(dimension: str, turn: int) -> str:
    """The key of the per-turn score of `turn` (1-based): "turn_quality@3"."""
    return f"{dimension}{TURN_MARK}{turn}"


def is_turn_key(key: str) -> bool:
    """Whether a score key is a per-turn score (rubric keys never contain "@")."""
    return TURN_MARK in key


@dataclass(frozen=True)
class TurnScoring:
    """A campaign's `score_turns`, defaults applied (stored by tasks/campaigns/score_turns.py)."""

    dimension: str
    label: str = ""
    min: int = 1
    max: int = 5
    max_gap: float = 1.0

    @classmethod
    def of(cls, campaign) -> TurnScoring | None:
        return cls.parse(getattr(campaign, "score_turns", None))

    @classmethod
    def parse(cls, raw: dict | None) -> TurnScoring | None:
        """A stored `score_turns` (or a report's copy of it) with its defaults, or None."""
        if not raw or not raw.get("dimension"):
            return None
        gap = raw.get("max_gap")
        return cls(
            dimension=raw["dimension"],
            label=raw.get("label") or raw["dimension"].replace("_", " ").capitalize(),
            min=int(raw.get("min", 1)),
            max=int(raw.get("max", 5)),
            max_gap=1.0 if gap is None else float(gap),
        )

    def dimensions(self, turns: int) -> tuple[Dimension, ...]:
        return tuple(
            Dimension(
                key=turn_key(self.dimension, turn),
                label=f"Turn {turn}: {self.label}",
                min=self.min,
                max=self.max,
                level="interval",
                max_gap=self.max_gap,
                allow_na=False,
                turn=turn,
            )
            for turn in range(1, turns + 1)
        )


@dataclass(frozen=True)
class Dimension:
    """One rubric dimension with its defaults applied (see tasks/campaigns/definition.py `_dimension`)."""

    key: str
    label: str = ""
    description: str = ""
    min: int = 1
    max: int = 5
    anchors: Mapping[str, str] = field(default_factory=dict)
    level: str = "ordinal"
    direction: str = "higher"
    max_gap: float = 1.0
    allow_na: bool = False
    turn: int = 0  # a per-turn score's turn (1-based); 0 for a rubric dimension

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Dimension:
        key = raw["key"]
        gap = raw.get("max_gap")
        return cls(
            key=key,
            label=raw.get("label") or key.replace("_", " ").capitalize(),
            description=raw.get("description") or "",
            min=int(raw.get("min", 1)),
            max=int(raw.get("max", 5)),
            anchors={str(k): str(v) for k, v in (raw.get("anchors") or {}).items()},
            level=raw.get("level") or "ordinal",
            direction=raw.get("direction") or "higher",
            max_gap=1.0 if gap is None else float(gap),
            allow_na=bool(raw.get("allow_na")),
        )

    @property
    def points(self) -> range:
        return range(self.min, self.max + 1)

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    def whole_error(self, value: float) -> str | None:
        """The error for a fractional score on a nominal or ordinal scale, else None."""
        if self.level in WHOLE_LEVELS and not float(value).is_integer():
            return f"must be a whole number on this {self.level} scale"
        return None


@dataclass(frozen=True)
class Rubric:
    dimensions: tuple[Dimension, ...] = ()

    @classmethod
    def of(cls, campaign, *, turns: int = 0) -> Rubric:
        """The campaign's rubric, built once per campaign instance (rebuilt if it changed);
        with `turns`, plus the per-turn dimensions of a task with that many user turns when
        the campaign scores turns."""
        raw = campaign.rubric or []
        cached = campaign.__dict__.get("_rubric_built")
        if cached is None or cached[0] != raw:
            cached = ([dict(d) for d in raw], cls.from_list(raw))
            campaign.__dict__["_rubric_built"] = cached
        rubric = cached[1]
        scoring = TurnScoring.of(campaign) if turns else None
        if scoring is None:
            return rubric
        return cls(rubric.dimensions + scoring.dimensions(turns))

    @classmethod
    def for_task(cls, campaign, task) -> Rubric:
        """The rubric a review of `task` in `campaign` answers (per-turn dimensions included)."""
        return cls.of(campaign, turns=len(task.turns or []))

    @classmethod
    def for_item(cls, item) -> Rubric:
        """The rubric of a review item (its campaign loaded or cached on it). The task's turns
        are read only when the campaign scores turns: every other submit costs no query."""
        campaign = item.campaign
        if TurnScoring.of(campaign) is None:
            return cls.of(campaign)
        turns = item.__dict__.get("_turn_count")
        if turns is None:
            if "task" in item._state.fields_cache:
                turns = len(item.task.turns or [])
            else:
                raw = Task.objects.filter(pk=item.task_id).values_list("turns", flat=True).first()
                turns = len(raw or [])
            item.__dict__["_turn_count"] = turns
        return cls.of(campaign, turns=turns)

    @classmethod
    def from_list(cls, raw: Sequence[Mapping]) -> Rubric:
        return cls(tuple(Dimension.from_dict(d) for d in raw or []))

    @classmethod
    def coerce(cls, rubric: Rubric | Sequence[Mapping]) -> Rubric:
        """A Rubric from a Rubric or a stored list (the statistics take either)."""
        return rubric if isinstance(rubric, Rubric) else cls.from_list(rubric)

    @property
    def keys(self) -> list[str]:
        return [d.key for d in self.dimensions]

    @property
    def final(self) -> Rubric:
        """The rubric's own dimensions, without the per-turn ones."""
        return Rubric(tuple(d for d in self.dimensions if not d.turn))

    @property
    def turn_dimensions(self) -> tuple[Dimension, ...]:
        return tuple(d for d in self.dimensions if d.turn)

    def get(self, key: str) -> Dimension | None:
        return next((d for d in self.dimensions if d.key == key), None)

    def __iter__(self) -> Iterator[Dimension]:
        return iter(self.dimensions)

    def __len__(self) -> int:
        return len(self.dimensions)

    def __contains__(self, key: object) -> bool:
        return any(d.key == key for d in self.dimensions)


# --- answers ----------------------------------------------------------------------------------


class Mode(StrEnum):
    REVIEW = "review"  # every score required
    RESOLUTION = "resolution"  # at least the disputed parts
    RECORD = "record"  # an imported record: as given


@dataclass(frozen=True)
class Wording:
    """How each problem is told. Placeholders: {labels}, {keys}, {lo}, {hi}, {value},
    {choices}, {known}, {unknown}, {length}, {limit}, {whole}, {bad}."""

    scores_type: str = "must be an object keyed by output label"
    label_unknown: str = "unknown output label"
    dims_type: str = "must be an object keyed by dimension"
    dim_unknown: str = "unknown dimension"
    na_refused: str = "N/A is not allowed here"
    required: str = "required"
    not_number: str = "must be a number"
    out_of_range: str = "must be between {lo} and {hi}"
    fraction: str = "{whole}"
    scores_unwanted: str = "this campaign does not collect rubric scores"
    preference_type: str = "must be an output label, tie or both_bad"
    preference_bad: str = "must be an output label, tie or both_bad"
    preference_unwanted: str = "this campaign collects no preference"
    preference_required: str = "required: choose an output, tie or {bad}"
    flags_type: str = "must be an object keyed by output label"
    flags_list: str = "must be a list of: {known}"
    flag_unknown: str = "must be a list of: {known}"
    comment_type: str = "must be text"
    comment_long: str = "at most {limit} characters"
    comment_required: str = ""


WORDING = {
    Mode.RESOLUTION: Wording(
        comment_type="must be a string: a note explaining the decision",
        comment_required="a note explaining the decision is required",
    ),
    Mode.REVIEW: Wording(
        scores_type="must be an object keyed by label",
        label_unknown="unknown label; this item has {labels}",
        na_refused="N/A is not allowed here; choose a score",
        not_number="must be a number from {lo} to {hi}",
        out_of_range="must be from {lo} to {hi}",
        preference_type="must be a string: one of {choices}",
        preference_bad="must be one of {choices}",
        preference_unwanted="this campaign does not ask for a preference",
        flags_type="must be an object keyed by label",
        flags_list="must be a list drawn from {known}",
        flag_unknown="must be a list drawn from {known}",
    ),
    Mode.RECORD: Wording(
        label_unknown="not one of the candidates",
        dim_unknown="unknown dimension (the rubric has {keys})",
        na_refused="N/A (null) is not allowed: this dimension does not allow N/A",
        not_number="must be a number or null",
        out_of_range="{value:g} is outside the rubric range {lo}..{hi}",
        fraction="{value:g}: {whole}",
        preference_type="must be one of the candidate labels, tie, both_bad or null; got {value!r}",
        preference_bad="must be one of the candidate labels, tie, both_bad or null; got {value!r}",
        flags_list="must be a list of flag names",
        flag_unknown="unknown flag(s) {unknown}; known: {known}",
        comment_type="must be a string",
        comment_long="is {length:,} characters long; the limit is {limit:,}",
    ),
}


@dataclass
class Answers:
    """Clean label-keyed answers, or `errors` ({"scores.A.accuracy": message, ...})."""

    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    preference: str | None = None  # a label, "tie", "both_bad" or None
    flags: dict[str, list[str]] = field(default_factory=dict)  # lists kept as given, deduplicated
    comment: str = ""
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class _Check:
    """One run of answers_check: its inputs and the errors found so far."""

    rubric: Rubric
    labels: Sequence[str] | None  # None: unknown (a record whose candidates are invalid)
    mode: Mode
    wording: Wording
    na_ok: Callable[[str, Dimension], bool]
    fraction_ok: Callable[[str, Dimension, float], bool]
    lenient: bool
    errors: dict[str, str] = field(default_factory=dict)

    def err(self, path: str, template: str, **values) -> None:
        self.errors.setdefault(path, template.format(**values))

    def known_label(self, label: str) -> bool:
        return self.labels is None or label in self.labels


@dataclass(frozen=True)
class CheckOptions:
    """What one check asks for and lets through beyond the rubric's own rules.

    `wants_scores` / `wants_preference`: the campaign's mode asks for them. `na_ok(label,
    dim)`: N/A allowed on this cell although the dimension does not allow it;
    `fraction_ok(label, dim, value)`: a fraction allowed (an agreed mean kept by an arbiter).
    `lenient`: an arbitration record, whose fractions, N/A and note are judged when it is
    replayed.
    """

    wants_scores: bool = True
    wants_preference: bool = True
    na_ok: Callable[[str, Dimension], bool] | None = None
    fraction_ok: Callable[[str, Dimension, float], bool] | None = None
    lenient: bool = False


def answers_check(
    *,
    rubric: Rubric,
    labels: Sequence[str] | None,
    data: Mapping[str, Any],
    mode: Mode,
    options: CheckOptions = CheckOptions(),
) -> Answers:
    """Parse and check answers keyed by output label; every problem is in `errors`.

    `data` holds "scores", "preference", "flags" and "comment" ("note" for a resolution);
    other keys are the caller's. `options`: what this check asks for and lets through.
    """
    check = _Check(
        rubric=rubric,
        labels=labels,
        mode=mode,
        wording=WORDING[mode],
        na_ok=options.na_ok or (lambda label, dim: False),
        fraction_ok=options.fraction_ok or (lambda label, dim, value: False),
        lenient=options.lenient,
    )
    scores = _scores(check, data.get("scores"), options.wants_scores)
    preference = _preference(check, data.get("preference"), options.wants_preference)
    flags = _flags(check, data.get("flags"))
    text_field = "note" if mode == Mode.RESOLUTION else "comment"
    comment = _comment(check, text_field, data.get(text_field))
    return Answers(scores, preference, flags, comment, check.errors)


def _scores(check: _Check, raw, wanted: bool) -> dict[str, dict[str, float | None]]:
    w, out = check.wording, {}
    if raw is None:
        raw = {}
    elif not isinstance(raw, dict):
        check.err("scores", w.scores_type)
        raw = {}
    shown = ", ".join(check.labels or [])
    for label, per_dim in raw.items():
        if not check.known_label(label):
            check.err(f"scores.{label}", w.label_unknown, labels=shown)
            continue
        if not wanted:
            continue
        if per_dim is None:
            per_dim = {}
        if not isinstance(per_dim, dict):
            check.err(f"scores.{label}", w.dims_type)
            continue
        out[label] = {}
        for key, value in per_dim.items():
            dim = check.rubric.get(key)
            if dim is None:
                keys = ", ".join(check.rubric.keys) or "none"
                check.err(f"scores.{label}.{key}", w.dim_unknown, keys=keys)
                continue
            given, ok = _score(check, label, dim, value)
            if ok and given is not _BLANK:
                out[label][key] = given
    if not wanted and raw:
        check.err("scores", w.scores_unwanted)
    if wanted and check.mode == Mode.REVIEW:
        for label in check.labels or []:
            for dim in check.rubric:
                path = f"scores.{label}.{dim.key}"
                if dim.key not in out.get(label, {}) and f"scores.{label}" not in check.errors:
                    check.err(path, w.required)
    return out


_BLANK = object()  # a form's empty cell: no answer (required in a review)


def _score(check: _Check, label: str, dim: Dimension, value) -> tuple[Any, bool]:
    """(value, ok) for one cell: a float, None for N/A, or _BLANK."""
    w, path = check.wording, f"scores.{label}.{dim.key}"
    text = check.mode != Mode.RECORD  # forms send text; records are JSON
    if isinstance(value, str) and text:
        value = value.strip()
        if value == "":
            return _BLANK, True
        if value.lower() in NA_WORDS:
            value = None
    if value is None:
        if dim.allow_na or check.lenient or check.na_ok(label, dim):
            return None, True
        check.err(path, w.na_refused)
        return None, False
    number = _number(value, text)
    if number is None:
        check.err(path, w.not_number, lo=dim.min, hi=dim.max)
        return None, False
    if not dim.min <= number <= dim.max:
        check.err(path, w.out_of_range, lo=dim.min, hi=dim.max, value=number)
        return None, False
    whole = dim.whole_error(number)
    if whole and not check.lenient and not check.fraction_ok(label, dim, number):
        check.err(path, w.fraction, whole=whole, value=number)
        return None, False
    return number, True


def _number(value, text: bool) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and text:
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _preference(check: _Check, raw, wanted: bool) -> str | None:
    w = check.wording
    names = list(check.labels or [])
    choices = ", ".join([*names, TIE, BOTH_BAD])
    if raw is not None and not isinstance(raw, str):
        check.err("preference", w.preference_type, choices=choices, value=raw)
        return None
    choice = (raw or "").strip() if check.mode != Mode.RECORD else raw or ""
    if choice and not wanted:
        check.err("preference", w.preference_unwanted)
        return None
    if choice in names or choice in (TIE, BOTH_BAD):
        return choice
    if choice:
        check.err("preference", w.preference_bad, choices=choices, value=raw)
    elif wanted and check.mode == Mode.REVIEW:
        bad = "both bad" if len(names) == 2 else "all bad"
        check.err("preference", w.preference_required, bad=bad)
    return None


def _flags(check: _Check, raw) -> dict[str, list[str]]:
    w, out = check.wording, {}
    known = ", ".join(FLAGS)
    if raw is None or (check.mode == Mode.RECORD and not raw):
        return out
    if not isinstance(raw, dict):
        check.err("flags", w.flags_type)
        return out
    for label, names in raw.items():
        path = f"flags.{label}"
        if not check.known_label(label):
            check.err(path, w.label_unknown, labels=", ".join(check.labels or []))
            continue
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            check.err(path, w.flags_list, known=known)
            continue
        unknown = [n for n in names if n not in FLAGS]
        if unknown:
            check.err(path, w.flag_unknown, known=known, unknown=", ".join(unknown))
            continue
        # Empty lists are kept: an arbiter's empty list means "this output has no flags".
        out[label] = list(dict.fromkeys(names))
    return out


def _comment(check: _Check, where: str, raw) -> str:
    """The comment (or an arbiter's note), stripped unless it is a record's."""
    w = check.wording
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        check.err(where, w.comment_type)
        return ""
    text = raw if check.mode == Mode.RECORD else raw.strip()
    if w.comment_required and not text:
        check.err(where, w.comment_required)
    elif len(text) > COMMENT_MAX_CHARS and not check.lenient:
        check.err(where, w.comment_long, length=len(text), limit=COMMENT_MAX_CHARS)
    return text
