"""Cost, latency and the decision score.

cost of one answer = the stored cost, or tokens x price per million where it was not stored.
normalized cost = cost per task / the cheapest contender's cost per task (some free: free = 0,
paid / the most expensive; see `normalized_costs`).
decision_score = (w_quality x quality + w_stability x stability) / normalized cost, without the
cost term when some contender is free (a ratio to 0 would be infinite).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def answer_costs(gens: pd.DataFrame) -> pd.Series:
    """Columns cost, input_tokens, output_tokens, price_in, price_out (per million tokens).

    An answer whose provider reported no token counts (and no cost) has an unknown cost, NaN,
    not a cost of 0: as in ``tasks.generation.providers.base.cost_of``."""
    computed = (
        gens["input_tokens"].fillna(0) * gens["price_in"]
        + gens["output_tokens"].fillna(0) * gens["price_out"]
    ) / 1e6
    unknown = gens["input_tokens"].isna() & gens["output_tokens"].isna()
    return gens["cost"].where(gens["cost"].notna(), computed.mask(unknown))


def _percentiles(values: pd.Series) -> dict | None:
    x = values.dropna().to_numpy(dtype=float)
    if len(x) == 0:
        return None
    p50, p95 = np.percentile(x, [50, 95])
    return {"p50": float(p50), "p95": float(p95)}


def cost_latency(gens: pd.DataFrame) -> dict:
    """{contender: {"cost_per_task", "latency_ms": {"p50", "p95"}, "ttft_ms": {...}, "n"}} over
    done generations (columns contender, task, answer_cost, latency_ms, ttft_ms)."""
    out = {}
    for contender, frame in gens.groupby("contender", sort=True):
        per_task = frame.groupby("task", sort=True)["answer_cost"].mean()
        out[contender] = {
            "cost_per_task": float(per_task.mean()) if per_task.notna().any() else None,
            "latency_ms": _percentiles(frame["latency_ms"]),
            "ttft_ms": _percentiles(frame["ttft_ms"]),
            "n": int(len(frame)),
        }
    return out


NO_COST_DATA = "no cost data: its provider reported neither a cost nor token counts"


def normalized_costs(cost_per_task: dict) -> tuple[dict, str | None]:
    """cost / the cheapest contender's cost. When some contenders are free (cost 0) and others
    are not, a ratio to 0 is undefined: free ones are 0 and paid ones are normalized against the
    most expensive (so the scale still reads 'share of the dearest'); when all are free, the
    ratio means nothing and is None. A contender without cost data is None (see
    ``NO_COST_DATA``). Returns (normalized, how it was normalized, or why not)."""
    known = {c: v for c, v in cost_per_task.items() if v is not None}
    if not known:
        return dict.fromkeys(cost_per_task), "no cost data"
    if all(v <= 0 for v in known.values()):
        return dict.fromkeys(cost_per_task), "every contender is free"
    if min(known.values()) <= 0:
        dearest = max(known.values())
        return (
            {c: (None if v is None else max(v, 0.0) / dearest) for c, v in cost_per_task.items()},
            "some contenders are free (cost 0): free = 0, paid ones against the most expensive",
        )
    cheapest = min(known.values())
    return {c: (v / cheapest if v is not None else None) for c, v in cost_per_task.items()}, None


def decision_score(quality, stability, normalized_cost, w_quality: float, w_stability: float):
    """None when a needed figure is missing; a missing stability drops its term (reported)."""
    if quality is None or normalized_cost is None or normalized_cost <= 0:
        return None
    if stability is None:
        return w_quality * quality / (w_quality or 1.0) / normalized_cost if w_quality else None
    return (w_quality * quality + w_stability * stability) / normalized_cost
