"""Inter-rater agreement: Krippendorff's alpha with a unit bootstrap, exact and within-one.

Input is a long frame of raw ratings with columns ``unit``, ``coder`` and ``value`` (one row per
rating; NaN = not rated). The point estimate comes from the ``krippendorff`` package, always
with an explicit level of measurement. The bootstrap re-implements the same coincidence-matrix
formula so that it can be vectorized: every unit's coincidence matrix depends only on its
*value counts*, so units are grouped by their count pattern once, and a bootstrap resample of
the units is a multinomial draw over the patterns (the same distribution as drawing units with
replacement, at a cost that does not grow with the number of units).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from krippendorff import alpha as _package_alpha

LEVELS = ("nominal", "ordinal", "interval", "ratio")
RELIABLE, TENTATIVE = 0.800, 0.667


def band(alpha: float | None) -> str | None:
    """Alpha's bands: >= 0.800 reliable, 0.667-0.800 tentative, below that unreliable."""
    if alpha is None:
        return None
    if alpha >= RELIABLE:
        return "reliable"
    if alpha >= TENTATIVE:
        return "tentative"
    return "unreliable"


def value_counts(ratings: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(units x values) count matrix over the observed value domain, and that domain (sorted)."""
    rated = ratings.loc[ratings["value"].notna(), ["unit", "value"]]
    if rated.empty:
        return np.zeros((0, 0)), np.zeros(0)
    unit_codes, _ = pd.factorize(rated["unit"], sort=True)
    domain, value_codes = np.unique(rated["value"].to_numpy(dtype=float), return_inverse=True)
    counts = np.zeros((unit_codes.max() + 1, len(domain)))
    np.add.at(counts, (unit_codes, value_codes), 1)
    return counts, domain


def _distances(domain: np.ndarray, level: str, n_v: np.ndarray) -> np.ndarray:
    """Squared distance between domain values; ``n_v`` (..., V) only matters for ordinal."""
    v = domain
    if level == "nominal":
        d = (v[:, None] != v[None, :]).astype(float)
        return np.broadcast_to(d, n_v.shape[:-1] + d.shape)
    if level == "interval":
        d = (v[:, None] - v[None, :]) ** 2
        return np.broadcast_to(d, n_v.shape[:-1] + d.shape)
    if level == "ratio":
        s = v[:, None] + v[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(s == 0, 0.0, ((v[:, None] - v[None, :]) / np.where(s == 0, 1, s)) ** 2)
        return np.broadcast_to(d, n_v.shape[:-1] + d.shape)
    if level == "ordinal":
        # (sum of n_g for g between c and k, inclusive, minus (n_c + n_k) / 2) ** 2
        cum = np.cumsum(n_v, axis=-1)
        idx = np.arange(len(v))
        lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
        before_lo = np.where(lo > 0, cum[..., np.maximum(lo - 1, 0)], 0.0)
        between = cum[..., hi] - before_lo
        return (between - (n_v[..., lo] + n_v[..., hi]) / 2) ** 2
    raise ValueError(f"unknown level of measurement {level!r}")


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices (units x V x V) for units with >= 2 ratings."""
    m = counts.sum(axis=1)
    o = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(counts.shape[1])
    o[:, idx, idx] -= counts
    return o / (m - 1)[:, None, None]


def alpha_from_coincidences(o: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """Alpha for one or many (..., V, V) coincidence matrices over `domain` (NaN where
    undefined): the module's own formula, also for statistics that build their own matrices
    (calibration, reliability)."""
    n_v = o.sum(axis=-1)
    n = n_v.sum(axis=-1)
    d = _distances(domain, level, n_v)
    observed = (o * d).sum(axis=(-2, -1))
    expected = (n_v[..., :, None] * n_v[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            expected > 0, 1 - (n - 1) * observed / np.where(expected > 0, expected, 1), np.nan
        )


def _pair_agreement(counts: np.ndarray, domain: np.ndarray) -> tuple[float, float]:
    """Share of rating pairs (within a unit) that are equal, and that differ by at most one."""
    pairs = (counts.sum(axis=1) * (counts.sum(axis=1) - 1) / 2).sum()
    equal = (counts * (counts - 1) / 2).sum()
    close = np.abs(domain[:, None] - domain[None, :]) <= 1 + 1e-9
    np.fill_diagonal(close, False)
    near = (counts[:, :, None] * counts[:, None, :] * close).sum() / 2
    return float(equal / pairs), float((equal + near) / pairs)


def krippendorff_alpha(
    ratings: pd.DataFrame,
    level: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    numeric: bool = True,
) -> dict:
    """Alpha at ``level`` with a 95% percentile bootstrap CI over units.

    Returns ``{"alpha", "level", "ci95", "band", "n_units", "n_ratings", "exact", "within_one",
    "reason"}``; ``alpha`` is None with a ``reason`` when it is undefined (no unit rated twice,
    a single value in the domain, no variation). ``numeric=False`` (nominal categories coded as
    integers) leaves out within-one agreement, which means nothing for categories.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    result = {
        "alpha": None,
        "level": level,
        "ci95": None,
        "band": None,
        "n_units": 0,
        "n_ratings": 0,
        "exact": None,
        "within_one": None,
        "reason": None,
    }
    counts, domain = value_counts(ratings)
    pairable = counts[counts.sum(axis=1) >= 2] if len(counts) else counts
    result["n_units"] = int(len(pairable))
    result["n_ratings"] = int(pairable.sum())
    if len(pairable) == 0:
        result["reason"] = "no unit was rated by two or more reviewers"
        return result
    result["exact"], within_one = _pair_agreement(pairable, domain)
    result["within_one"] = within_one if numeric else None
    if len(domain) < 2:
        result["reason"] = "every rating has the same value, so alpha is undefined (no variation)"
        return result
    point, reason = _point_alpha(pairable, domain, level)
    if point is None:
        result["reason"] = reason
        return result
    result["alpha"] = point
    result["band"] = band(point)
    if len(pairable) < 2:
        result["reason"] = "one unit: no confidence interval"
        return result
    result["ci95"] = _bootstrap_ci(pairable, domain, level, n_boot=n_boot, seed=seed)
    return result


def _point_alpha(pairable: np.ndarray, domain: np.ndarray, level: str):
    """(alpha, None), or (None, why it is undefined) on the pairable units' counts."""
    try:
        # The package (reference implementation), on counts of the pairable units. When the
        # paired ratings show no variation it divides 0 by 0: handled below, not a warning.
        with np.errstate(invalid="ignore", divide="ignore"):
            point = float(
                _package_alpha(
                    value_counts=pairable, value_domain=domain, level_of_measurement=level
                )
            )
    except ValueError as exc:
        return None, f"alpha is undefined: {exc}"
    if not np.isfinite(point):
        return None, "the paired ratings show no variation, so alpha is undefined"
    return point, None


def _bootstrap_ci(counts: np.ndarray, domain: np.ndarray, level: str, *, n_boot: int, seed: int):
    if n_boot <= 0:
        return None
    patterns, freq = unique_rows(counts)
    per_pattern = unit_coincidences(patterns)  # P x V x V, computed once
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(counts), freq / freq.sum(), size=n_boot).astype(float)  # B x P
    o = np.einsum("bp,pij->bij", draws, per_pattern)
    boot = alpha_from_coincidences(o, domain, level)
    boot = boot[np.isfinite(boot)]
    if len(boot) < n_boot * 0.5:
        return None
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return [float(lo), float(hi)]


def coincidence_alpha(ratings: pd.DataFrame, level: str) -> float | None:
    """The same alpha from this module's own coincidence code (used to check it matches)."""
    counts, domain = value_counts(ratings)
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) == 0 or len(domain) < 2:
        return None
    value = alpha_from_coincidences(unit_coincidences(pairable).sum(axis=0), domain, level)
    return float(value) if np.isfinite(value) else None


def categorical_codes(values: pd.Series) -> pd.Series:
    """Nominal categories (strings) -> float codes, NaN kept, stable across runs (sorted)."""
    present = values.dropna()
    mapping = {v: float(i) for i, v in enumerate(sorted(present.unique(), key=str))}
    return values.map(mapping)


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows (sorted by their bytes) and how often each occurs; faster than
    ``np.unique(axis=0)`` because it compares whole rows as raw bytes."""
    rows = np.ascontiguousarray(rows, dtype=float)
    view = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, freq = np.unique(view, return_index=True, return_counts=True)
    return rows[first], freq
