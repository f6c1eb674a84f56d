"""Per-contender rates with Wilson intervals: each check kind's pass rate, each flag's rate.

A rate is ``{"rate", "ci95", "n", "small_sample"}`` with a Wilson (1927) score interval, valid
at any n >= 1 (so it is given even for tiny n, marked ``small_sample`` below 30), and
``{"rate": None, "ci95": None, "n": 0, "reason"}`` at n = 0.
"""

from __future__ import annotations

import pandas as pd

from .bias import wilson
from .joint import SMALL_SAMPLE


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


def rates_by(frame: pd.DataFrame, key: str) -> dict:
    """{key value: rate} from rows (key, passed 0/1)."""
    out = {}
    for value, group in frame.groupby(key, sort=True):
        out[str(value)] = rate(int(group["passed"].sum()), int(len(group)))
    return out


def contender_rates(checks: pd.DataFrame, flags: pd.DataFrame, names: list) -> dict:
    """``checks``: contender, tier, case_type, kind, passed (one row per sample and check kind);
    ``flags``: contender, tier, case_type, flag, passed (one row per judged output and flag,
    passed = 1 where the final outcome raised it). Returns {contender: {"checks": {kind: rate},
    "flags": {flag: rate}, "by_tier": {tier: {"checks", "flags"}}, "by_case_type": {...}}}."""
    out = {}
    for name in names:
        c = checks[checks["contender"] == name]
        f = flags[flags["contender"] == name]
        entry = {"checks": rates_by(c, "kind"), "flags": rates_by(f, "flag")}
        for column, key in (("tier", "by_tier"), ("case_type", "by_case_type")):
            groups = sorted(set(c[column].dropna()) | set(f[column].dropna()), key=str)
            entry[key] = {
                str(g): {
                    "checks": rates_by(c[c[column] == g], "kind"),
                    "flags": rates_by(f[f[column] == g], "flag"),
                }
                for g in groups
            }
        out[name] = entry
    return out
