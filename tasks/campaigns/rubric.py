"""A campaign's rubric: its dimensions read once, every default filled in and every problem
listed (definition files, the API, the campaign form's text box and its rubric builder all
read a rubric here; per-turn scores reuse its scale bounds, tasks/campaigns/score_turns.py)."""

from __future__ import annotations

import re

from tasks.campaigns.definition_reader import DefinitionReader

KEY_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
LEVELS = ("ordinal", "interval", "ratio", "nominal")

DIMENSION_KEYS = {
    "key",
    "label",
    "description",
    "min",
    "max",
    "anchors",
    "level",
    "direction",
    "max_gap",
    "allow_na",
}
# Bounds that keep every figure computable (the statistics work in floats), and a scale the
# review page can draw (one button per point).
SCALE_LIMIT = 1000
MAX_SCALE_STEPS = 100
# Sane bounds of what a reviewer's page carries: a rubric past them is a mistake (a pasted
# file), and each dimension is drawn, masked and checked on every review page.
MAX_DIMENSIONS = 50
ANCHOR_MAX_CHARS = 2000


def _dimension(raw, index: int, r: DefinitionReader) -> dict | None:
    where = f"rubric[{index}]."
    if not isinstance(raw, dict):
        r.errors.append(f"rubric[{index}]: must be an object")
        return None
    r.unknown(raw, DIMENSION_KEYS, where)
    key = r.string(raw, "key", where, required=True, max_len=63)
    if key and not KEY_RE.match(key):
        r.errors.append(f"{where}key: lowercase letters, digits and _ (starting with a letter)")
    lo = r.integer(raw, "min", where, default=1, lo=-SCALE_LIMIT, hi=SCALE_LIMIT)
    hi = r.integer(raw, "max", where, default=5, lo=-SCALE_LIMIT, hi=SCALE_LIMIT)
    if isinstance(lo, int) and isinstance(hi, int) and hi <= lo:
        r.errors.append(f"{where}max: must be greater than min")
    elif isinstance(lo, int) and isinstance(hi, int) and hi - lo > MAX_SCALE_STEPS:
        # The review page draws one button per point.
        r.errors.append(f"{where}max: a scale has at most {MAX_SCALE_STEPS + 1} points")
    anchors_raw = raw.get("anchors") or {}
    anchors = {}
    if not isinstance(anchors_raw, dict):
        r.errors.append(f"{where}anchors: must be an object mapping a point to its text")
    else:
        for point, text in anchors_raw.items():
            try:
                number = int(str(point))
            except ValueError:
                r.errors.append(f"{where}anchors.{point}: must be a point of the scale")
                continue
            if isinstance(lo, int) and isinstance(hi, int) and not lo <= number <= hi:
                r.errors.append(f"{where}anchors.{point}: outside {lo}..{hi}")
            if not isinstance(text, str):
                r.errors.append(f"{where}anchors.{point}: must be a string")
                continue
            if len(text) > ANCHOR_MAX_CHARS:
                r.errors.append(
                    f"{where}anchors.{point}: at most {ANCHOR_MAX_CHARS:,} characters "
                    f"(this one has {len(text):,})"
                )
                continue
            anchors[str(number)] = text
    level = raw.get("level", "ordinal")
    if level not in LEVELS:
        r.errors.append(f"{where}level: one of {', '.join(LEVELS)}")
    direction = raw.get("direction", "higher")
    if direction not in ("higher", "lower"):
        r.errors.append(f"{where}direction: 'higher' or 'lower' (which end is better)")
    return {
        "key": key,
        "label": r.string(raw, "label", where, max_len=100) or key.replace("_", " ").capitalize(),
        "description": r.string(raw, "description", where, max_len=2000),
        "min": lo,
        "max": hi,
        "anchors": dict(sorted(anchors.items(), key=lambda kv: int(kv[0]))),
        "level": level,
        "direction": direction,
        "max_gap": r.number(raw, "max_gap", where, default=1, lo=0, hi=2 * SCALE_LIMIT),
        "allow_na": r.boolean(raw, "allow_na", where, False),
    }


def rubric_validate(raw) -> tuple[list[dict], list[str]]:
    """A definition's rubric read once: its dimensions with every default filled in, and every
    problem as "rubric[1].max: must be greater than min". Definition files, the API, the
    campaign form's text box and its rubric builder (tasks/campaigns/rubric_builder.py) all read a
    rubric here."""
    errors: list[str] = []
    if not isinstance(raw, list):
        return [], ["rubric: must be a list of dimensions"]
    if len(raw) > MAX_DIMENSIONS:
        return [], [f"rubric: at most {MAX_DIMENSIONS} dimensions (this one has {len(raw)})"]
    r = DefinitionReader(errors)
    rubric = [dim for i, item in enumerate(raw) if (dim := _dimension(item, i, r)) is not None]
    keys = [d["key"] for d in rubric]
    for key in sorted({k for k in keys if keys.count(k) > 1}):
        errors.append(f"rubric: dimension {key!r} appears twice")
    return rubric, errors
