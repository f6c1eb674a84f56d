"""Pass rates on separate bases, and the pass@k curve.

A sample passes on one of three bases:

* ``human``: its final (agreed or arbitrated) quality reaches the pass threshold of its tier;
* ``checks``: its automatic checks all pass (a failed generation fails);
* ``combined``: both must pass where both exist, else whichever exists.

A sample whose review item is disputed and not yet resolved has no final human outcome: it is
*pending*, neither a pass nor a fail, counted apart and left out of the human and combined
denominators. A sample nobody reviewed has no human basis at all.

pass@k is the unbiased estimator of Chen et al. (2021) averaged over tasks; the curve runs
k = 1..n, where n is the most samples a task has on that basis. Every task stays in every k's
denominator: a task's pending samples (and any it lacks up to n) are unknown, and the curve
carries ``low`` / ``high`` bounds over every way they could settle (see `curve`). At k = n it
is simply "any sample passed".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BASES = ("human", "checks", "combined")


def threshold_for(tier, pass_threshold) -> float:
    """A number, or ``{"base": .., "advanced": .., "boundary": ..}`` (a missing tier falls back
    to the ``default`` key, else the smallest threshold given)."""
    if isinstance(pass_threshold, dict):
        if tier in pass_threshold:
            return float(pass_threshold[tier])
        if "default" in pass_threshold:
            return float(pass_threshold["default"])
        return float(min(pass_threshold.values()))
    return float(pass_threshold)


def sample_bases(samples: pd.DataFrame, pass_threshold) -> pd.DataFrame:
    """Adds ``human``, ``checks``, ``combined`` (1.0 pass, 0.0 fail, NaN none) to rows with
    columns contender, task, sample, tier, failed (bool), checks_passed (True/False/None),
    human_quality (NaN = not judged by people), pending (bool)."""
    out = samples.copy()
    thresholds = out["tier"].map(lambda t: threshold_for(t, pass_threshold))
    hq = out["human_quality"].astype(float)
    human = np.where(hq.isna(), np.nan, (hq >= thresholds - 1e-12).astype(float))
    human = np.where(out["pending"].to_numpy(bool), np.nan, human)
    checks = out["checks_passed"].map(lambda v: np.nan if v is None else float(bool(v)))
    checks = checks.astype(float).to_numpy()
    failed = out["failed"].to_numpy(bool)
    checks = np.where(failed, 0.0, checks)
    both = np.where(np.isnan(human), checks, np.where(np.isnan(checks), human, human * checks))
    both = np.where(out["pending"].to_numpy(bool) & ~failed, np.nan, both)
    out["human"], out["checks"], out["combined"] = human, checks, both
    return out


def curve(n: np.ndarray, c: np.ndarray, unknown: np.ndarray | None = None) -> list[dict]:
    """[{k, pass_at_k, pass_hat_k, n_tasks, low, high}] for k = 1..max(n + unknown).

    ``n`` settled samples per task, ``c`` of them passing, ``unknown`` samples that could still
    go either way (pending, or missing up to the most any task has). Every task stays in every
    k's denominator: ``low`` counts each unknown sample as a fail and ``high`` as a pass, so
    the truth lies between them whatever the settlement, and neither side of pass^k rises with
    k. The point ``pass_at_k`` / ``pass_hat_k`` (Chen et al.'s unbiased estimator on the
    settled samples) is given when every task has k settled samples, and at k = 1 over the
    tasks with any (it then lies within the bounds); otherwise null, and the bounds say it."""
    unknown = np.zeros_like(n) if unknown is None else unknown
    total = n + unknown
    rows = []
    for k in range(1, int(total.max()) + 1 if len(total) else 1):
        settled = n >= k
        exact = settled.all() or (k == 1 and settled.any())
        rows.append(
            {
                "k": k,
                "pass_at_k": float(_at(n[settled], c[settled], k).mean()) if exact else None,
                "pass_hat_k": float(_hat(n[settled], c[settled], k).mean()) if exact else None,
                "n_tasks": int(len(n)),
                "low": _bounds(total, c, k),
                "high": _bounds(total, c + unknown, k),
            }
        )
    return rows


def _fraction(top: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """C(top, k) / C(n, k) per task (0 where top < k), as the product of (top - i) / (n - i)."""
    i = np.arange(k)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.clip(top[:, None] - i, 0, None) / (n[:, None] - i)
    return ratio.prod(axis=1)


def _at(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Chen et al.'s pass@k per task: 1 - C(n - c, k) / C(n, k) (needs n >= k)."""
    return 1.0 - _fraction((n - c).astype(float), n.astype(float), k)


def _hat(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """pass^k per task: C(c, k) / C(n, k)."""
    return _fraction(c.astype(float), n.astype(float), k)


def _bounds(total: np.ndarray, c: np.ndarray, k: int) -> dict:
    """pass@k and pass^k over every task, each with ``total`` samples of which ``c`` pass."""
    return {
        "pass_at_k": float(_at(total, c, k).mean()),
        "pass_hat_k": float(_hat(total, c, k).mean()),
    }


def basis_figures(frame: pd.DataFrame, basis: str, k: int) -> dict:
    """pass@1, pass@k and pass^k at the campaign's k, and the curve with its bounds, on one
    basis for one contender's rows (NaN rows are not on this basis; a pending row is an
    unknown sample of its task on the human and combined bases)."""
    pending = frame["pending"].to_numpy(bool) & frame[basis].isna().to_numpy()
    if basis == "checks":
        pending = np.zeros(len(frame), dtype=bool)
    known = frame[basis].notna().to_numpy()
    if not known.any():
        return {
            "pass_at_1": None,
            "pass_at_k": None,
            "pass_hat_k": None,
            "curve": [],
            "n_samples": 0,
            "n_tasks": 0,
            "bounds": False,
        }
    on = frame.assign(settled=known, passed=frame[basis].fillna(0.0), pend=pending)
    counts = on[known | pending].groupby("task", sort=True)[["settled", "passed", "pend"]].sum()
    n = counts["settled"].to_numpy().astype(int)
    c = counts["passed"].to_numpy().round().astype(int)
    # every task gets as many samples as the fullest one: the rest are unknown (pending, or
    # not judged on this basis), so no task drops out of a larger k's denominator
    unknown = int((n + counts["pend"].to_numpy().astype(int)).max()) - n
    points = curve(n, c, unknown)
    at_k = next((p for p in points if p["k"] == k), None)
    return {
        "pass_at_1": points[0]["pass_at_k"],
        "pass_at_k": at_k["pass_at_k"] if at_k else None,
        "pass_hat_k": at_k["pass_hat_k"] if at_k else None,
        "curve": points,
        "n_samples": int(known.sum()),
        "n_tasks": int(len(counts)),
        "bounds": bool(unknown.any()),
    }


def contender_passes(samples: pd.DataFrame, k: int) -> dict:
    """{contender: {basis: basis_figures, "pending": n, "headline": basis}} from
    `sample_bases` rows. The headline basis is ``human`` where people judged any sample,
    else ``checks``."""
    out = {}
    for contender, frame in samples.groupby("contender", sort=True):
        figures = {basis: basis_figures(frame, basis, k) for basis in BASES}
        headline = "human" if figures["human"]["n_samples"] else "checks"
        if not figures[headline]["n_samples"]:
            headline = None
        out[contender] = {
            **figures,
            # the same figures keyed the other way round: {"pass_at_1": {basis: value}}
            **{
                key: {basis: figures[basis][key] for basis in BASES}
                for key in ("pass_at_1", "pass_at_k", "pass_hat_k")
            },
            "pending": int(frame["pending"].sum()),
            "headline": headline,
        }
    return out


def task_pass_rates(samples: pd.DataFrame, basis: str) -> pd.DataFrame:
    """Per (contender, task): the share of samples passing on ``basis`` (pass@1 of the task),
    the input of the joint bootstrap."""
    on = samples[samples[basis].notna()]
    return on.groupby(["contender", "task"], sort=True)[basis].mean().rename("rate").reset_index()


def flaky_tasks(based: pd.DataFrame, basis: str) -> list:
    """Tasks whose settled samples disagree on ``basis``: some pass, some fail (rows of one
    contender from `sample_bases`)."""
    on = based[based[basis].notna()]
    if on.empty:
        return []
    per = on.groupby("task", sort=True)[basis].agg(["size", "sum"])
    return per[(per["sum"] > 0) & (per["sum"] < per["size"])].index.tolist()
