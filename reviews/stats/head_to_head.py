"""Head-to-head of two contenders over the same tasks (e.g. version to version)."""

from __future__ import annotations

import pandas as pd

from reviews.stats.quality import mean_ci


def sign_test(wins: int, losses: int) -> float | None:
    """Exact two-sided sign test on the non-tied pairs."""
    if wins + losses == 0:
        return None
    from scipy.stats import binomtest  # lazy: see bradley_terry.fit

    return float(binomtest(wins, wins + losses, 0.5).pvalue)


def head_to_head(
    task_quality: pd.DataFrame, a, b, *, labels: dict | None = None, limit: int | None = 20
) -> dict:
    """Paired per-task comparison of ``b`` against ``a`` on rows (task, contender, quality).

    diff = quality(b) - quality(a) per task both have. Returns mean diff with a t interval,
    b's wins / losses / ties, the exact sign test, and the tasks where b regressed (most first)
    and improved, as task labels."""
    return head_to_head_wide(task_table(task_quality), a, b, labels=labels, limit=limit)


def task_table(task_quality: pd.DataFrame) -> pd.DataFrame:
    """Tasks x contenders table of mean quality (NaN where a contender has no score)."""
    if task_quality.empty:
        return pd.DataFrame()
    return task_quality.pivot_table(
        index="task", columns="contender", values="quality", aggfunc="mean"
    )


def head_to_head_wide(
    wide: pd.DataFrame, a, b, *, labels: dict | None = None, limit: int | None = 20
) -> dict:
    """`head_to_head` on a `task_table` (pivot once, compare many pairs)."""
    labels = labels or {}
    out = {
        "a": a,
        "b": b,
        "n_tasks": 0,
        "mean_diff": None,
        "ci95": None,
        "wins": 0,
        "losses": 0,
        "ties": 0,
        "p_value": None,
        "regressions": [],
        "improvements": [],
        "reason": None,
    }
    if a not in wide.columns or b not in wide.columns:
        out["reason"] = "no task was scored for both contenders"
        return out
    diff = (wide[b] - wide[a]).dropna().sort_index()
    if diff.empty:
        out["reason"] = "no task was scored for both contenders"
        return out
    diff = diff.round(12)
    out["n_tasks"] = int(len(diff))
    out["mean_diff"], out["ci95"] = mean_ci(diff.to_numpy(), (-1.0, 1.0))
    out["wins"], out["losses"] = int((diff > 0).sum()), int((diff < 0).sum())
    out["ties"] = int((diff == 0).sum())
    out["p_value"] = sign_test(out["wins"], out["losses"])
    ordered = sorted(diff.items(), key=lambda kv: (kv[1], str(labels.get(kv[0], kv[0]))))
    out["regressions"] = [
        {"task": labels.get(t, t), "diff": float(d)} for t, d in ordered if d < 0
    ][:limit]
    out["improvements"] = [
        {"task": labels.get(t, t), "diff": float(d)} for t, d in reversed(ordered) if d > 0
    ][:limit]
    return out
