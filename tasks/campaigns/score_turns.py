"""A campaign's per-turn scores (`score_turns`, docs/campaigns.md "Scoring each turn").

`{"dimension": "turn_quality", "min": 1, "max": 5}` (omitted or null = only the final reply is
scored, with the rubric). On a conversation task (one with `turns`) reviewers then also score
the reply to every user turn on that one scale; reviews/rubric.py turns it into one dimension
per turn ("turn_quality@3"), so disputes and arbitration treat a turn like any dimension.
`label` (shown to reviewers) and `max_gap` (the dispute rule, 1 as for a rubric dimension) may
be given too. Definition files, the API and the campaign form all read it here.
"""

from __future__ import annotations

from tasks.campaigns.definition_reader import DefinitionReader
from tasks.campaigns.rubric import KEY_RE, MAX_SCALE_STEPS, SCALE_LIMIT
from tasks.models import Mode, TestSet

SCORE_TURNS_KEYS = ("dimension", "label", "min", "max", "max_gap")
SCORE_TURNS_SCHEMA = {
    "type": ["object", "null"],
    "description": "per-turn scores of conversation tasks (null: only the final reply)",
    "properties": {
        "dimension": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$"},
        "label": {"type": "string", "maxLength": 100},
        "min": {"type": "integer", "default": 1},
        "max": {"type": "integer", "default": 5},
        "max_gap": {"type": "number", "default": 1},
    },
    "required": ["dimension"],
    "additionalProperties": False,
}
SHAPE = '{"dimension": "turn_quality", "min": 1, "max": 5}'


def score_turns_read(
    data: dict, *, rubric: list[dict], mode: str, errors: list[str]
) -> dict | None:
    """The definition's `score_turns` with its defaults filled in, or None (off or refused).
    Problems go to `errors` as "score_turns.max: must be greater than min"."""
    raw = data.get("score_turns")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        errors.append(f"score_turns: must be an object {SHAPE}, or null for none")
        return None
    before = len(errors)
    r, where = DefinitionReader(errors), "score_turns."
    r.unknown(raw, set(SCORE_TURNS_KEYS), where)
    dimension = r.string(raw, "dimension", where, required=True, max_len=63)
    if dimension and not KEY_RE.match(dimension):
        errors.append(f"{where}dimension: lowercase letters, digits and _ (starting with a letter)")
    elif dimension in {d.get("key") for d in rubric}:
        errors.append(
            f"{where}dimension: {dimension!r} is a rubric dimension already; give the per-turn "
            "score a name of its own (e.g. 'turn_quality')"
        )
    lo = r.integer(raw, "min", where, default=1, lo=-SCALE_LIMIT, hi=SCALE_LIMIT)
    hi = r.integer(raw, "max", where, default=5, lo=-SCALE_LIMIT, hi=SCALE_LIMIT)
    if isinstance(lo, int) and isinstance(hi, int) and hi <= lo:
        errors.append(f"{where}max: must be greater than min")
    elif isinstance(lo, int) and isinstance(hi, int) and hi - lo > MAX_SCALE_STEPS:
        errors.append(f"{where}max: a scale has at most {MAX_SCALE_STEPS + 1} points")
    gap = r.number(raw, "max_gap", where, default=1, lo=0, hi=2 * SCALE_LIMIT)
    label = r.string(raw, "label", where, max_len=100)
    if mode == Mode.PAIRWISE:
        errors.append(
            "score_turns: mode 'pairwise' collects no scores; choose mode 'both' to score "
            "each turn and ask which output is better"
        )
    if len(errors) > before:
        return None
    return {
        "dimension": dimension,
        "label": label or dimension.replace("_", " ").capitalize(),
        "min": lo,
        "max": hi,
        "max_gap": gap,
    }


def score_turns_warnings(score_turns: dict | None, testset: TestSet | None) -> list[str]:
    """The note for per-turn scores of a test set with no conversation task."""
    if score_turns is None or testset is None:
        return []
    if any(turns for turns in testset.tasks.values_list("turns", flat=True)):
        return []
    return [
        f"score_turns: {testset} has no conversation task (none has turns), so no turn "
        "is scored; only the final reply is"
    ]
