"""Stability over repeated samples, and pass@k / pass^k.

stability = 1 - population std / mean of a task's sample scores, clipped to [0, 1].
Mean = 0: scores here are qualities in 0..1, so a zero mean means every sample scored 0; that
is perfectly *consistent*, so stability is 1.0 (quality tells how good). For signed inputs a
zero mean with spread has an unbounded coefficient of variation: stability 0.0.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def stability(scores) -> float | None:
    x = np.asarray(scores, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return None
    mean, std = float(x.mean()), float(x.std(ddof=0))
    if mean == 0:
        return 1.0 if std == 0 else 0.0
    return float(min(1.0, max(0.0, 1 - std / abs(mean))))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n - c, k) / C(n, k); needs n >= k."""
    if k > n:
        raise ValueError("pass@k needs at least k samples")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that k samples drawn without replacement all pass, C(c, k) / C(n, k)."""
    if k > n:
        raise ValueError("pass^k needs at least k samples")
    return math.comb(c, k) / math.comb(n, k)


def contender_stability(sample_quality: pd.DataFrame) -> dict:
    """{contender: {"stability", "n_tasks"}} from rows (contender, task, sample, quality);
    the mean of per-task stability over tasks with at least two scored samples."""
    out = {}
    if sample_quality.empty:
        return out
    per_sample = sample_quality.groupby(["contender", "task", "sample"], sort=True)[
        "quality"
    ].mean()
    per_sample = per_sample[np.isfinite(per_sample)]
    agg = per_sample.groupby(level=["contender", "task"], sort=True).agg(["mean", "std", "size"])
    # Vectorized form of `stability` (population std: pandas' std is ddof=1, rescale it).
    std = agg["std"] * np.sqrt((agg["size"] - 1) / agg["size"])
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (1 - std / agg["mean"].abs()).clip(0, 1)
    value = value.where(agg["mean"] != 0, np.where(std.round(15) == 0, 1.0, 0.0))
    value = value.where(agg["size"] >= 2)
    for contender, values in value.groupby(level="contender", sort=True):
        values = values.dropna()
        out[contender] = {
            "stability": float(values.mean()) if len(values) else None,
            "n_tasks": int(len(values)),
        }
    return out


def contender_pass(samples: pd.DataFrame, k: int) -> dict:
    """{contender: {"pass_at_1", "pass_at_k", "pass_hat_k", "k", "n_tasks"}} from rows
    (contender, task, passed) with one row per finished sample. Tasks with fewer than k
    finished samples count for pass@1 only."""
    out = {}
    if samples.empty:
        return out
    counts = samples.groupby(["contender", "task"], sort=True)["passed"].agg(["size", "sum"])
    for contender, frame in counts.groupby(level="contender", sort=True):
        n = frame["size"].to_numpy()
        c = frame["sum"].to_numpy().astype(int)
        p1 = float(np.mean(c / n))
        full = n >= k
        at_k = [pass_at_k(int(a), int(b), k) for a, b in zip(n[full], c[full], strict=True)]
        hat_k = [pass_hat_k(int(a), int(b), k) for a, b in zip(n[full], c[full], strict=True)]
        out[contender] = {
            "pass_at_1": p1,
            "pass_at_k": float(np.mean(at_k)) if at_k else None,
            "pass_hat_k": float(np.mean(hat_k)) if hat_k else None,
            "k": k,
            "n_tasks": int(len(frame)),
        }
    return out


MAX_SD = 0.5  # the largest population SD a score on a 0..1 scale can have (the scale of stability)


def task_spreads(sample_quality: pd.DataFrame) -> pd.DataFrame:
    """Per (contender, task): ``n_samples`` (scored samples) and ``sampling_sd``, the unbiased
    SD (ddof = 1) of its normalized sample scores; NaN for a task with one scored sample (no
    spread to measure: left out of the mean, and counted). Rows: contender, task, sample,
    quality. The population SD (ddof = 0) is biased low on 2-3 samples: scores 0.8 and 0.6
    give 0.1 against the unbiased 0.141."""
    if sample_quality.empty:
        return pd.DataFrame(columns=["contender", "task", "n_samples", "sampling_sd"])
    per_sample = sample_quality.groupby(["contender", "task", "sample"], sort=True)[
        "quality"
    ].mean()
    per_sample = per_sample[np.isfinite(per_sample)]
    agg = per_sample.groupby(level=["contender", "task"], sort=True).agg(["std", "size"])
    sd = agg["std"].where(agg["size"] >= 2).round(15)
    return pd.DataFrame(
        {"n_samples": agg["size"].astype(int), "sampling_sd": sd}, index=agg.index
    ).reset_index()


def spread_stability(sampling_sd: float | None) -> float | None:
    """Stage-2 stability: 1 - sampling_sd / 0.5, clipped to [0, 1]. It reads the spread on the
    scale people scored, so equal spreads give equal stability whatever the mean (1 - CV gave
    0.5 at mean 0.2 and 0.875 at mean 0.8 for the same spread)."""
    if sampling_sd is None or not np.isfinite(sampling_sd):
        return None
    return float(min(1.0, max(0.0, 1 - sampling_sd / MAX_SD)))
