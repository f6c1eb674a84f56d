"""Throughput and the parts of the tokens and cost: output tokens per second, reasoning and
cached tokens, reasoning cost.

tokens_per_s of one answer = output tokens / its streaming time (first token of any kind,
reasoning included, to the last), stored when the answer is; p50 and p95 over a contender's
done answers. Reasoning cost per task = the mean over its test cases of the mean reasoning
cost of the task's answers, as cost per task is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PARTS = ("reasoning_tokens", "cache_read_tokens", "cache_write_tokens")


def _percentiles(values: pd.Series) -> dict | None:
    x = values.dropna().to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return None
    p50, p95 = np.percentile(x, [50, 95])
    return {"p50": round(float(p50), 3), "p95": round(float(p95), 3)}


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    """A column as floats (NaN where unknown); all NaN when the frame lacks it."""
    if name not in frame:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[name], errors="coerce").astype(float)


def usage_figures(gens: pd.DataFrame) -> dict:
    """{contender: {"tokens_per_s": {"p50", "p95"} | None, "n_timed", "reasoning_tokens",
    "cache_read_tokens", "cache_write_tokens" (totals, None when never reported),
    "reasoning_cost_per_task" (None when never reported)}} over done generations (columns
    contender, task, tokens_per_s, reasoning_tokens, cache_*_tokens, reasoning_cost)."""
    out = {}
    for contender, frame in gens.groupby("contender", sort=True):
        rate = _column(frame, "tokens_per_s")
        figures = {"tokens_per_s": _percentiles(rate), "n_timed": int(rate.notna().sum())}
        for part in PARTS:
            values = _column(frame, part)
            figures[part] = int(values.sum()) if values.notna().any() else None
        cost = frame.assign(reasoning_cost=_column(frame, "reasoning_cost"))
        per_task = cost.groupby("task", sort=True)["reasoning_cost"].mean()
        figures["reasoning_cost_per_task"] = (
            round(float(per_task.mean()), 8) if per_task.notna().any() else None
        )
        out[contender] = figures
    return out
