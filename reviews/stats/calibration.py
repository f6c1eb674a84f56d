"""A judge calibrated against the panel: pure functions on frames, no ORM, no I/O.

The panel is an item's human final outcome (the reviewers' mean where they agreed, the
arbiter's values where they did not). Per rubric dimension, a unit is one output of a settled
item; for the preference, a unit is the item.

- ``judge_vs_panel``: agreement of the judge (its samples and orders combined: the median
  score, the majority preference, a draw being a tie) with the panel: Krippendorff's alpha at the dimension's
  level and Gwet's AC1/AC2, with intervals from one item-level bootstrap.
- ``reviewer_vs_panel``: the same for people, leaving each reviewer out (Calderon et al.
  2025, the alternative-annotator test): each reviewer against the mean of the *other*
  reviewers of the unit. With two reviewers that is simply their agreement with each other.
- ``advantage``: alpha of the judge against the same leave-one-out panels, minus the
  reviewers' alpha against them, per bootstrap round on the same resampled items (a paired
  difference). Both sides face the same panels, so the judge gains nothing from being
  compared with a mean of two people while a reviewer is compared with one.
- ``verdict``: ``insufficient`` below MIN_SETTLED items; ``calibrated`` when the advantage's
  lower bound lies above -epsilon (the judge agrees with the panel at least about as well
  as a reviewer does); else ``not_calibrated``. Each with its reason in words.
- ``bias``: the judge's mean signed difference from the panel (judge - panel), with CI.
- ``exact`` / ``within_one``: the share of units where the judge's value is the panel's (a
  panel value between two points, two reviewers one apart, counts as exact for either
  neighbour: |difference| <= 0.5) / at most one point away.
- ``confusion``: panel value (rows) x judge value (columns) over the scale's points; a value
  between two points is split between them in proportion (3.5 gives half to 3, half to 4).
- ``position_consistency``: the share of (item, sample) pairs judged in both orders whose two
  un-permuted preferences agree, with a Wilson interval.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from reviews.stats import joint
from reviews.stats.agreement import alpha_from_coincidences
from reviews.stats.bias import wilson
from reviews.stats.reliability import agreement_figures

EPSILON = 0.1
MIN_SETTLED = 30
_FIGURE_KEYS = ("alpha", "ci95", "ci_reason", "ac1", "ac1_ci95", "ac2", "ac2_ci95", "band")


# -- combining a judge's judgements ------------------------------------------------------------


def judge_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Per unit (item, output, dimension): the median of the judge's non-null scores over its
    samples and orders, their spread (max - min) and how many there were.
    ``rows``: item, output, dimension, value (NaN = N/A)."""
    rated = rows[rows["value"].notna()]
    grouped = rated.groupby(["item", "output", "dimension"], sort=True)["value"]
    out = grouped.agg(["median", "min", "max", "count"]).reset_index()
    out["spread"] = out["max"] - out["min"]
    return out.rename(columns={"median": "value", "count": "n"})[
        ["item", "output", "dimension", "value", "spread", "n"]
    ]


def majority(choices: list[str]) -> str | None:
    """The choice made most often; "tie" when two or more choices draw for most (a judge whose
    choice flips with the order has no preference: MT-Bench's convention for judgements
    inconsistent after a swap); None without any choice."""
    if not choices:
        return None
    # Counter, not pandas: this runs once per item.
    ranked = Counter(choices).most_common(2)
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return "tie"
    return str(ranked[0][0])


# -- agreement on pairs ------------------------------------------------------------------------


def paired_alpha(
    pairs: pd.DataFrame, level: str, weights: np.ndarray
) -> tuple[float | None, np.ndarray]:
    """Alpha of two ratings per unit (``a``, ``b``, ``cluster``), its point estimate and its
    value in every bootstrap round (rows of ``weights``, clusters resampled). A unit of two
    ratings adds 1 to its coincidence cells (a, b) and (b, a), 2 to (a, a) when equal."""
    values = np.concatenate([pairs["a"].to_numpy(float), pairs["b"].to_numpy(float)])
    if len(pairs) == 0:
        return None, np.full(len(weights), np.nan)
    domain, codes = np.unique(values, return_inverse=True)
    ia, ib = codes[: len(pairs)], codes[len(pairs) :]
    t, v = weights.shape[1], len(domain)
    per_cluster = np.zeros((t, v, v))
    cluster = pairs["cluster"].to_numpy(int)
    np.add.at(per_cluster, (cluster, ia, ib), 1.0)
    np.add.at(per_cluster, (cluster, ib, ia), 1.0)
    point = alpha_from_coincidences(per_cluster.sum(axis=0), domain, level)
    boot = alpha_from_coincidences(
        (weights @ per_cluster.reshape(t, -1)).reshape(len(weights), v, v), domain, level
    )
    point = float(point) if np.isfinite(point) else None
    return point, boot


def _figures(pairs: pd.DataFrame, level: str, weights: np.ndarray, coders=("a", "b")) -> dict:
    """Alpha and AC1/AC2 with their bootstrap intervals for pairs (a, b, cluster)."""
    ratings = pd.concat(
        [
            pd.DataFrame(
                {"unit": np.arange(len(pairs)), "coder": name, "value": pairs[col].to_numpy(float)}
            ).assign(cluster=pairs["cluster"].to_numpy(int))
            for name, col in zip(coders, ("a", "b"), strict=True)
        ],
        ignore_index=True,
    )
    figures = agreement_figures(ratings, level, weights, numeric=level != "nominal")
    out = {k: figures[k] for k in _FIGURE_KEYS if k in figures}
    out["n_units"] = int(len(pairs))
    out["reason"] = figures.get("reason")
    return out


def advantage(
    judge_pairs: pd.DataFrame, reviewer_pairs: pd.DataFrame, level: str, weights: np.ndarray
) -> dict:
    """Judge-side alpha minus reviewer-side alpha on the same leave-one-out panels, with the
    paired bootstrap interval (same resampled items in both)."""
    n_items = int(pd.concat([judge_pairs["cluster"], reviewer_pairs["cluster"]]).nunique())
    judge_point, judge_boot = paired_alpha(judge_pairs, level, weights)
    people_point, people_boot = paired_alpha(reviewer_pairs, level, weights)
    if judge_point is None or people_point is None:
        return {
            "value": None,
            "ci95": None,
            "judge_alpha": judge_point,
            "reviewer_alpha": people_point,
            "n_items": n_items,
            "reason": "alpha is undefined on one side (no variation, or no unit reviewed by "
            "two people and judged)",
        }
    ci, reason = joint.interval(judge_boot - people_boot, n_items)
    return {
        "value": judge_point - people_point,
        "ci95": ci,
        "judge_alpha": judge_point,
        "reviewer_alpha": people_point,
        "n_items": n_items,
        "reason": reason,
    }


# -- differences and the confusion table -------------------------------------------------------


def mean_difference(diffs: np.ndarray, cluster: np.ndarray, weights: np.ndarray) -> dict:
    """Mean signed difference with its item-level bootstrap interval."""
    n = int(len(np.unique(cluster)))
    if len(diffs) == 0:
        return {"value": None, "ci95": None, "n": 0, "reason": "no unit"}
    t = weights.shape[1]
    sums = np.bincount(cluster, weights=diffs, minlength=t)
    counts = np.bincount(cluster, minlength=t).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = (weights @ sums) / (weights @ counts)
    ci, reason = joint.interval(boot, n)
    return {"value": float(diffs.mean()), "ci95": ci, "n": n, "reason": reason}


def _spread_onto(values: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(units x points) weights: a value on a point puts 1 there; a value between two points
    is split between them in proportion to its distance; outside the scale, nothing."""
    out = np.zeros((len(values), len(points)))
    for i, value in enumerate(values):
        upper = int(np.searchsorted(points, value))
        if upper < len(points) and points[upper] == value:
            out[i, upper] = 1.0
        elif 0 < upper < len(points):
            lo, hi = points[upper - 1], points[upper]
            share = (value - lo) / (hi - lo)
            out[i, upper - 1], out[i, upper] = 1 - share, share
    return out


def confusion(panel: np.ndarray, judge: np.ndarray, points) -> list[list[float]]:
    """Panel (rows) x judge (columns) over ``points``; see the module's docstring."""
    points = np.asarray(list(points), dtype=float)
    table = _spread_onto(np.asarray(panel, float), points).T @ _spread_onto(
        np.asarray(judge, float), points
    )
    return [[int(c) if float(c).is_integer() else round(float(c), 3) for c in row] for row in table]


# -- verdicts ----------------------------------------------------------------------------------


def verdict(n_items: int, adv: dict, *, epsilon: float = EPSILON) -> tuple[str, str]:
    """(verdict, reason in words)."""
    if n_items < MIN_SETTLED:
        return "insufficient", (
            f"only {n_items} settled items with a judgement: at least {MIN_SETTLED} are needed "
            "to tell whether the judge agrees with the panel as well as a reviewer does"
        )
    ci = adv.get("ci95")
    if (
        ci is None
        and adv.get("value") is not None
        and str(adv.get("reason")).startswith("all equal")
    ):
        # Every resample gave the same difference: the interval is the value itself.
        ci = [adv["value"], adv["value"]]
    if adv.get("value") is None or ci is None:
        why = adv.get("reason") or "the advantage has no interval"
        return "not_calibrated", f"the judge cannot be compared with the reviewers: {why}"
    if ci[0] > -epsilon:
        return "calibrated", (
            f"on {n_items} settled items the judge agrees with the panel at least about as well "
            f"as a reviewer does: its advantage {adv['value']:+.3f} has a 95% interval "
            f"[{ci[0]:+.3f}, {ci[1]:+.3f}] whose lower bound is above -{epsilon:g}"
        )
    return "not_calibrated", (
        f"on {n_items} settled items the judge agrees with the panel less well than a reviewer "
        f"does: its advantage {adv['value']:+.3f} has a 95% interval [{ci[0]:+.3f}, "
        f"{ci[1]:+.3f}] reaching below -{epsilon:g}"
    )


def _bias_note(bias: dict) -> str:
    ci = bias.get("ci95")
    if not ci or (ci[0] <= 0 <= ci[1]):
        return ""
    side = "higher" if ci[0] > 0 else "lower"
    return f"; it scores systematically {side} than the panel (bias {bias['value']:+.2f})"


# -- one dimension -----------------------------------------------------------------------------


def loo_pairs(reviews: pd.DataFrame, judged: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leave-one-out pairs: for each unit reviewed by two or more people and each of them,
    (the reviewer, the others' mean) and (the judge, the others' mean). Only units the judge
    scored, so both sides rest on the same units. ``reviews``: unit, item, reviewer, value;
    ``judged``: unit, value (the judge's combined value)."""
    rated = reviews[reviews["value"].notna()]
    judge_value = dict(zip(judged["unit"], judged["value"], strict=True))
    rated = rated[rated["unit"].isin(judge_value)]
    sums = rated.groupby("unit")["value"].agg(["sum", "count"])
    rated = rated.join(sums, on="unit")
    rated = rated[rated["count"] >= 2]
    others = (rated["sum"] - rated["value"]) / (rated["count"] - 1)
    people = pd.DataFrame(
        {"a": rated["value"].to_numpy(float), "b": others.to_numpy(float), "item": rated["item"]}
    )
    judge = pd.DataFrame(
        {
            "a": rated["unit"].map(judge_value).to_numpy(float),
            "b": others.to_numpy(float),
            "item": rated["item"],
        }
    )
    return judge, people


def dimension_calibration(
    units: pd.DataFrame,
    reviews: pd.DataFrame,
    scale: dict,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    epsilon: float = EPSILON,
) -> dict:
    """One dimension. ``units``: unit, item, panel, judge (combined), spread (NaN = none);
    ``reviews``: unit, item, reviewer, value (the raw reviews of the same units).
    ``scale``: {"min", "max", "level"}."""
    level = scale.get("level") or "ordinal"
    both = units[units["panel"].notna() & units["judge"].notna()].reset_index(drop=True)
    items = pd.Index(sorted(both["item"].unique()))
    weights = joint.cluster_weights(len(items), n_boot, seed)
    code = {item: i for i, item in enumerate(items)}
    pairs = pd.DataFrame(
        {"a": both["judge"], "b": both["panel"], "cluster": both["item"].map(code)}
    )
    judge_pairs, people_pairs = loo_pairs(reviews, both.rename(columns={"judge": "value"}))
    for frame in (judge_pairs, people_pairs):
        frame["cluster"] = frame.pop("item").map(code).astype(int)
    adv = advantage(judge_pairs, people_pairs, level, weights)
    diffs = (both["judge"] - both["panel"]).to_numpy(float)
    if level == "nominal":
        # Categories have no direction: a signed difference of their codes means nothing.
        bias = {"value": None, "ci95": None, "n": 0, "reason": "a nominal scale has no direction"}
    else:
        bias = mean_difference(diffs, pairs["cluster"].to_numpy(int), weights)
    n_items = int(len(items))
    name, reason = verdict(n_items, adv, epsilon=epsilon)
    if name == "not_calibrated":
        reason += _bias_note(bias)
    numeric = level != "nominal"
    return {
        "n": n_items,
        "n_units": int(len(both)),
        "level": level,
        "judge_vs_panel": _figures(pairs, level, weights, ("judge", "panel")),
        "reviewer_vs_panel": _figures(people_pairs, level, weights, ("reviewer", "panel")),
        "advantage": adv,
        "epsilon": epsilon,
        "bias": bias,
        "exact": _share(np.abs(diffs) <= 0.5 + 1e-9),
        "within_one": _share(np.abs(diffs) <= 1 + 1e-9) if numeric else None,
        "confusion": confusion(both["panel"], both["judge"], range(scale["min"], scale["max"] + 1)),
        "confusion_labels": list(range(scale["min"], scale["max"] + 1)),
        "judge_spread": float(both["spread"].mean()) if len(both) else None,
        "small_sample": bool(0 < n_items < MIN_SETTLED),
        "verdict": name,
        "reason": reason,
    }


def _share(mask: np.ndarray) -> float | None:
    return float(mask.mean()) if len(mask) else None


# -- the preference ----------------------------------------------------------------------------


def position_consistency(pairs: pd.DataFrame) -> dict:
    """``pairs``: one row per (item, sample) judged in both orders, with ``first`` and
    ``second`` (the un-permuted preference of each order)."""
    n = int(len(pairs))
    if n == 0:
        return {"rate": None, "ci95": None, "n": 0, "reason": "no judgement in both orders"}
    agree = int((pairs["first"] == pairs["second"]).sum())
    return {"rate": agree / n, "ci95": wilson(agree, n), "n": n}


def preference_calibration(
    items: pd.DataFrame,
    reviews: pd.DataFrame,
    swaps: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    epsilon: float = EPSILON,
) -> dict:
    """``items``: item, panel, judge (choices as strings; None = none); ``reviews``: item,
    reviewer, value (each reviewer's choice); ``swaps``: see position_consistency."""
    both = items[items["panel"].notna() & items["judge"].notna()].reset_index(drop=True)
    rated = reviews[reviews["value"].notna() & reviews["item"].isin(both["item"])]
    domain = sorted(set(both["panel"]) | set(both["judge"]) | set(rated["value"]), key=str)
    number = {choice: float(i) for i, choice in enumerate(domain)}
    units = pd.DataFrame(
        {
            "unit": both["item"],
            "item": both["item"],
            "panel": both["panel"].map(number),
            "judge": both["judge"].map(number),
            "spread": np.nan,
        }
    )
    people = pd.DataFrame(
        {
            "unit": rated["item"],
            "item": rated["item"],
            "reviewer": rated["reviewer"],
            "value": rated["value"].map(number),
        }
    )
    # A choice is a category: the others' "mean" is only meaningful when they agree, so the
    # leave-one-out panel keeps the units whose other reviewers made one choice.
    people = _single_choice_others(people)
    figures = dimension_calibration(
        units,
        people,
        {"min": 0, "max": max(len(domain) - 1, 0), "level": "nominal"},
        n_boot=n_boot,
        seed=seed,
        epsilon=epsilon,
    )
    return {
        "n": figures["n"],
        "agreement": figures["judge_vs_panel"],
        "reviewer_vs_panel": figures["reviewer_vs_panel"],
        "advantage": figures["advantage"],
        "epsilon": epsilon,
        "exact": figures["exact"],
        "confusion": figures["confusion"],
        "confusion_labels": domain,
        "position_consistency": position_consistency(swaps),
        "small_sample": figures["small_sample"],
        "verdict": figures["verdict"],
        "reason": figures["reason"],
    }


def _single_choice_others(people: pd.DataFrame) -> pd.DataFrame:
    """Reviews of the units where, for every reviewer, the other reviewers agree among
    themselves (always so with two reviewers)."""
    distinct = people.groupby("unit")["value"].nunique()
    size = people.groupby("unit")["value"].size()
    keep = distinct[(size == 2) | (distinct == 1)].index
    return people[people["unit"].isin(keep)]
