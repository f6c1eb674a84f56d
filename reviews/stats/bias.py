"""Position bias: how often the output shown in position A wins, with a Wilson interval."""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> list[float] | None:
    """Wilson (1927) score interval for a binomial proportion."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def position_bias(first_won, n_options, *, source: str) -> dict:
    """``first_won``: per decisive judgement, whether position A won; ``n_options``: how many
    outputs were shown (chance = 1 / n_options). Returns the rate, its CI, n, the chance rate
    and a two-sided binomial p-value against it (computed when all judgements share a chance)."""
    won = np.asarray(first_won, dtype=bool)
    n = int(len(won))
    out = {
        "first_position_win_rate": None,
        "ci95": None,
        "n": n,
        "expected": None,
        "p_value": None,
        "source": source,
        "reason": None,
    }
    if n == 0:
        out["reason"] = "no decisive judgements (a preference or a strictly best output) yet"
        return out
    k = int(won.sum())
    chance = 1 / np.asarray(n_options, dtype=float)
    out["first_position_win_rate"] = k / n
    out["ci95"] = wilson(k, n)
    out["expected"] = float(chance.mean())
    if np.allclose(chance, chance[0]):
        from scipy.stats import binomtest  # lazy: see bradley_terry.fit

        out["p_value"] = float(binomtest(k, n, float(chance[0])).pvalue)
    return out
