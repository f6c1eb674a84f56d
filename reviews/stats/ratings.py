"""Bradley-Terry ratings on the joint cluster bootstrap: intervals, bounds, rank intervals, P(best).

The point estimate is `bradley_terry.bradley_terry`'s. Intervals come from the report's one
(B x T) draw matrix: a round's win matrix is the draw-weighted sum of each test case's win
matrix, solved by the same batched Newton method.

Undefeated / winless: the point estimate of a contender that never lost is set by the ridge
penalty (2167 / 1927 / 1694 / 1470 Elo for penalties 0.001 ... 1 on one data set), so its
upper side is unknown. It keeps a numeric ``rating`` but gains ``rating_bound`` from the data,
not the penalty: the one-sided 95% exact (Clopper-Pearson) bound on its win probability against
the field, on the Elo scale (`exact_bounds`; 15 wins of 15 -> about +262 over the opponents).
The bound is given at any number of test cases (with ``small_sample`` below 30); from 10 test
cases on it is also the known side of ``ci95``, whose open side is null. A winless contender is
the mirror ("<= 820"). For the rank rule an open side is infinite.

Ranks, one story: ``rank_ci95`` holds the 2.5-97.5% quantiles of the contender's rank over the
bootstrap rounds (rank in a round = 1 + the number rated strictly higher) and ``p_best`` the
share of rounds in which it is best, a tie for best split evenly (so P(best) sums to 1; all
ties give 1/K each). ``rank``, the non-overlap rule (1 + the number of contenders whose lower
bound is above this one's upper bound), is kept only where it lies inside the rank interval.
A zero-width interval (every round agrees) is null with "all equal (n=...)" in ``ci_reasons``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reviews.stats import joint
from reviews.stats.bradley_terry import (
    CENTER,
    ELO,
    RIDGE,
    bradley_terry,
    mle_exists,
    newton,
    ranks,
    to_elo,
)


def joint_ratings(battles: pd.DataFrame, contenders: list, weights: np.ndarray) -> dict:
    """``battles``: item, cluster (index into ``weights``' columns), a, b, score.

    Returns the `bradley_terry` dict (ci95 / rank from the joint bootstrap) plus per contender
    ``rating_bound``, ``rank_ci95``, ``p_best``, ``ci_reasons`` and the ``n_cases`` (test
    cases) it rests on."""
    bt = bradley_terry(battles, contenders, n_boot=0)
    bt.update(
        rating_bound=dict.fromkeys(contenders),
        rank_ci95=dict.fromkeys(contenders),
        p_best=dict.fromkeys(contenders),
        ci_reasons=dict.fromkeys(contenders),
        n_cases=int(battles["cluster"].nunique()) if len(battles) else 0,
        ci_reason=None,
    )
    rated = [c for c in contenders if bt["ratings"].get(c) is not None]
    if len(rated) < 2:
        return bt
    if bt["reason"] and bt["reason"].startswith("no confidence intervals"):
        bt["reason"] = None
    bounds = exact_bounds(battles, rated, bt)
    for c, bound in bounds.items():
        bt["rating_bound"][c] = f"{'>=' if c in bt['undefeated'] else '<='} {bound:.0f}"
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
    lo_rank, hi_rank = _intervals(bt, rated, boot["elo"], bounds)
    rank_story(bt, rated, boot["elo"], lo_rank, hi_rank)
    return bt


def exact_bounds(battles: pd.DataFrame, rated: list, bt: dict, level: float = 0.95) -> dict:
    """The one-sided exact (Clopper-Pearson) bound of each undefeated / winless contender, on
    the Elo scale: ``{contender: rating}``.

    Its win probability against the field (a tie = half a win) has a one-sided ``level`` bound
    p (15 wins of 15: p >= 0.05 ** (1 / 15) = 0.8190); the bound is the opponents' mean rating
    (weighted by games) + 400 log10(p / (1 - p)) (+262 for 15 of 15). The opponents' ratings
    are those of contenders that both won and lost (their ratings come from the data); when
    every opponent never lost or never won (two contenders, 15-0), nobody's rating comes from
    the data and the pair is placed around the centre: 1000 +- the difference / 2."""
    from scipy.stats import beta  # lazy: see bradley_terry.fit

    degenerate = set(bt["undefeated"]) | set(bt["winless"])
    core = {c: bt["ratings"][c] for c in rated if c not in degenerate}
    out = {}
    for c in [c for c in rated if c in degenerate]:
        mine = battles[(battles["a"] == c) | (battles["b"] == c)]
        mine = mine[mine["a"].isin(rated) & mine["b"].isin(rated)]
        if mine.empty:
            continue
        score = np.where(mine["a"] == c, mine["score"], 1 - mine["score"]).astype(float)
        games, won = float(len(score)), float(score.sum())
        if c in bt["undefeated"]:
            p = float(beta.ppf(1 - level, won, games - won + 1)) if won > 0 else 0.0
        else:
            p = float(beta.ppf(level, won + 1, games - won)) if won < games else 1.0
        p = min(max(p, 1e-12), 1 - 1e-12)
        delta = ELO * math.log(p / (1 - p))
        opponents = np.where(mine["a"] == c, mine["b"], mine["a"])
        known = [core[o] for o in opponents if o in core]
        centre = float(np.mean(known)) if known else CENTER - delta / 2
        out[c] = round(centre + delta, 1)  # as shown: one decimal of Elo
    return out


def _intervals(bt: dict, rated: list, elo: np.ndarray, bounds: dict):
    """ci95 per contender from the rounds (an open side for undefeated / winless ones, whose
    known side is the exact bound; "all equal" where every round agrees), and the ends the
    rank rule uses (an open side is infinite; no interval, the point)."""
    lo_rank = np.array([bt["ratings"][c] for c in rated], dtype=float)
    hi_rank = lo_rank.copy()
    for i, c in enumerate(rated):
        ci, reason = joint.interval(elo[:, i], bt["n_cases"])
        if c in bt["undefeated"] and c in bounds:
            ci, reason, lo_rank[i], hi_rank[i] = [bounds[c], None], None, bounds[c], np.inf
        elif c in bt["winless"] and c in bounds:
            ci, reason, lo_rank[i], hi_rank[i] = [None, bounds[c]], None, -np.inf, bounds[c]
        elif ci is not None:
            lo_rank[i], hi_rank[i] = ci
        bt["ci95"][c], bt["ci_reasons"][c] = ci, reason
    return lo_rank, hi_rank


def rank_story(bt: dict, rated: list, elo: np.ndarray, lo_rank, hi_rank) -> None:
    """rank_ci95 (2.5-97.5% of the rounds' ranks), P(best) with ties split (sums to 1), and
    the non-overlap rank only where it lies inside the rank interval."""
    top = elo.max(axis=1, keepdims=True)
    best = elo >= top - 1e-9
    share = best / best.sum(axis=1, keepdims=True)
    round_rank = 1 + (elo[:, None, :] > elo[:, :, None] + 1e-9).sum(axis=2)
    r_lo, r_hi = np.percentile(round_rank, [2.5, 97.5], axis=0)
    plain = ranks(lo_rank, hi_rank)
    for i, c in enumerate(rated):
        interval = [int(np.floor(r_lo[i])), int(np.ceil(r_hi[i]))]
        bt["rank_ci95"][c] = interval
        bt["p_best"][c] = float(share[:, i].mean())
        bt["rank"][c] = plain[i] if interval[0] <= plain[i] <= interval[1] else None


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
    return {"elo": to_elo(newton(start, w, ridge)), "ridge_rounds": int((~exists).sum())}


def holm(p_values: list) -> list:
    """Holm (1979) step-down adjusted p-values; None stays None."""
    idx = [i for i, p in enumerate(p_values) if p is not None]
    order = sorted(idx, key=lambda i: p_values[i])
    m, out, running = len(order), list(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out
