"""Tool use per contender: how often the tool checks pass, how calls go wrong, how the model
recovers from a tool error, how many model calls and how long a task takes.

Pure: one row per done generation of a task that declares tools (the conversation regime, not
the single-turn one), with its transcript. Definitions (docs/statistics.md, "Tool use"):

* ``tool_call_accuracy``: share of samples (tasks x samples) whose ``tool_calls`` check
  passed, among the samples that ran one;
* ``invalid_call_rate``: share of tool calls whose arguments were not a valid object for the
  tool's schema or that named an undeclared tool; ``unmocked_call_rate``: share of calls no
  mock matched (both per call, over every call of every sample);
* ``error_recovery_rate``: among samples where a mock returned an error to the model, the
  share whose checks all passed;
* ``mean_steps``: model calls per task (per sample, averaged over a task's samples, then over
  tasks), ``completion_ms``: p50 / p95 of the completion time over samples.

Rates are Wilson rates (``rates.rate``); a rate of nothing is null with a reason.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reviews.stats.rates import rate
from tasks.checks import transcripts

TOOL_CHECK = "tool_calls"


def sample_rows(gens: pd.DataFrame) -> pd.DataFrame:
    """Per sample: contender, task, sample, tool_check (True/False/None), checks_passed,
    calls, invalid, unmocked, mocked_error (bool), steps, completion_ms."""

    def tool_check(results):
        r = results.get(TOOL_CHECK) if isinstance(results, dict) else None
        return bool(r.get("passed")) if isinstance(r, dict) else None

    def passed(v):
        return None if v is None or (isinstance(v, float) and np.isnan(v)) else bool(v)

    scripts = gens["transcript"].tolist()
    counts = [transcripts.call_counts(t) for t in scripts]
    return pd.DataFrame(
        {
            "contender": gens["contender"].to_numpy(),
            "task": gens["task"].to_numpy(),
            "sample": gens["sample"].to_numpy(),
            "tool_check": [tool_check(r) for r in gens["check_results"]],
            "checks_passed": [passed(v) for v in gens["checks_passed"]],
            "calls": [c["calls"] for c in counts],
            "invalid": [c["invalid"] for c in counts],
            "unmocked": [c["unmocked"] for c in counts],
            "mocked_error": [c["errors"] > 0 for c in counts],
            "steps": [float(transcripts.step_count(t)) for t in scripts],
            "completion_ms": gens["latency_ms"].to_numpy(dtype=float),
        }
    )


def _rate(successes: int, n: int, reason: str) -> dict:
    out = rate(successes, n)
    if n <= 0:
        out["reason"] = reason
    return out


def percentiles(values) -> dict | None:
    """{"p50", "p95"} by linear interpolation between order statistics (numpy's default)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return None
    p50, p95 = np.percentile(x, [50, 95])
    return {"p50": round(float(p50), 1), "p95": round(float(p95), 1)}


def contender_figures(rows: pd.DataFrame) -> dict:
    """The figures of one contender's sample rows (see the module docstring), without
    intervals of means (the report adds ``mean_steps_ci95`` from its joint bootstrap)."""
    checked = rows[rows["tool_check"].notna()]
    errored = rows[rows["mocked_error"] & rows["checks_passed"].notna()]
    calls = int(rows["calls"].sum())
    per_task = rows.groupby("task", sort=True)["steps"].mean()
    return {
        "tool_call_accuracy": _rate(
            int(checked["tool_check"].astype(bool).sum()),
            len(checked),
            "no sample ran a tool_calls check",
        ),
        "invalid_call_rate": _rate(int(rows["invalid"].sum()), calls, "no tool calls"),
        "unmocked_call_rate": _rate(int(rows["unmocked"].sum()), calls, "no tool calls"),
        "error_recovery_rate": _rate(
            int(errored["checks_passed"].astype(bool).sum()),
            len(errored),
            "no sample got an error from a mocked tool",
        ),
        "mean_steps": round(float(per_task.mean()), 3) if len(per_task) else None,
        "completion_ms": percentiles(rows["completion_ms"]),
        "n_samples": int(len(rows)),
        "n_tasks": int(rows["task"].nunique()),
        "n_calls": calls,
    }
