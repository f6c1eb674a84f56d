"""Quality: final rubric scores normalized to 0..1, averaged, weighted by category.

The sampling unit is the *task*: samples and items of one task are correlated, so every mean
here is first taken per task, and confidence intervals are t intervals over task means.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

# Plain data (no ORM): the rubric's dimensions with their defaults.
from reviews.rubric import Rubric


def normalize(values: pd.Series, dims: pd.Series, rubric: Rubric | list[dict]) -> pd.Series:
    """Map each value to 0..1 by its dimension's range; 'lower is better' dimensions flip."""
    rubric = Rubric.coerce(rubric)
    lo = dims.map({d.key: float(d.min) for d in rubric})
    hi = dims.map({d.key: float(d.max) for d in rubric})
    lower = dims.map({d.key: d.lower_is_better for d in rubric}).fillna(False)
    span = (hi - lo).where(hi > lo)
    scaled = ((values - lo) / span).clip(0, 1)
    return scaled.where(~lower.astype(bool), 1 - scaled)


def mean_ci(
    values, bounds: tuple[float, float] = (-math.inf, math.inf)
) -> tuple[float | None, list[float] | None]:
    """Mean and 95% t interval (None with fewer than two values), kept within `bounds`: with
    few tasks a t interval can run past what the quantity can be (a quality of -0.2 or 1.9),
    and the bounds are then what is known."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return None, None
    m = float(x.mean())
    if len(x) < 2:
        return m, None
    from scipy.stats import t  # lazy: see bradley_terry.fit

    half = float(t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return m, [max(m - half, bounds[0]), min(m + half, bounds[1])]


def output_quality(final_scores: pd.DataFrame, rubric: Rubric | list[dict]) -> pd.DataFrame:
    """One row per reviewed output: its quality = mean normalized final score over dimensions.

    ``final_scores`` columns: item, output, contender, task, sample, dimension, value (NaN = N/A)
    (plus any per-output columns such as category and tier, which are carried through).
    """
    rated = final_scores[final_scores["value"].notna()].copy()
    keys = [c for c in final_scores.columns if c not in ("dimension", "value")]
    if rated.empty:
        return pd.DataFrame(columns=[*keys, "quality"])
    rated["norm"] = normalize(rated["value"], rated["dimension"], rubric)
    out = (
        rated.groupby(keys, sort=True, dropna=False)["norm"].mean().rename("quality").reset_index()
    )
    return out


def task_means(frame: pd.DataFrame, value: str, by: list[str]) -> pd.DataFrame:
    return frame.groupby([*by, "task"], sort=True)[value].mean().reset_index()


def summary_by(frame: pd.DataFrame, value: str, by: list[str], bounds=lambda key: (0, 1)) -> dict:
    """{group tuple or value: {"mean", "ci95", "n_tasks"}} with CIs over task means, within
    `bounds(group key)` (quality: 0..1)."""
    out = {}
    per_task = task_means(frame, value, by)
    for key, group in per_task.groupby(by, sort=True):
        mean, ci = mean_ci(group[value], bounds(key))
        out[key if len(by) > 1 else key[0]] = {"mean": mean, "ci95": ci, "n_tasks": int(len(group))}
    return out


def dimension_scores(final_scores: pd.DataFrame, rubric: Rubric | list[dict]) -> dict:
    """{(contender, dimension): {"mean", "ci95", "n_tasks"}} on the raw rubric scale (the
    intervals within the dimension's min..max)."""
    rated = final_scores[final_scores["value"].notna()]
    if rated.empty:
        return {}
    scale = {d.key: (float(d.min), float(d.max)) for d in Rubric.coerce(rubric)}
    return summary_by(
        rated,
        "value",
        ["contender", "dimension"],
        bounds=lambda key: scale.get(key[1], (-math.inf, math.inf)),
    )


def weighted_quality(outq: pd.DataFrame, category_weights: dict[str, float]) -> dict:
    """{contender: {"quality", "ci95", "n_tasks"}}: category means weighted by the campaign's
    category weights (1 where unnamed). The CI is the stratified interval, with the contender's
    pooled within-category variance for categories of a single task, and a t quantile with
    n_tasks - n_categories degrees of freedom: with one category it is the plain t interval
    over tasks (the one `summary_by` gives), not a narrower normal one."""
    out = {}
    if outq.empty:
        return out
    from scipy.stats import t  # lazy: see bradley_terry.fit

    per_task = task_means(outq, "quality", ["contender", "category"])
    for contender, frame in per_task.groupby("contender", sort=True):
        cats = frame.groupby("category", sort=True)["quality"].agg(["mean", "var", "count"])
        weights = np.array([float(category_weights.get(c, 1.0)) for c in cats.index])
        if weights.sum() <= 0:
            weights = np.ones(len(cats))
        weights = weights / weights.sum()
        quality = float((weights * cats["mean"]).sum())
        resid = frame["quality"] - frame["category"].map(cats["mean"])
        dof = len(frame) - len(cats)
        pooled = float((resid**2).sum() / dof) if dof > 0 else float("nan")
        var = cats["var"].where(cats["count"] >= 2, pooled).to_numpy()
        se = math.sqrt(float((weights**2 * var / cats["count"].to_numpy()).sum()))
        half = float(t.ppf(0.975, dof)) * se if dof > 0 else math.nan
        ci = [max(quality - half, 0.0), min(quality + half, 1.0)] if np.isfinite(half) else None
        out[contender] = {"quality": quality, "ci95": ci, "n_tasks": int(len(frame))}
    return out
