"""Agreement with honest intervals: alpha beside Gwet's AC1/AC2, bands judged on the interval.

Krippendorff's alpha (point estimate from the ``krippendorff`` package) and Gwet's AC1
(nominal) / AC2 (ordinal or interval weights) are computed on the same raw ratings; their
intervals come from the report's joint cluster bootstrap (``joint.cluster_weights``): a round
redraws whole test cases, so all of a case's outputs and dimensions go together.

Gwet (2014), several raters, missing ratings allowed; for unit i with r_i >= 2 ratings and
r_ik ratings in category k, with weights w_kl (identity for AC1):
    pa = mean_i sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1)),  r*_ik = sum_l w_kl r_il
    pi_k = mean_i r_ik / r_i,  pe = T_w / (q (q - 1)) * sum_k pi_k (1 - pi_k)
    AC = (pa - pe) / (1 - pe)
where q is the number of categories and T_w the sum of all weights. Ordinal weights are
Gwet's 1 - M_kl / max M with M_kl = C(|rank_k - rank_l| + 1, 2); interval weights are
quadratic, 1 - (x_k - x_l)^2 / (x_max - x_min)^2; ratio weights 1 - ((x_k - x_l) / (x_k +
x_l))^2 / max. Categories are the values observed; pi_k is taken over every rated unit (a unit
rated once has no pair but shows how categories are used), pa over units rated twice or more.
On Gwet's (2014, p. 120) 4 raters x 12 units this gives AC1 0.775, ordinal 0.899, quadratic
0.914 and ratio 0.857, his published values.

Why both: alpha (like kappa) takes chance agreement from how often each value is used, so when
nearly every rating is the same value ("prevalence paradox") a 97% exact agreement can give an
alpha near 0. AC1 takes chance agreement as at most 1/q and stays high there. When they
disagree, the report says so instead of letting one number stand alone.

Bands on the interval: ``reliable`` only if the interval's lower bound >= 0.800,
``unreliable`` if its upper bound < 0.667, otherwise ``tentative``; no interval, no band.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reviews.stats import joint
from reviews.stats.agreement import (
    LEVELS,
    RELIABLE,
    TENTATIVE,
    alpha_from_coincidences,
    krippendorff_alpha,
    unit_coincidences,
)

DISAGREE = 0.2  # |alpha - AC| beyond which the report notes the two disagree
PREVALENT = 0.8  # share of ratings on the most used value from which prevalence is the cause


def band_on_interval(ci: list | None) -> str | None:
    if not ci or None in ci:
        return None
    if ci[0] >= RELIABLE:
        return "reliable"
    if ci[1] < TENTATIVE:
        return "unreliable"
    return "tentative"


def gwet_weights(domain: np.ndarray, level: str) -> np.ndarray:
    """Gwet's (2014) weights for the dimension's level: identity (nominal), ordinal
    (1 - M_kl / max M, M_kl = C(|rank_k - rank_l| + 1, 2)), quadratic (interval) and ratio
    (1 - ((x_k - x_l) / (x_k + x_l))^2 / its largest value)."""
    q = len(domain)
    if level == "nominal" or q < 2:
        return np.eye(q)
    if level == "ordinal":
        d = np.abs(np.subtract.outer(np.arange(q), np.arange(q)))
        m = d * (d + 1) / 2  # C(d + 1, 2)
        return 1 - m / m.max()
    if level == "ratio":
        total = np.add.outer(domain, domain)
        with np.errstate(divide="ignore", invalid="ignore"):
            m = np.where(total == 0, 0.0, (np.subtract.outer(domain, domain) / total) ** 2)
        return 1 - m / m.max() if m.max() > 0 else np.eye(q)
    span = float(domain.max() - domain.min())
    return 1 - np.subtract.outer(domain, domain) ** 2 / span**2


def _gwet_parts(counts: np.ndarray, w: np.ndarray):
    """Per unit: pa_i (NaN for a unit rated once: it has no pair) and pi_ik (every rated unit:
    Gwet takes the category shares over all rated units, pairs or not)."""
    r = counts.sum(axis=1)
    star = counts @ w.T
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = np.where(r >= 2, (counts * (star - 1)).sum(axis=1) / (r * (r - 1)), np.nan)
    return pa, counts / r[:, None]


def _gwet_from_sums(pa_sum, n_pa, pi_sum, n_pi, w):
    q = w.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = pa_sum / n_pa
        pi = pi_sum / n_pi[..., None]
        pe = w.sum() / (q * (q - 1)) * (pi * (1 - pi)).sum(axis=-1)
        return (pa - pe) / (1 - pe)


def gwet_ac(counts: np.ndarray, domain: np.ndarray, level: str = "nominal") -> float | None:
    """AC1 (nominal) / AC2 on a (units x categories) count matrix (units rated once count in
    the category shares only)."""
    counts = np.asarray(counts, dtype=float)
    counts = counts[counts.sum(axis=1) >= 1]
    pairs = counts.sum(axis=1) >= 2
    if not pairs.any() or len(domain) < 2:
        return None
    w = gwet_weights(np.asarray(domain, dtype=float), level)
    pa, pi = _gwet_parts(counts, w)
    value = _gwet_from_sums(
        np.nansum(pa), np.array(float(pairs.sum())), pi.sum(axis=0), np.array(float(len(pi))), w
    )
    return float(value) if np.isfinite(value) else None


def cohen_kappa(table) -> float:
    """Cohen's kappa of two raters from their (q x q) contingency table."""
    t = np.asarray(table, dtype=float)
    n = t.sum()
    po = np.trace(t) / n
    pe = float((t.sum(axis=0) * t.sum(axis=1)).sum() / n**2)
    return float((po - pe) / (1 - pe))


def _counts_by_unit(ratings: pd.DataFrame):
    """(counts U x V of every rated unit, domain, cluster index per unit) from unit, cluster,
    value rows."""
    rated = ratings[ratings["value"].notna()]
    if rated.empty:
        return np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=int)
    unit_codes, units = pd.factorize(rated["unit"], sort=True)
    domain, value_codes = np.unique(rated["value"].to_numpy(dtype=float), return_inverse=True)
    counts = np.zeros((len(units), len(domain)))
    np.add.at(counts, (unit_codes, value_codes), 1)
    cluster = np.zeros(len(units), dtype=int)
    cluster[unit_codes] = rated["cluster"].to_numpy(dtype=int)
    return counts, domain, cluster


def agreement_figures(
    ratings: pd.DataFrame, level: str, weights: np.ndarray, *, numeric: bool = True
) -> dict:
    """Alpha (package), exact / within-one, AC1 or AC2, their joint-bootstrap intervals, the
    band on alpha's interval and a note when alpha and AC disagree. ``ratings``: unit, coder,
    value, cluster (the test case's index into ``weights``' columns). ``within_one`` exists
    only for ordinal and wider scales (on a nominal scale "one apart" means nothing)."""
    base = krippendorff_alpha(ratings, level, n_boot=0, numeric=numeric and level != "nominal")
    ac_key = "ac1" if level == "nominal" else "ac2"
    base.update({ac_key: None, f"{ac_key}_ci95": None, "band": None, "note": None})
    base.update({"n_items": 0, "small_sample": False, "ci_reason": None})
    counts, domain, cluster = _counts_by_unit(ratings)
    paired = counts.sum(axis=1) >= 2 if len(counts) else np.zeros(0, dtype=bool)
    n_items = int(len(np.unique(cluster[paired])))
    base["n_items"] = n_items
    base["small_sample"] = bool(0 < n_items < joint.SMALL_SAMPLE)
    if not paired.any() or len(domain) < 2 or level not in LEVELS:
        return base
    w = gwet_weights(domain, level)
    pa, pi = _gwet_parts(counts, w)
    base[ac_key] = _gwet_from_sums(
        np.nansum(pa), np.array(float(paired.sum())), pi.sum(axis=0), np.array(float(len(pi))), w
    ).item()
    t = weights.shape[1]
    pa_c, npa_c, n_c, pi_c = np.zeros(t), np.zeros(t), np.zeros(t), np.zeros((t, len(domain)))
    np.add.at(pa_c, cluster[paired], pa[paired])
    np.add.at(npa_c, cluster[paired], 1.0)
    np.add.at(n_c, cluster, 1.0)
    np.add.at(pi_c, cluster, pi)
    ac_boot = _gwet_from_sums(weights @ pa_c, weights @ npa_c, weights @ pi_c, weights @ n_c, w)
    base[f"{ac_key}_ci95"], _ = joint.interval(ac_boot, n_items)
    if base["alpha"] is not None:
        o_c = np.zeros((t, len(domain), len(domain)))
        np.add.at(o_c, cluster[paired], unit_coincidences(counts[paired]))
        o = (weights @ o_c.reshape(t, -1)).reshape(len(weights), len(domain), len(domain))
        base["ci95"], base["ci_reason"] = joint.interval(
            alpha_from_coincidences(o, domain, level), n_items
        )
        # a resample of identical values: the interval is the point itself
        same = (base["ci_reason"] or "").startswith("all equal")
        base["band"] = band_on_interval([base["alpha"]] * 2 if same else base["ci95"])
        used = counts.sum(axis=0)
        base["note"] = _note(base, ac_key, level, n_items, float(used.max() / used.sum()))
    return base


def _note(fig: dict, ac_key: str, level: str, n_items: int, prevalent: float) -> str | None:
    """Why alpha and AC differ by more than ``DISAGREE``, naming the real cause: AC2's weights
    (on a scale wider than nominal, partial credit for near misses that alpha's distances
    weigh differently), prevalence (most ratings share one value, so alpha counts much of the
    agreement as chance and AC does not), or a small n (both are unstable)."""
    alpha, ac, exact = fig["alpha"], fig[ac_key], fig["exact"] or 0.0
    if ac is None or not math.isfinite(ac) or abs(alpha - ac) <= DISAGREE:
        return None
    label = "AC1" if ac_key == "ac1" else "AC2"
    head = f"alpha {alpha:.3f} and {label} {ac:.3f} disagree (exact agreement {exact:.3f}): "
    if n_items < joint.MIN_ITEMS:
        return head + f"with {n_items} test cases both are unstable; wait for more reviews"
    if prevalent >= PREVALENT:
        return head + (
            "most ratings share one value (prevalence), so alpha counts much of the agreement "
            f"as chance; {label} does not. Read both, and the exact agreement"
        )
    if level != "nominal":
        return head + (
            f"{label}'s {level} weights give near misses partial credit and take chance "
            "agreement from the number of scale points, while alpha weighs distances against "
            "how the values were used; read alpha for the decision, AC2 beside it"
        )
    return (
        head
        + f"chance agreement differs: alpha takes it from how often each value was used, {label} from the number of categories"
    )
