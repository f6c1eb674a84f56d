"""Which items a review policy gives to people: pure functions of plain data, no ORM."""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Iterable

from reviews.disputes.rules import ReviewData, settle
from reviews.rubric import Rubric
from reviews.stats.calibration import majority

AUDIT = "audit"
JUDGE_FAILED = "judge_failed"  # no judgement of the item succeeded: people must settle it


def audit_keys(*, campaign_id: int, share: float, keys: Iterable[tuple]) -> set[tuple]:
    """The audit draw: round(share x n) of the campaign's items, at random but reproducibly.

    Each item's place in the draw is a hash of the campaign and the item's (task, sample,
    pair), so the draw is the same whenever it is made (items are routed one at a time as
    their judgements finish) and whatever the judge said (an audit chosen after seeing the
    judge's answers would no longer check the judge honestly)."""
    keys = list(keys)
    ranked = sorted(
        keys,
        key=lambda k: hashlib.sha256(f"audit:{campaign_id}:{k}".encode()).hexdigest(),
    )
    # Half up, not Python's banker's rounding: 10% of 5 items audits one, not none.
    return set(ranked[: math.floor(share * len(keys) + 0.5)])


def judge_reviews(judgements: Iterable[tuple[dict | None, str]]) -> list[ReviewData]:
    """A judge's done judgements (scores un-permuted, preference) as reviews of the item."""
    return [
        ReviewData(
            scores={str(o): dict(dims or {}) for o, dims in (scores or {}).items()},
            preference=preference or "",
        )
        for scores, preference in judgements
    ]


def judge_uncertain(*, rubric: Rubric, outputs: list[str], reviews: list[ReviewData]) -> bool:
    """The judge's samples or orders disagree, by the rule that disputes two reviewers: a
    score gap above the dimension's max_gap, N/A against a score, another preference."""
    if len(reviews) < 2:
        return False
    return settle(rubric=rubric, outputs=outputs, reviews=reviews).disputed


def judge_final(*, outputs: list[str], reviews: list[ReviewData], judge: str) -> dict:
    """The judge's combined answer as an item's final outcome: per output and dimension the
    median of its scores (N/A when it gave none), the majority preference (a draw: tie)."""
    scores: dict[str, dict] = {}
    for output in outputs:
        dims = sorted({d for r in reviews for d in r.scores.get(output, {})})
        scores[output] = {
            dim: _median([r.scores.get(output, {}).get(dim) for r in reviews]) for dim in dims
        }
    chosen = [r.preference for r in reviews if r.preference]
    return {
        "scores": scores,
        "preference": majority(chosen),
        "flags": {},
        "arbitrated": [],
        "corrections": [],
        "source": "judge",
        "judge": judge,
    }


def _median(values: list) -> float | None:
    rated = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return float(statistics.median(rated)) if rated else None


def item_reasons(*, policy: dict, facts: dict, uncertain: bool, audited: bool) -> list[str]:
    """The policy's rules that send this item to people (in the policy's order), then
    "audit". ``facts``: {"checks_failed": bool, "tier": str, "case_type": str}."""
    reasons = []
    for rule in policy["humans"]:
        kind, _, value = rule.partition(":")
        if (
            (rule == "judge_uncertain" and uncertain)
            or (rule == "checks_failed" and facts["checks_failed"])
            or (kind in ("tier", "case_type") and facts[kind] == value)
        ):
            reasons.append(rule)
    if audited:
        reasons.append(AUDIT)
    return reasons
