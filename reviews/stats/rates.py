"""Per-contender rates with Wilson intervals: each check kind's pass rate, each flag's rate.

A rate is ``{"rate", "ci95", "n", "small_sample"}`` with a Wilson (1927) score interval, valid
at any n >= 1 (so it is given even for tiny n, marked ``small_sample`` below 30), and
``{"rate": None, "ci95": None, "n": 0, "reason"}`` at n = 0.
"""

from __future__ import annotations

import pandas as pd

from reviews.stats.bias import wilson
from reviews.stats.joint import SMALL_SAMPLE


def rate(successes: int, n: int) -> dict:
    if n <= 0:
        return {"rate": None, "ci95": None, "n": 0, "reason": "no samples"}
    ci = wilson(int(successes), int(n))
    return {
        "rate": round(successes / n, 3),
        "ci95": [round(ci[0], 3), round(ci[1], 3)],
        "n": int(n),
        "small_sample": bool(n < SMALL_SAMPLE),
    }


def _nested(frame: pd.DataFrame, by: list[str], key: str) -> dict:
    """{(by values): {key value: rate}} in one groupby."""
    if frame.empty:
        return {}
    agg = frame.groupby([*by, key], sort=True, dropna=True)["passed"].agg(["sum", "size"])
    out: dict = {}
    for idx, s, n in zip(agg.index, agg["sum"], agg["size"], strict=True):
        out.setdefault(idx[:-1], {})[str(idx[-1])] = rate(int(s), int(n))
    return out


def contender_rates(checks: pd.DataFrame, flags: pd.DataFrame, names: list) -> dict:
    """``checks``: contender, tier, case_type, kind, passed (one row per sample and check kind);
    ``flags``: contender, tier, case_type, flag, passed (one row per judged output and flag,
    passed = 1 where the final outcome raised it). Returns {contender: {"checks": {kind: rate},
    "flags": {flag: rate}, "by_tier": {tier: {"checks", "flags"}}, "by_case_type": {...}}}."""
    overall = {
        "checks": _nested(checks, ["contender"], "kind"),
        "flags": _nested(flags, ["contender"], "flag"),
    }
    grouped = {
        column: {
            "checks": _nested(checks, ["contender", column], "kind"),
            "flags": _nested(flags, ["contender", column], "flag"),
        }
        for column in ("tier", "case_type")
    }
    out = {}
    for name in names:
        entry = {kind: overall[kind].get((name,), {}) for kind in ("checks", "flags")}
        for column, key in (("tier", "by_tier"), ("case_type", "by_case_type")):
            groups = sorted(
                {
                    g
                    for kind in ("checks", "flags")
                    for (c, g) in grouped[column][kind]
                    if c == name
                },
                key=str,
            )
            entry[key] = {
                str(g): {
                    kind: grouped[column][kind].get((name, g), {}) for kind in ("checks", "flags")
                }
                for g in groups
            }
        out[name] = entry
    return out
