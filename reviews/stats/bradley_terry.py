"""Bradley-Terry ratings on the Elo scale, with an item bootstrap and the rank rule.

P(a beats b) = 1 / (1 + 10 ** ((R_b - R_a) / 400)). Battles are a frame with columns ``item``,
``a``, ``b`` and ``score`` (the score of ``a``: 1 win, 0.5 tie, 0 loss). A tie is half a win for
each side, so the fit works on one (K x K) matrix of win counts: W[i, j] = wins of i over j.

Ridge policy: the unregularized maximum-likelihood estimate exists only when the "beat or tied"
graph is strongly connected (Ford 1957); otherwise some contender (or group) never lost or never
won and its rating runs off to infinity. Then, and only then, a ridge penalty of ``RIDGE / 2 *
sum(theta ** 2)`` (theta in natural-log odds units, i.e. a very wide Gaussian prior) is added and
reported. A comparison graph in several pieces cannot be put on one scale: no ratings, and the
pieces are reported.

A contender with no comparisons at all (say every one of its generations failed, so it was
never in an item) is no piece of the graph: it is left out of the fit, listed in ``unrated``
with a reason, and the others are rated among themselves. Only contenders that were compared
count when deciding whether the graph is disconnected.

Bootstrap: items (not votes) are resampled, because the k reviews of one item are correlated.
Each item's win matrix is computed once; items with the same matrix are grouped, and a resample
is a multinomial draw over those groups. The B resampled problems are then solved together by a
batched Newton method, warm-started at the point estimate.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reviews.stats.agreement import unique_rows

ELO = 400 / math.log(10)
CENTER = 1000.0
RIDGE = 0.01
NO_COMPARISONS = "no comparisons: none of its outputs was compared in an item with a final outcome"


def win_matrix(battles: pd.DataFrame, contenders: list) -> np.ndarray:
    """K x K matrix of wins (a tie = half a win each), summed over unique (a, b, score) rows."""
    k = len(contenders)
    w = np.zeros((k, k))
    if battles.empty:
        return w
    index = {c: i for i, c in enumerate(contenders)}
    grouped = battles.groupby(["a", "b", "score"], sort=True).size()
    for (a, b, score), count in grouped.items():
        i, j = index[a], index[b]
        w[i, j] += score * count
        w[j, i] += (1 - score) * count
    return w


def components(w: np.ndarray) -> list[list[int]]:
    """Connected pieces of the comparison graph (who met whom), as sorted index lists."""
    k = len(w)
    met = (w + w.T) > 0
    seen, pieces = set(), []
    for start in range(k):
        if start in seen:
            continue
        stack, piece = [start], []
        seen.add(start)
        while stack:
            i = stack.pop()
            piece.append(i)
            for j in np.flatnonzero(met[i]):
                if int(j) not in seen:
                    seen.add(int(j))
                    stack.append(int(j))
        pieces.append(sorted(piece))
    return pieces


def mle_exists(w: np.ndarray) -> np.ndarray:
    """Whether the unregularized MLE exists: the directed 'i won or tied against j' graph is
    strongly connected. Works on one (K, K) matrix or a batch (B, K, K)."""
    w = np.asarray(w)
    batch = w.reshape((-1,) + w.shape[-2:])
    k = batch.shape[-1]
    reach = (batch > 0) | np.eye(k, dtype=bool)
    for _ in range(max(1, math.ceil(math.log2(max(k, 2))))):
        reach = np.matmul(reach.astype(np.float64), reach.astype(np.float64)) > 0
    ok = reach.all(axis=(-2, -1))
    return ok.reshape(w.shape[:-2]) if w.ndim > 2 else bool(ok[0])


def newton(theta: np.ndarray, w: np.ndarray, ridge: np.ndarray, iterations: int = 60) -> np.ndarray:
    """Batched Newton on (B, K) starting points, (B, K, K) wins and (B,) ridge; theta centred."""
    b, k = theta.shape
    n = w + np.swapaxes(w, 1, 2)
    eye, gauge = np.eye(k), np.full((k, k), 1.0 / k)
    active = np.ones(b, dtype=bool)
    for _ in range(iterations):
        t, ww, nn, lam = theta[active], w[active], n[active], ridge[active]
        diff = t[:, :, None] - t[:, None, :]
        p = 1 / (1 + np.exp(-diff))
        g = ww * (1 - p)
        grad = -g.sum(axis=2) + g.sum(axis=1) + lam[:, None] * t
        m = nn * p * (1 - p)
        hess = -m + m.sum(axis=2)[:, :, None] * eye + lam[:, None, None] * eye + gauge
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        biggest = np.abs(step).max(axis=1)
        step *= np.minimum(1.0, 2.0 / np.maximum(biggest, 1e-300))[
            :, None
        ]  # damped far from optimum
        t = t - step
        theta[active] = t - t.mean(axis=1, keepdims=True)
        done = biggest < 1e-11
        idx = np.flatnonzero(active)
        active[idx[done]] = False
        if not active.any():
            break
    return theta


def fit(w: np.ndarray, *, ridge: float = 0.0) -> np.ndarray:
    """Natural-scale strengths (centred at 0) by damped Newton from 0 (the log-likelihood is
    concave, and strictly so with the gauge term, so the damped steps converge; an L-BFGS
    start cost 100 ms a fit and added nothing)."""
    k = len(w)
    return newton(np.zeros((1, k)), w[None].astype(float), np.array([ridge]), iterations=200)[0]


def to_elo(theta: np.ndarray) -> np.ndarray:
    return CENTER + ELO * (theta - theta.mean(axis=-1, keepdims=True))


def ranks(lower: list[float], upper: list[float]) -> list[int]:
    """Rank = 1 + number of contenders whose lower bound is above this one's upper bound."""
    lo = np.asarray(lower, dtype=float)
    return [int(1 + (lo > u).sum()) for u in upper]


def record(battles: pd.DataFrame, contenders: list) -> dict:
    """Wins, losses and ties per contender."""
    k = len(contenders)
    index = {c: i for i, c in enumerate(contenders)}
    a = battles["a"].map(index).to_numpy(dtype=int)
    b = battles["b"].map(index).to_numpy(dtype=int)
    score = battles["score"].to_numpy(dtype=float)

    def count(who, mask):
        return np.bincount(who[mask], minlength=k)

    wins = count(a, score == 1) + count(b, score == 0)
    losses = count(a, score == 0) + count(b, score == 1)
    tie = (score != 0) & (score != 1)
    ties = count(a, tie) + count(b, tie)
    return {
        c: {"wins": int(wins[i]), "losses": int(losses[i]), "ties": int(ties[i])}
        for c, i in index.items()
    }


def bradley_terry(
    battles: pd.DataFrame, contenders: list, *, n_boot: int = 1000, seed: int = 0
) -> dict:
    """Ratings, 95% item-bootstrap CIs and ranks.

    Returns ``{"ratings": {c: float|None}, "ci95": {c: [lo, hi]|None}, "rank": {c: int|None},
    "record": {c: {"wins", "losses", "ties"}}, "n_battles", "n_items", "ridge": float|None,
    "undefeated": [...], "winless": [...], "components": [[...], ...]|None, "reason": str|None,
    "unrated": [{"contender", "reason"}, ...], "bootstrap": {"rounds", "ridge_rounds", "seed"}}``,
    keyed in the order of ``contenders``. ``unrated`` lists the contenders left out of the fit
    because they have no comparisons while others do (``reason`` covers the case of none).
    The figures do not depend on that order, on item ids or on row order: the work is done
    with contenders sorted by name, and the bootstrap groups items by content.
    """
    given = list(contenders)
    out = _bradley_terry(battles, sorted(given, key=str), n_boot=n_boot, seed=seed)
    for key in ("ratings", "ci95", "rank", "record"):
        out[key] = {c: out[key][c] for c in given}
    for key in ("undefeated", "winless"):
        out[key] = [c for c in given if c in out[key]]
    unrated = {u["contender"]: u for u in out["unrated"]}
    out["unrated"] = [unrated[c] for c in given if c in unrated]
    return out


def _bradley_terry(battles: pd.DataFrame, contenders: list, *, n_boot: int, seed: int) -> dict:
    out = _bt_blank(battles, contenders)
    if len(contenders) < 2:
        out["reason"] = "fewer than two contenders"
        return out
    if battles.empty:
        out["reason"] = "no pairwise outcomes yet (no item has a final outcome)"
        return out
    # A contender nobody compared is no piece of the graph, and would make any graph look
    # disconnected: leave it out, say so, and rate the others among themselves.
    compared = set(battles["a"]) | set(battles["b"])
    out["unrated"] = [
        {"contender": c, "reason": NO_COMPARISONS} for c in contenders if c not in compared
    ]
    contenders = [c for c in contenders if c in compared]
    w = win_matrix(battles, contenders)
    pieces = components(w)
    if len(pieces) > 1:
        out["components"] = [[contenders[i] for i in piece] for piece in pieces]
        out["reason"] = (
            "the comparison graph is disconnected: these groups never met, so they cannot share one scale"
        )
        return out
    theta = _bt_rate(out, w, contenders)
    lo, hi, ridge_rounds = _bootstrap(battles, contenders, theta, n_boot=n_boot, seed=seed)
    if _bt_intervals(out, contenders, lo, hi):
        out["bootstrap"] = {"rounds": n_boot, "ridge_rounds": ridge_rounds, "seed": seed}
    return out


def _bt_blank(battles: pd.DataFrame, contenders: list) -> dict:
    """The result with every contender's record and nothing rated yet."""
    rec = (
        record(battles, contenders)
        if not battles.empty
        else {c: {"wins": 0, "losses": 0, "ties": 0} for c in contenders}
    )
    return {
        "ratings": dict.fromkeys(contenders),
        "ci95": dict.fromkeys(contenders),
        "rank": dict.fromkeys(contenders),
        "record": rec,
        "n_battles": int(len(battles)),
        "n_items": int(battles["item"].nunique()) if not battles.empty else 0,
        "ridge": None,
        "undefeated": [],
        "winless": [],
        "components": None,
        "reason": None,
        "unrated": [],
        "bootstrap": None,
    }


def _bt_rate(out: dict, w, contenders: list):
    """Fit the ratings of a connected graph into `out` (with the ridge where the plain fit has
    no maximum: someone never lost or never won); returns the fitted strengths."""
    lost = (w.T > 0).sum(axis=1) > 0  # someone scored against i
    won = (w > 0).sum(axis=1) > 0
    out["undefeated"] = [c for c, x in zip(contenders, lost, strict=True) if not x]
    out["winless"] = [c for c, x in zip(contenders, won, strict=True) if not x]
    ridge = 0.0 if mle_exists(w) else RIDGE
    out["ridge"] = ridge or None
    theta = fit(w, ridge=ridge)
    elo = to_elo(theta)
    out["ratings"].update((c, float(r)) for c, r in zip(contenders, elo, strict=True))
    return theta


def _bt_intervals(out: dict, contenders: list, lo, hi) -> bool:
    """The bootstrap's 95% intervals and the ranks they give, into `out` (or the reason there
    are none: False)."""
    if lo is None:
        # The rank rule needs intervals; ranking bare point estimates would claim a precision
        # that one item (or no bootstrap) cannot give.
        out["reason"] = (
            "no confidence intervals (fewer than two items, or no bootstrap rounds): no ranks"
        )
        return False
    out["ci95"].update(
        (c, [float(a), float(b)]) for c, a, b in zip(contenders, lo, hi, strict=True)
    )
    out["rank"].update(zip(contenders, ranks(lo, hi), strict=True))
    return True


def _bootstrap(
    battles: pd.DataFrame, contenders: list, theta: np.ndarray, *, n_boot: int, seed: int
):
    if n_boot <= 0:
        return None, None, 0
    k = len(contenders)
    index = {c: i for i, c in enumerate(contenders)}
    ai = battles["a"].map(index).to_numpy()
    bi = battles["b"].map(index).to_numpy()
    score = battles["score"].to_numpy(dtype=float)
    item_codes, _ = pd.factorize(battles["item"], sort=True)
    n_items = int(item_codes.max()) + 1
    if n_items < 2:
        return None, None, 0
    per_item = np.zeros((n_items, k, k))
    np.add.at(per_item, (item_codes, ai, bi), score)
    np.add.at(per_item, (item_codes, bi, ai), 1 - score)
    patterns, freq = unique_rows(per_item.reshape(n_items, -1))
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_items, freq / freq.sum(), size=n_boot).astype(float)
    w = (draws @ patterns).reshape(n_boot, k, k)
    exists = mle_exists(w)
    ridge = np.where(exists, 0.0, RIDGE)
    start = np.repeat(theta[None, :], n_boot, axis=0)
    boot = to_elo(newton(start, w, ridge))
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
    return lo, hi, int((~exists).sum())
