"""Monitor metrics and comparisons: pure functions on numpy arrays (no ORM, no I/O).

A contender's run is a `RunTable`: per task (rows, in task-id order) and sample (columns), whether
the sample passed, its latency, cost, ... (NaN where a value does not exist: a failed call has
no latency, a task without a regex check has no regex result).

Definitions (docs/monitors.md):
- a sample passes when its call succeeded and none of its checks failed (a task without checks
  passes on any answer); `check_pass_rate` is the share of passing samples, and
  `check_pass_rate.<kind>` the same over the samples that ran that kind of check;
- a task passes when at least half of its samples pass; pass_at_1 is the mean over tasks of
  c / n, pass_at_k (k = n) the share of tasks with a passing sample, pass_hat_k the share whose
  every sample passes (the unbiased estimators at k = n);
- cost_per_task is the mean over tasks of a task's mean answer cost (as the campaign report);
- completion_ms is the wall time of the task's answer: one call, so the call's latency.

Comparison: CIs by a paired percentile bootstrap over the tasks both sides share (the same
resampled tasks on both sides, fixed seed); p by the exact two-sided sign test over the tasks
whose pass changed (for rates), or whose per-task mean moved (for times, sizes and costs).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from tasks.checks.automatic import KNOWN as CHECK_KINDS

N_BOOT = 1000
SEED = 20260126

REFUSAL = re.compile(
    r"\b(i can(?:no|')t (?:help|assist|do that|comply)|i(?:'m| am) (?:unable|not able) to|"
    r"i (?:won't|will not) (?:help|assist))",
    re.I,
)
# metric -> (source array, statistic): "mean" over samples, "p50"/"p95" over samples, or a
# per-task statistic of the pass array.
SAMPLE_METRICS = {
    "check_pass_rate": ("passed", "mean"),
    "refusal_rate": ("refusal", "mean"),
    "error_rate": ("error", "mean"),
    "answer_chars.p50": ("chars", "p50"),
    "answer_chars.p95": ("chars", "p95"),
    "latency_ms.p50": ("latency", "p50"),
    "latency_ms.p95": ("latency", "p95"),
    "ttft_ms.p50": ("ttft", "p50"),
    "ttft_ms.p95": ("ttft", "p95"),
    "completion_ms.p50": ("latency", "p50"),
    "completion_ms.p95": ("latency", "p95"),
    # output tokens per second while the answer streamed (higher is faster)
    "tokens_per_s.p50": ("tokens_per_s", "p50"),
    "tokens_per_s.p95": ("tokens_per_s", "p95"),
}
TASK_METRICS = ("pass_at_1", "pass_at_k", "pass_hat_k", "cost_per_task", "tool_call_accuracy")
# How a threshold reads a metric: rates move in absolute terms, times/sizes/costs relatively.
RATE_METRICS = {
    "check_pass_rate",
    "refusal_rate",
    "error_rate",
    "pass_at_1",
    "pass_at_k",
    "pass_hat_k",
    "tool_call_accuracy",
}
COUNT_METRICS = {"regressed_tasks", "improved_tasks"}
PASS_METRICS = {"check_pass_rate", "pass_at_1", "pass_at_k", "pass_hat_k", "tool_call_accuracy"}


# A judge's mean score on a rubric dimension (`judge.tone`), or its preference for the run's
# output over the baseline's: points on the rubric's scale and a share, both moving in
# absolute terms. The dimension's name is the rubric's key.
JUDGE_METRIC = re.compile(r"^judge\.[A-Za-z0-9_-]{1,100}$")
# The share of the run's outputs the judge prefers to the baseline run's output of the same
# task and sample (a tie counts half). Against itself the baseline's share is 0.5 by
# construction, so the comparison's delta is the win rate minus 0.5, resampled over tasks
# like every other metric.
PREFERENCE = "judge.preference_win_rate"


def is_rate(metric: str) -> bool:
    return (
        metric in RATE_METRICS
        or metric.startswith("check_pass_rate.")
        or metric.startswith("judge.")
    )


def known_metric(metric: str) -> bool:
    return (
        metric in SAMPLE_METRICS
        or metric in TASK_METRICS
        or metric in COUNT_METRICS
        or metric == "served_model"
        or (metric.startswith("check_pass_rate.") and metric.split(".", 1)[1] in CHECK_KINDS)
        or bool(JUDGE_METRIC.match(metric))
    )


def metric_choices() -> list[str]:
    """Every metric a threshold may name, for the monitor form's picker."""
    return [
        "check_pass_rate",
        *(f"check_pass_rate.{k}" for k in CHECK_KINDS),
        *TASK_METRICS,
        *(m for m in SAMPLE_METRICS if m != "check_pass_rate"),
        *sorted(COUNT_METRICS),
        "served_model",
    ]


@dataclass
class RunTable:
    tasks: list[str]
    samples: int
    arrays: dict[str, np.ndarray]  # (tasks, samples) floats, NaN = no value
    kinds: dict[str, np.ndarray] = field(default_factory=dict)  # check kind -> pass (0/1/NaN)
    tool: np.ndarray | None = None  # (tasks, samples) tool_calls check pass, when any
    failed_checks: dict[str, list[str]] = field(default_factory=dict)
    served: Counter = field(default_factory=Counter)
    fingerprints: Counter = field(default_factory=Counter)
    judge: dict[str, np.ndarray] = field(default_factory=dict)  # dimension -> judge's scores
    # (tasks, samples): 1 the judge preferred the run's output to the baseline's, 0 the
    # baseline's, 0.5 a tie; NaN not judged. None: not judged against a baseline.
    preference: np.ndarray | None = None


def judge_scores_add(table: RunTable, rows: list[dict]) -> RunTable:
    """Put a judge's scores of the run's outputs into the table: rows {task, sample,
    dimension, value} (one per output and dimension), an array per dimension with NaN where
    an output was not judged (a failed call, a failed judgement)."""
    index = {t: i for i, t in enumerate(table.tasks)}
    for row in rows:
        i, j = index.get(row["task"]), row["sample"]
        if i is None or j >= table.samples:
            continue
        shape = (len(table.tasks), table.samples)
        table.judge.setdefault(row["dimension"], np.full(shape, np.nan))[i, j] = row["value"]
    return table


def judge_preferences_add(table: RunTable, rows: list[dict]) -> RunTable:
    """Put the judge's preferences of the run's outputs over the baseline's into the table:
    rows {task, sample, value} (1, 0 or 0.5), NaN where an output was not judged."""
    index = {t: i for i, t in enumerate(table.tasks)}
    values = np.full((len(table.tasks), table.samples), np.nan)
    for row in rows:
        i, j = index.get(row["task"]), row["sample"]
        if i is not None and j < table.samples:
            values[i, j] = row["value"]
    table.preference = values
    return table


def even_preference(base: RunTable, run: RunTable) -> RunTable:
    """The baseline's side of the preference: 0.5 (an output against itself) wherever the
    run's output was judged, on the baseline's tasks; the table is left as it is when the
    run has no preference (or the baseline has one of its own)."""
    if run.preference is None or base.preference is not None:
        return base
    index = {t: i for i, t in enumerate(run.tasks)}
    values = np.full((len(base.tasks), base.samples), np.nan)
    width = min(base.samples, run.samples)
    for i, task in enumerate(base.tasks):
        if task in index:
            judged = run.preference[index[task], :width]
            values[i, :width] = np.where(np.isnan(judged), np.nan, 0.5)
    return replace(base, preference=values)


def run_table(rows: list[dict], *, tasks: list[str], samples: int) -> RunTable:
    """rows: one per generation {task, sample, status, output, check_results, checks_passed,
    latency_ms, ttft_ms, cost, served_model, fingerprint, tokens_per_s?}; `tasks` fixes the
    row order."""
    index = {t: i for i, t in enumerate(tasks)}
    shape = (len(tasks), samples)
    arrays = {k: np.full(shape, np.nan) for k in ("passed", "refusal", "error", "chars")}
    arrays.update({k: np.full(shape, np.nan) for k in ("latency", "ttft", "cost", "tokens_per_s")})
    kinds: dict[str, np.ndarray] = {}
    failed: dict[str, set] = {}
    served, fingerprints = Counter(), Counter()
    for row in rows:
        i, j = index.get(row["task"]), row["sample"]
        if i is None or j >= samples:
            continue
        done = row["status"] == "done"
        arrays["error"][i, j] = 0.0 if done else 1.0
        results = row.get("check_results") or {}
        arrays["passed"][i, j] = 1.0 if done and row.get("checks_passed") is not False else 0.0
        if not done:
            continue
        output = row.get("output") or ""
        arrays["refusal"][i, j] = 1.0 if not output.strip() or REFUSAL.search(output) else 0.0
        arrays["chars"][i, j] = len(output)
        for key, source in (
            ("latency", "latency_ms"),
            ("ttft", "ttft_ms"),
            ("cost", "cost"),
            ("tokens_per_s", "tokens_per_s"),
        ):
            if row.get(source) is not None:
                arrays[key][i, j] = float(row[source])
        for kind, result in results.items():
            passed = bool((result or {}).get("passed"))
            kinds.setdefault(kind, np.full(shape, np.nan))[i, j] = 1.0 if passed else 0.0
            if not passed:
                failed.setdefault(row["task"], set()).add(kind)
        if row.get("served_model"):
            served[row["served_model"]] += 1
        if row.get("fingerprint"):
            fingerprints[row["fingerprint"]] += 1
    return RunTable(
        tasks=list(tasks),
        samples=samples,
        arrays=arrays,
        kinds=kinds,
        tool=kinds.get("tool_calls"),
        failed_checks={t: sorted(k) for t, k in failed.items()},
        served=served,
        fingerprints=fingerprints,
    )


# -- statistics on (B, tasks, samples) stacks: B = 1 for the point value ----------------------


def _sample_stat(stack: np.ndarray, stat: str) -> np.ndarray:
    flat = stack.reshape(stack.shape[0], -1)
    has_nan = np.isnan(flat).any()
    with np.errstate(all="ignore"), _quiet():
        if stat == "mean":
            return np.nanmean(flat, axis=1) if has_nan else flat.mean(axis=1)
        q = 50 if stat == "p50" else 95
        return np.nanpercentile(flat, q, axis=1) if has_nan else np.percentile(flat, q, axis=1)


def _task_stat(stack: np.ndarray, metric: str, samples: int) -> np.ndarray:
    with np.errstate(all="ignore"), _quiet():
        if metric == "cost_per_task":
            return np.nanmean(np.nanmean(stack, axis=2), axis=1)
        c = np.nansum(stack, axis=2)
        n = np.sum(~np.isnan(stack), axis=2)
        if metric == "pass_at_1" or metric == "tool_call_accuracy":
            per_task = np.where(n > 0, c / np.maximum(n, 1), np.nan)
        elif metric == "pass_at_k":
            per_task = np.where(n > 0, (c > 0).astype(float), np.nan)
        else:  # pass_hat_k
            per_task = np.where(n > 0, (c == n).astype(float), np.nan)
        return np.nanmean(per_task, axis=1)


class _quiet:
    """All-NaN slices are a metric without data (None), not a warning."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def _source(table: RunTable, metric: str) -> tuple[np.ndarray | None, str]:
    if metric in SAMPLE_METRICS:
        name, stat = SAMPLE_METRICS[metric]
        return table.arrays[name], stat
    if metric.startswith("check_pass_rate."):
        return table.kinds.get(metric.split(".", 1)[1]), "mean"
    if metric == PREFERENCE:
        return table.preference, "mean"
    if metric.startswith("judge."):
        return table.judge.get(metric.split(".", 1)[1]), "mean"
    if metric == "cost_per_task":
        return table.arrays["cost"], "task"
    if metric == "tool_call_accuracy":
        return table.tool, "task"
    return table.arrays["passed"], "task"


def _stat(
    table: RunTable, metric: str, rows: np.ndarray, cache: dict | None = None
) -> np.ndarray | None:
    """The metric on the rows picked by `rows` (B, n) of the table: B values (NaN = no data).

    `cache` (one per table and `rows`) keeps what several metrics share: the resampled stack
    of a source array, and both percentiles of it from one partition (latency_ms and
    completion_ms are one source; p50 and p95 one sort)."""
    values, stat = _source(table, metric)
    if values is None:
        return None
    cache = {} if cache is None else cache
    stack = cache.get(id(values))
    if stack is None:
        stack = cache[id(values)] = values[rows]
    if stat == "task":
        return _task_stat(stack, metric, table.samples)
    if stat == "mean":
        return _sample_stat(stack, stat)
    key = (id(values), "pct")
    if key not in cache:
        flat = stack.reshape(stack.shape[0], -1)
        with np.errstate(all="ignore"), _quiet():
            pick = np.nanpercentile if np.isnan(flat).any() else np.percentile
            cache[key] = pick(flat, [50, 95], axis=1)
    return cache[key][0 if stat == "p50" else 1]


def metric_names(table: RunTable) -> list[str]:
    kinds = [f"check_pass_rate.{k}" for k in sorted(table.kinds)]
    return [
        "check_pass_rate",
        *kinds,
        "pass_at_1",
        "pass_at_k",
        "pass_hat_k",
        "tool_call_accuracy",
        *SAMPLE_METRICS.keys() - {"check_pass_rate"},
        "cost_per_task",
        *(f"judge.{d}" for d in sorted(table.judge)),
        *([PREFERENCE] if table.preference is not None else []),
    ]


def _number(value) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), 6)


def run_metrics(table: RunTable) -> dict:
    """{metric: value} for one contender's run, plus served_models and fingerprints."""
    everything = np.arange(len(table.tasks))[None, :]
    out = {}
    for metric in sorted(set(metric_names(table))):
        value = _stat(table, metric, everything)
        out[metric] = None if value is None else _number(value[0])
    out["served_models"] = dict(sorted(table.served.items()))
    out["fingerprints"] = dict(sorted(table.fingerprints.items()))
    out["n_tasks"] = len(table.tasks)
    out["n_samples"] = int(np.sum(~np.isnan(table.arrays["error"])))
    return out


def task_passes(table: RunTable, values: np.ndarray | None = None) -> np.ndarray:
    """Per task: 1 when at least half its samples pass, 0 when not, NaN without samples."""
    values = table.arrays["passed"] if values is None else values
    n = np.sum(~np.isnan(values), axis=1)
    c = np.nansum(values, axis=1)
    return np.where(n > 0, (c >= n / 2).astype(float), np.nan)


def sign_test(up: int, down: int) -> float:
    """Exact two-sided sign test (McNemar's exact test on the discordant pairs); 1.0 when no
    pair changed."""
    n = up + down
    if n == 0:
        return 1.0
    k = min(up, down)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_p(boot: np.ndarray, delta: float | None) -> float | None:
    """Two-sided paired-bootstrap p of a metric's delta: twice the share of the resampled
    deltas on the far side of 0 (at most 1). It reads the very rounds of the metric's own
    interval, so each metric is tested on its own data (a pass rate on its own flips, a
    percentile on its own values) and p < 0.05 exactly when the 95% interval leaves out 0; a
    delta of 0 in every round (an interval [0, 0]) has p = 1."""
    if delta is None or len(boot) == 0:
        return None
    if np.all(np.abs(boot) <= 1e-12):
        return 1.0
    below, above = float(np.mean(boot <= 1e-12)), float(np.mean(boot >= -1e-12))
    return round(min(1.0, 2 * min(below, above)), 6)


def _pass_rate(values: np.ndarray, i: int) -> float | None:
    row = values[i]
    row = row[~np.isnan(row)]
    return round(float(row.mean()), 6) if len(row) else None


def compare_tables(
    base: RunTable,
    run: RunTable,
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    levels: tuple[float, ...] = (),
) -> dict:
    """One contender's comparison: metrics {baseline, run, delta, ci95, p}, regressions,
    improvements, served models. `levels`: confidence levels (other than 0.95) whose
    intervals thresholds ask for, under each metric's "intervals" {"0.9": [lo, hi]}, from the
    same bootstrap rounds."""
    base = even_preference(base, run)
    common = [t for t in run.tasks if t in set(base.tasks)]
    bi = np.array([base.tasks.index(t) for t in common], dtype=int)
    ri = np.array([run.tasks.index(t) for t in common], dtype=int)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(common), size=(n_boot, len(common))) if common else None
    base_pass, run_pass = task_passes(base)[bi], task_passes(run)[ri]
    regressed = [i for i in range(len(common)) if base_pass[i] == 1 and run_pass[i] == 0]
    improved = [i for i in range(len(common)) if base_pass[i] == 0 and run_pass[i] == 1]
    metrics = {}
    caches = ({}, {})  # the resampled base and run tables, shared by the metrics
    paired = Paired(base=base, run=run, common=common, bi=bi, ri=ri)
    for metric in sorted(set(metric_names(base)) | set(metric_names(run))):
        metrics[metric] = _compare_metric(paired, metric, picks, caches)
        boot = metrics[metric].pop("_boot", None)
        extra = [level for level in levels if level != 0.95]
        if extra and boot is not None and len(boot):
            metrics[metric]["intervals"] = {str(level): _interval(boot, level) for level in extra}
    metrics.update(_task_counts(len(regressed), len(improved)))
    base_served, run_served, changed = _served_change(base, run)
    return {
        "metrics": metrics,
        "regressions": [_task_row(paired, regressed, i) for i in regressed],
        "improvements": [_task_row(paired, regressed, i) for i in improved],
        "served_models": {"baseline": base_served, "run": run_served},
        "fingerprints": {
            "baseline": dict(sorted(base.fingerprints.items())),
            "run": dict(sorted(run.fingerprints.items())),
        },
        "served_model_changed": changed,
        "n_tasks": len(common),
    }


def _task_counts(n_regressed: int, n_improved: int) -> dict:
    """The regressed_tasks and improved_tasks metrics, with the sign test's p."""
    return {
        "regressed_tasks": {
            "baseline": 0,
            "run": n_regressed,
            "delta": n_regressed,
            "ci95": None,
            "p": sign_test(n_improved, n_regressed),
        },
        "improved_tasks": {
            "baseline": 0,
            "run": n_improved,
            "delta": n_improved,
            "ci95": None,
            "p": sign_test(n_improved, n_regressed),
        },
    }


@dataclass(frozen=True)
class Paired:
    """Two runs' tables on the tasks both ran: common task i is row bi[i] of the baseline's
    arrays and row ri[i] of the run's."""

    base: RunTable
    run: RunTable
    common: list
    bi: np.ndarray
    ri: np.ndarray


def _task_row(paired: Paired, regressed: list, i: int) -> dict:
    """Common task i: both pass rates, and the failed checks of the run that failed it."""
    base, run, bi, ri = paired.base, paired.run, paired.bi, paired.ri
    t = paired.common[i]
    return {
        "task_id": t,
        "baseline_pass_rate": _pass_rate(base.arrays["passed"][bi], i),
        "run_pass_rate": _pass_rate(run.arrays["passed"][ri], i),
        "failed_checks": run.failed_checks.get(t, [])
        if i in regressed
        else base.failed_checks.get(t, []),
    }


def _served_change(base: RunTable, run: RunTable) -> tuple[dict, dict, bool]:
    """Both runs' served models, and whether they (or the fingerprints both have) changed."""
    base_served = dict(sorted(base.served.items()))
    run_served = dict(sorted(run.served.items()))
    changed = set(base_served) != set(run_served) or (
        bool(base.fingerprints)
        and bool(run.fingerprints)
        and set(base.fingerprints) != set(run.fingerprints)
    )
    return base_served, run_served, changed


def _interval(boot: np.ndarray, level: float) -> list:
    """The percentile interval of the bootstrap differences at `level`."""
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(boot, [tail, 100 - tail])
    return [_number(lo), _number(hi)]


def _compare_metric(paired: Paired, metric: str, picks, caches) -> dict:
    base, run, bi, ri = paired.base, paired.run, paired.bi, paired.ri
    b = _stat(base, metric, bi[None, :]) if len(bi) else None
    r = _stat(run, metric, ri[None, :]) if len(ri) else None
    b_value = None if b is None else _number(b[0])
    r_value = None if r is None else _number(r[0])
    out = {"baseline": b_value, "run": r_value, "delta": None, "ci95": None, "p": None}
    if b_value is None or r_value is None:
        return out
    out["delta"] = _number(r_value - b_value)
    boot = _stat(run, metric, ri[picks], caches[1]) - _stat(base, metric, bi[picks], caches[0])
    boot = boot[~np.isnan(boot)]
    if len(boot):
        out["ci95"] = _interval(boot, 0.95)
        out["_boot"] = boot  # for the intervals of other levels (compare_tables drops it)
    out["p"] = paired_p(boot, out["delta"])
    return out
