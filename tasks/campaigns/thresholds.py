"""Pass criteria of a campaign definition: one pass threshold, or one per tier.

``pass_threshold`` may be a number (every sample) or ``{"base": .., "advanced": ..,
"boundary": ..}`` (each tier judged against its own; a tier left out uses the smallest given).
The campaign keeps a single number in ``Campaign.pass_threshold`` (the smallest, so older
readers stay conservative) and the per-tier mapping in ``weights["pass_thresholds"]``, beside
the other settings the report reads; ``weights.min_quality`` is the decision score's quality
floor (default: the pass threshold).
"""

from __future__ import annotations

from tasks.models import Tier

TIERS = tuple(Tier.values)


def read_pass_threshold(data: dict, weights: dict, errors: list[str]) -> float:
    """The number to store in ``pass_threshold``; a per-tier mapping goes into ``weights``."""
    value = data.get("pass_threshold", 0.6)
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(TIERS))
        for key in unknown:
            errors.append(f"pass_threshold.{key}: unknown tier (one of {', '.join(TIERS)})")
        good = {}
        for tier in TIERS:
            if tier in value:
                v = value[tier]
                if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
                    errors.append(f"pass_threshold.{tier}: must be a number between 0 and 1")
                else:
                    good[tier] = float(v)
        if not good and not unknown:
            errors.append("pass_threshold: give a threshold for at least one tier")
        if good:
            weights["pass_thresholds"] = good
            return min(good.values())
        return 0.6
    if value is None:
        errors.append("pass_threshold: must be a number, not null (leave it out for 0.6)")
        return 0.6
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.append("pass_threshold: must be a number or an object of per-tier numbers")
        return 0.6
    if not 0 <= value <= 1:
        errors.append("pass_threshold: must be between 0 and 1")
    weights.pop("pass_thresholds", None)
    return float(value)
