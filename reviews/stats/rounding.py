"""Figures made fit for JSON: the report's and the judges' API's numbers, rounded the same way."""

from __future__ import annotations

import math

import numpy as np


def clean(value):
    """Round floats (see below), NaN/inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        v = float(value)
        if not math.isfinite(v):
            return None
        # 12 decimals absolute (float noise like 1e-17 becomes 0), then 10 significant digits
        # (small costs per task such as 0.0000345 keep their precision).
        r = float(f"{round(v, 12):.10g}")
        return 0.0 if r == 0 else r
    return value
