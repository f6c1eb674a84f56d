"""Pass rates on separate bases, and the pass@k curve.

A sample passes on one of three bases:

* ``human``: its final (agreed or arbitrated) quality reaches the pass threshold of its tier;
* ``checks``: its automatic checks all pass (a failed generation fails);
* ``combined``: both must pass where both exist, else whichever exists.

A sample whose review item is disputed and not yet resolved has no final human outcome: it is
*pending*, neither a pass nor a fail, counted apart and left out of the human and combined
denominators. A sample nobody reviewed has no human basis at all.

pass@k is the unbiased estimator of Chen et al. (2021) averaged over tasks; the curve runs
k = 1..n, where n is the most samples a task has on that basis (tasks with fewer than k
samples are left out at k). At k = n it is simply "any sample passed".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .stability import pass_at_k, pass_hat_k

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


def curve(n: np.ndarray, c: np.ndarray) -> list[dict]:
    """[{k, pass_at_k, pass_hat_k, n_tasks}] for k = 1..max(n), averaged over tasks with n >= k."""
    rows = []
    for k in range(1, int(n.max()) + 1 if len(n) else 1):
        full = n >= k
        if not full.any():
            break
        at = [pass_at_k(int(a), int(b), k) for a, b in zip(n[full], c[full], strict=True)]
        hat = [pass_hat_k(int(a), int(b), k) for a, b in zip(n[full], c[full], strict=True)]
        rows.append(
            {
                "k": k,
                "pass_at_k": float(np.mean(at)),
                "pass_hat_k": float(np.mean(hat)),
                "n_tasks": int(full.sum()),
            }
        )
    return rows


def basis_figures(frame: pd.DataFrame, basis: str, k: int) -> dict:
    """pass@1, pass@k and pass^k at the campaign's k, and the curve, on one basis for one
    contender's rows (NaN rows are not on this basis)."""
    on = frame[frame[basis].notna()]
    if on.empty:
        return {
            "pass_at_1": None,
            "pass_at_k": None,
            "pass_hat_k": None,
            "curve": [],
            "n_samples": 0,
            "n_tasks": 0,
        }
    counts = on.groupby("task", sort=True)[basis].agg(["size", "sum"])
    n = counts["size"].to_numpy()
    c = counts["sum"].to_numpy().round().astype(int)
    points = curve(n, c)
    at_k = next((p for p in points if p["k"] == k), None)
    return {
        "pass_at_1": points[0]["pass_at_k"],
        "pass_at_k": at_k["pass_at_k"] if at_k else None,
        "pass_hat_k": at_k["pass_hat_k"] if at_k else None,
        "curve": points,
        "n_samples": int(len(on)),
        "n_tasks": int(len(counts)),
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
