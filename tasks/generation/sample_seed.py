"""Each sample gets its own seed, so repeated samples measure something.

A contender's ``params.seed`` is the seed of sample 0; sample i is sent ``seed + i``. With one
seed for every sample, an endpoint that honours seeds returns the same answer N times, and
stability and pass@k would read "perfectly stable" about nothing. A campaign may still pin one
seed for all samples (``"sample_seeds": "fixed"``, for a reproducibility check); the report
then says stability and pass@k are not measured for the contenders with a seed.
"""

from __future__ import annotations

import copy

DERIVED, FIXED = "derived", "fixed"
MODES = (DERIVED, FIXED)


def sample_params(params: dict | None, sample_index: int, *, mode: str = DERIVED) -> dict:
    """The params sent for one sample: ``seed + sample_index`` unless the seed is pinned."""
    out = dict(params or {})
    seed = out.get("seed")
    if mode == DERIVED and isinstance(seed, int) and not isinstance(seed, bool):
        out["seed"] = seed + sample_index
    return out


def for_sample(contender, sample_index: int, *, mode: str = DERIVED):
    """A copy of the contender (never saved) whose params carry this sample's seed."""
    shown = copy.copy(contender)
    shown.params = sample_params(contender.params, sample_index, mode=mode)
    return shown


def pinned(params: dict | None, mode: str) -> bool:
    """Whether every sample of this contender goes out with the same seed."""
    seed = (params or {}).get("seed")
    return mode == FIXED and isinstance(seed, int) and not isinstance(seed, bool)
