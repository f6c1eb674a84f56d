"""Per-reviewer figures: volume, speed, offset from the final outcome, agreement with others."""

from __future__ import annotations

import numpy as np
import pandas as pd


def reviewer_figures(raw: pd.DataFrame, reviews: pd.DataFrame, final: pd.DataFrame) -> dict:
    """``raw``: reviewer, output, dimension, value (raw scores); ``reviews``: reviewer, seconds;
    ``final``: output, dimension, value (final outcome). Returns {reviewer: {"reviews",
    "median_seconds", "mean_offset", "mean_abs_offset", "agreement_exact", "agreement_within_one",
    "n_compared"}}; offset = own score - final score (positive = more lenient)."""
    out = {}
    rated = raw[raw["value"].notna()]
    joined = rated.merge(
        final[final["value"].notna()].rename(columns={"value": "final"}),
        on=["output", "dimension"],
        how="inner",
    )
    joined["offset"] = joined["value"] - joined["final"]
    joined["abs_offset"] = joined["offset"].abs()
    pairs = rated.merge(rated, on=["output", "dimension"], suffixes=("", "_other"))
    pairs = pairs[pairs["reviewer"] != pairs["reviewer_other"]]
    pairs = pairs.assign(gap=(pairs["value"] - pairs["value_other"]).abs())
    offsets = joined.groupby("reviewer", sort=True)[["offset", "abs_offset"]].mean()
    mean_offset, mean_abs = offsets["offset"], offsets["abs_offset"]
    pairs = pairs.assign(exact=pairs["gap"] < 1e-9, near=pairs["gap"] <= 1 + 1e-9)
    exact = pairs.groupby("reviewer", sort=True).agg(
        exact=("exact", "mean"), near=("near", "mean"), n=("gap", "size")
    )
    for reviewer, frame in reviews.groupby("reviewer", sort=True):
        seconds = frame["seconds"].dropna()
        row = {
            "reviews": int(len(frame)),
            "median_seconds": float(np.median(seconds)) if len(seconds) else None,
            "mean_offset": float(mean_offset[reviewer]) if reviewer in mean_offset.index else None,
            "mean_abs_offset": float(mean_abs[reviewer]) if reviewer in mean_abs.index else None,
            "agreement_exact": None,
            "agreement_within_one": None,
            "n_compared": 0,
        }
        if reviewer in exact.index:
            row["agreement_exact"] = float(exact.loc[reviewer, "exact"])
            row["agreement_within_one"] = float(exact.loc[reviewer, "near"])
            row["n_compared"] = int(exact.loc[reviewer, "n"])
        out[reviewer] = row
    return out
