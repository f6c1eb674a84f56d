"""Output length per contender, and a length-controlled Bradley-Terry rating beside the raw one.

People tend to prefer the longer answer, so a raw rating mixes quality with verbosity. As in
Chatbot Arena's style control (Li et al. 2024), the logistic model of a battle gets the two
outputs' normalized length difference as a covariate:

    logit P(a beats b) = theta_a - theta_b + gamma * d,   d = (len_a - len_b) / (len_a + len_b)

(d in [-1, 1]; lengths in characters; a tie is half a win, as in the raw fit). ``gamma`` > 0
says the longer output wins more often at equal strength; the thetas, on the Elo scale and
centred on 1000, are the ratings with length held equal. Fitted by Newton's method (with the
raw fit's ridge penalty on the thetas when some contender never lost or never won).

Intervals: a one-step bootstrap (Davison & Hinkley 1997, sec. 6.4): each round of the report's
joint draws over test cases takes one Newton step from the full-data estimate, using that
round's weighted gradient and Hessian. Both are sums over test cases, so a round costs a
(K + 1)-sized solve instead of a refit; the first ``ROUNDS`` rounds are used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reviews.stats import joint
from reviews.stats.bradley_terry import CENTER, ELO

ROUNDS = 400


def distribution(chars) -> dict:
    """{mean, p50, p95, n} of output lengths in characters (None without any)."""
    x = np.asarray(chars, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return {"mean": None, "p50": None, "p95": None, "n": 0}
    p50, p95 = np.percentile(x, [50, 95])
    return {"mean": float(x.mean()), "p50": float(p50), "p95": float(p95), "n": int(len(x))}


def length_difference(len_a, len_b) -> np.ndarray:
    a, b = np.asarray(len_a, dtype=float), np.asarray(len_b, dtype=float)
    total = a + b
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (a - b) / np.where(total > 0, total, 1.0), 0.0)


def _design(battles: pd.DataFrame, index: dict) -> np.ndarray:
    n, k = len(battles), len(index)
    x = np.zeros((n, k + 1))
    rows = np.arange(n)
    x[rows, battles["a"].map(index).to_numpy(dtype=int)] = 1.0
    x[rows, battles["b"].map(index).to_numpy(dtype=int)] = -1.0
    x[:, k] = battles["d"].to_numpy(dtype=float)
    return x


def _penalty(k: int, ridge: float) -> np.ndarray:
    """Ridge on the thetas (not on gamma) plus the gauge that centres them."""
    pen = np.zeros((k + 1, k + 1))
    pen[:k, :k] = ridge * np.eye(k) + np.full((k, k), 1.0 / k)
    # a negligible floor keeps a round whose draws show no length variation solvable
    return pen + 1e-9 * np.eye(k + 1)


def fit(x: np.ndarray, y: np.ndarray, k: int, ridge: float, iterations: int = 100) -> np.ndarray:
    """Maximum likelihood (theta_1..theta_k, gamma) by damped Newton from 0."""
    beta = np.zeros(k + 1)
    pen = _penalty(k, ridge)
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (y - p)
        grad[:k] -= ridge * beta[:k]
        hess = (x * (p * (1 - p))[:, None]).T @ x + pen
        step = np.linalg.solve(hess, grad)
        biggest = np.abs(step).max()
        beta = beta + step * min(1.0, 2.0 / max(biggest, 1e-300))
        beta[:k] -= beta[:k].mean()
        if biggest < 1e-10:
            break
    return beta


def length_controlled(
    battles: pd.DataFrame, rated: list, weights: np.ndarray, *, ridge: float = 0.0
) -> dict:
    """``battles``: a, b, score, cluster (column of ``weights``), d (normalized length
    difference, NaN where a length is unknown). Returns {"ratings": {c: elo}, "ci95": {c:
    [lo, hi] | None}, "coefficient": {value, ci95, reason}, "n_battles", "reason"}."""
    out = {
        "ratings": dict.fromkeys(rated),
        "ci95": dict.fromkeys(rated),
        "coefficient": {"value": None, "ci95": None, "reason": None},
        "n_battles": 0,
        "reason": None,
    }
    known = battles[battles["d"].notna() & battles["a"].isin(rated) & battles["b"].isin(rated)]
    out["n_battles"] = int(len(known))
    if len(rated) < 2 or known.empty:
        out["reason"] = "no rated battle with both outputs' lengths"
        return out
    if np.ptp(known["d"].to_numpy(dtype=float)) == 0:
        out["reason"] = "the compared outputs' lengths do not differ, so length explains nothing"
        return out
    k, index = len(rated), {c: i for i, c in enumerate(rated)}
    x, y = _design(known, index), known["score"].to_numpy(dtype=float)
    beta = fit(x, y, k, ridge)
    out["ratings"] = {c: float(CENTER + ELO * beta[i]) for c, i in index.items()}
    out["coefficient"]["value"] = float(beta[k])
    n = int(known["cluster"].nunique())
    data = _Data(x=x, y=y, cluster=known["cluster"].to_numpy(dtype=int))
    rounds = _one_step_rounds(data, beta, weights, ridge)
    for c, i in index.items():
        ci, _ = joint.interval(None if rounds is None else CENTER + ELO * rounds[:, i], n)
        out["ci95"][c] = ci
    ci, reason = joint.interval(None if rounds is None else rounds[:, k], n)
    out["coefficient"].update(ci95=ci, reason=reason)
    return out


@dataclass(frozen=True)
class _Data:
    """The regression's data: the design (one row per battle), the outcomes and each row's
    cluster (its test case, the bootstrap's unit)."""

    x: np.ndarray
    y: np.ndarray
    cluster: np.ndarray


def _one_step_rounds(data: _Data, beta, weights: np.ndarray, ridge: float):
    """(rounds x (K + 1)) one Newton step per bootstrap round from the full-data estimate."""
    if len(weights) == 0:
        return None
    x, y, cluster = data.x, data.y, data.cluster
    w = weights[:ROUNDS]
    k = x.shape[1] - 1
    t = w.shape[1]
    p = 1 / (1 + np.exp(-(x @ beta)))
    g_rows = x * (y - p)[:, None]
    h_rows = np.einsum("ni,nj->nij", x, x * (p * (1 - p))[:, None])
    g_c = np.zeros((t, k + 1))
    h_c = np.zeros((t, k + 1, k + 1))
    np.add.at(g_c, cluster, g_rows)
    np.add.at(h_c, cluster, h_rows)
    grad = w @ g_c
    grad[:, :k] -= ridge * beta[:k]
    hess = (w @ h_c.reshape(t, -1)).reshape(len(w), k + 1, k + 1) + _penalty(k, ridge)
    steps = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
    out = beta[None, :] + steps
    out[:, :k] -= out[:, :k].mean(axis=1, keepdims=True)
    return out
