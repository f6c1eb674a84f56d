"""Bradley-Terry ratings on the joint cluster bootstrap: intervals, bounds, rank intervals, P(best).

The point estimate is `bradley_terry.bradley_terry`'s. Intervals come from the report's one
(B x T) draw matrix: a round's win matrix is the draw-weighted sum of each test case's win
matrix, solved by the same batched Newton method.

Undefeated / winless: the point estimate of a contender that never lost is set by the ridge
penalty (2167 / 1927 / 1694 / 1470 Elo for penalties 0.001 ... 1 on one data set), so its
upper side is unknown. It keeps a numeric ``rating`` but gains ``rating_bound`` (">= 1610",
the bootstrap's lower quantile), and the open side of ``ci95`` is null; a winless contender
the mirror ("<= 820"). For the rank rule an open side is infinite.

Ranks: ``rank`` is the non-overlap rule (1 + the number of contenders whose lower bound is
above this one's upper bound); ``rank_ci95`` the 2.5-97.5% quantiles of the contender's rank
over the bootstrap rounds (rank in a round = 1 + the number rated strictly higher) and
``p_best`` the share of rounds in which nobody is rated higher.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import joint
from .bradley_terry import ELO, RIDGE, _newton, bradley_terry, mle_exists, ranks, to_elo


def joint_ratings(battles: pd.DataFrame, contenders: list, weights: np.ndarray) -> dict:
    """``battles``: item, cluster (index into ``weights``' columns), a, b, score.

    Returns the `bradley_terry` dict (ci95 / rank from the joint bootstrap) plus per contender
    ``rating_bound``, ``rank_ci95``, ``p_best`` and the ``n_items`` (test cases) it rests on."""
    bt = bradley_terry(battles, contenders, n_boot=0)
    bt.update(
        rating_bound=dict.fromkeys(contenders),
        rank_ci95=dict.fromkeys(contenders),
        p_best=dict.fromkeys(contenders),
        n_cases=int(battles["cluster"].nunique()) if len(battles) else 0,
        ci_reason=None,
    )
    rated = [c for c in contenders if bt["ratings"].get(c) is not None]
    if len(rated) < 2:
        return bt
    if bt["reason"] and bt["reason"].startswith("no confidence intervals"):
        bt["reason"] = None
    n = bt["n_cases"]
    if n < joint.MIN_ITEMS or len(weights) == 0:
        why = joint.too_few(n) if n < joint.MIN_ITEMS else "no bootstrap rounds"
        bt["ci_reason"] = f"no intervals and no ranks: {why}"
        return bt
    boot = _boot_elo(battles, rated, bt, weights)
    bt["bootstrap"] = {
        "rounds": int(len(weights)),
        "ridge_rounds": int(boot["ridge_rounds"]),
        "unit": "test case",
    }
    lo, hi = np.percentile(boot["elo"], [2.5, 97.5], axis=0)
    lo_rank, hi_rank = lo.copy(), hi.copy()
    for i, c in enumerate(rated):
        ci = [float(lo[i]), float(hi[i])]
        if c in bt["undefeated"]:
            ci[1], hi_rank[i] = None, np.inf
            bt["rating_bound"][c] = f">= {lo[i]:.0f}"
        elif c in bt["winless"]:
            ci[0], lo_rank[i] = None, -np.inf
            bt["rating_bound"][c] = f"<= {hi[i]:.0f}"
        bt["ci95"][c] = ci
    bt["rank"].update(zip(rated, ranks(lo_rank, hi_rank), strict=True))
    elo = boot["elo"]
    round_rank = 1 + (elo[:, None, :] > elo[:, :, None] + 1e-9).sum(axis=2)
    r_lo, r_hi = np.percentile(round_rank, [2.5, 97.5], axis=0)
    for i, c in enumerate(rated):
        bt["rank_ci95"][c] = [int(np.floor(r_lo[i])), int(np.ceil(r_hi[i]))]
        bt["p_best"][c] = float((round_rank[:, i] == 1).mean())
    return bt


def _boot_elo(battles: pd.DataFrame, rated: list, bt: dict, weights: np.ndarray) -> dict:
    k = len(rated)
    index = {c: i for i, c in enumerate(rated)}
    keep = battles["a"].isin(index) & battles["b"].isin(index)
    b = battles[keep]
    ai, bi = b["a"].map(index).to_numpy(), b["b"].map(index).to_numpy()
    score = b["score"].to_numpy(dtype=float)
    cl = b["cluster"].to_numpy(dtype=int)
    t = weights.shape[1]
    per_case = np.zeros((t, k, k))
    np.add.at(per_case, (cl, ai, bi), score)
    np.add.at(per_case, (cl, bi, ai), 1 - score)
    w = (weights @ per_case.reshape(t, -1)).reshape(len(weights), k, k)
    exists = mle_exists(w)
    ridge = np.where(exists, 0.0, RIDGE)
    elo = np.array([bt["ratings"][c] for c in rated])
    theta = (elo - elo.mean()) / ELO
    start = np.repeat(theta[None, :], len(weights), axis=0)
    return {"elo": to_elo(_newton(start, w, ridge)), "ridge_rounds": int((~exists).sum())}


def holm(p_values: list) -> list:
    """Holm (1979) step-down adjusted p-values; None stays None."""
    idx = [i for i, p in enumerate(p_values) if p is not None]
    order = sorted(idx, key=lambda i: p_values[i])
    m, out, running = len(order), list(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out
