"""The blinding index of Bang, Ni and Davis (2004), for the blinding probe.

Bang's index for one arm of a two-arm trial, with no "don't know" answers, is the share of
correct guesses minus the share of wrong ones: BI = (correct - wrong) / n = 2p - 1, where p is
the share correct. +1: everyone named the arm correctly; 0: guesses as good as a coin; -1:
everyone named the other arm. Its large-sample variance (Bang et al. 2004, eq. for the
two-by-three table with no "don't know") is 4 p (1 - p) / n, and the 95% interval is the Wald
interval BI +- 1.96 sqrt(var).

With k contenders a random guess is right with chance c = 1/k, not 1/2, so the index is
taken relative to chance: BI = (p - c) / (1 - c) at or above chance and (p - c) / c below it.
This keeps Bang's anchors (+1 all correct, 0 chance, -1 all wrong) and is Bang's index exactly
when k = 2 (c = 1/2 gives 2p - 1 on both sides); its interval is the Wald interval of p
mapped through the same line at the estimate's side, clipped to [-1, 1].
"""

from __future__ import annotations

import math

# Fewer guesses than this give no index: the interval would span most of [-1, 1].
MIN_GUESSES = 10
Z95 = 1.959963984540054


def bang_index(*, correct: int, n: int, choices: int) -> dict:
    """{"value", "ci95", "reason"} for `correct` right guesses out of `n` among `choices`
    contenders (value and ci95 None, with the reason, below MIN_GUESSES)."""
    if choices < 2:
        return {"value": None, "ci95": None, "reason": "fewer than two contenders to tell apart"}
    if n < MIN_GUESSES:
        return {
            "value": None,
            "ci95": None,
            "reason": f"{n} guess{'es' if n != 1 else ''}; the index needs at least {MIN_GUESSES}",
        }
    chance = 1 / choices
    p = correct / n
    slope = 1 / (1 - chance) if p >= chance else 1 / chance
    value = (p - chance) * slope
    half = Z95 * math.sqrt(p * (1 - p) / n) * slope
    ci = [max(-1.0, value - half), min(1.0, value + half)]
    return {"value": value, "ci95": ci, "reason": None}


def verdict(index: dict) -> str:
    """ "could_tell" when the interval lies wholly above 0 (better than chance), "guessed"
    when it contains 0, "misled" when it lies wholly below (systematically wrong), and
    "too_few" without an index."""
    if index["value"] is None:
        return "too_few"
    low, high = index["ci95"]
    if low > 0:
        return "could_tell"
    if high < 0:
        return "misled"
    return "guessed"
