"""Conversations per contender: the turn curve, its decay, and what the conversation costs
against the same request stated in one message (docs/statistics.md, "Conversations").

Pure. Rows carry ``cluster``, the test case's column in the report's one (B x T) matrix of
bootstrap draws (``joint.cluster_weights``), so every interval here resamples whole test cases
with the rest of the report.

* **Turn scores** (one per sample and turn): people's final per-turn scores normalized to 0..1
  (``turn_scores_human``), or 1 / 0 for a turn whose turn checks passed / failed
  (``turn_scores_checks``).
* **Turn curve**: per turn index, the mean over tasks of the task's mean turn score (its
  samples averaged first).
* **Decay**: per task, the mean score at its last scored turn minus the mean at its first
  (turns taken over all contenders, so every contender is compared on the same turns), then
  the mean over tasks.
* **Single vs multi**: a sample's score is the share of the task's ``checks`` that pass on its
  final answer. ``single`` / ``multi`` = mean over tasks (samples first) in each regime, over
  the tasks that have both; ``gap`` = multi - single, the mean of the per-task differences.
  ``aptitude`` = mean over tasks of the 90th percentile of the multi-turn sample scores,
  ``unreliability`` = mean over tasks of their 90th minus 10th percentile (Laban et al. 2025);
  percentiles interpolate linearly between order statistics (numpy's default) and need two or
  more samples of a task.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reviews.stats import joint
from tasks.checks import transcripts

SPREAD_MIN_SAMPLES = 2


def turn_scores_checks(gens: pd.DataFrame) -> pd.DataFrame:
    """contender, task, sample, turn, score from each transcript's per-turn checks."""
    rows = [
        (c, t, s, turn, 1.0 if passed else 0.0)
        for c, t, s, script in zip(
            gens["contender"], gens["task"], gens["sample"], gens["transcript"], strict=True
        )
        for turn, passed in sorted(transcripts.turn_checks(script).items())
    ]
    return pd.DataFrame(rows, columns=["contender", "task", "sample", "turn", "score"])


def turn_scores_human(final_full: pd.DataFrame, dimension: str, lo: float, hi: float):
    """contender, task, sample, turn, score from final scores keyed "<dimension>@<turn>",
    normalized to 0..1 by the per-turn scale (an output's per-turn score, N/A left out)."""
    prefix = f"{dimension}@"
    rows = final_full[
        final_full["dimension"].astype(str).str.startswith(prefix) & final_full["value"].notna()
    ]
    turn = pd.to_numeric(rows["dimension"].str[len(prefix) :], errors="coerce")
    span = float(hi) - float(lo)
    out = pd.DataFrame(
        {
            "contender": rows["contender"].to_numpy(),
            "task": rows["task"].to_numpy(),
            "sample": rows["sample"].to_numpy(),
            "turn": turn.to_numpy(),
            "score": ((rows["value"].astype(float) - float(lo)) / span).clip(0, 1).to_numpy()
            if span > 0
            else np.nan,
        }
    ).dropna(subset=["turn", "score"])
    out["turn"] = out["turn"].astype(int)
    # two reviewed items of the same sample, or an output scored twice: one score per sample
    return (
        out.groupby(["contender", "task", "sample", "turn"], sort=True)["score"]
        .mean()
        .reset_index()
    )


def _means(weights, frame: pd.DataFrame, value: str, names: list) -> tuple:
    """(point (K,), boot (B x K), n (K,)) of per-(contender, task) means over test cases."""
    index = {n: i for i, n in enumerate(names)}
    frame = frame[frame["contender"].isin(index)]
    cl = frame["cluster"].to_numpy(dtype=int)
    grp = frame["contender"].map(index).to_numpy(dtype=int)
    vals = frame[value].to_numpy(dtype=float)
    point, boot = joint.group_means(weights, cl, grp, vals, len(names))
    return point, boot, joint.n_clusters(cl, grp, vals, len(names))


def _figure(point, boot, n) -> dict:
    s = joint.summary(point, boot, int(n))
    return {
        "value": joint.round_figure(s["mean"], 3),
        "ci95": joint.round_figure(s["ci95"], 3),
        "n": s["n"],
        "reason": s["reason"],
        "small_sample": s["small_sample"],
    }


def turn_curve(weights, scores: pd.DataFrame, names: list) -> dict:
    """{contender: [{"turn", "mean", "ci95", "n" (tasks), "reason", "small_sample"}]}."""
    out: dict = {name: [] for name in names}
    if scores.empty:
        return out
    per_task = scores.groupby(["contender", "task", "cluster", "turn"], sort=True)["score"].mean()
    per_task = per_task.reset_index()
    for turn in sorted(per_task["turn"].unique()):
        point, boot, n = _means(weights, per_task[per_task["turn"] == turn], "score", names)
        for i, name in enumerate(names):
            if n[i]:
                fig = _figure(point[i], boot[:, i], n[i])
                out[name].append({"turn": int(turn), "mean": fig.pop("value"), **fig})
    return out


def decay(weights, scores: pd.DataFrame, names: list) -> dict:
    """{contender: {"value", "ci95", "n" (tasks), "first_turn", "last_turn", "reason"}}."""
    empty = {"value": None, "ci95": None, "n": 0, "reason": "no task has two scored turns"}
    if scores.empty:
        return {name: dict(empty) for name in names}
    per_task = scores.groupby(["contender", "task", "cluster", "turn"], sort=True)["score"]
    per_task = per_task.mean().reset_index()
    span = per_task.groupby("task")["turn"].agg(["min", "max"]).reset_index()
    span = span[span["max"] > span["min"]]
    first = per_task.merge(span, left_on=["task", "turn"], right_on=["task", "min"])
    last = per_task.merge(span, left_on=["task", "turn"], right_on=["task", "max"])
    diffs = first.merge(last, on=["contender", "task", "cluster"], suffixes=("_first", "_last"))
    diffs["diff"] = diffs["score_last"] - diffs["score_first"]
    point, boot, n = _means(weights, diffs, "diff", names)
    out = {}
    for i, name in enumerate(names):
        if not n[i]:
            out[name] = dict(empty)
            continue
        mine = diffs[diffs["contender"] == name]
        out[name] = {
            **_figure(point[i], boot[:, i], n[i]),
            "first_turn": int(mine["turn_first"].min()),
            "last_turn": int(mine["turn_last"].max()),
        }
    return out


def _spread(frame: pd.DataFrame) -> tuple[float | None, float | None, int]:
    """(aptitude, unreliability, tasks) over one regime's sample scores."""
    p90, spread = [], []
    for _, task in frame.groupby("task", sort=True):
        x = task["score"].dropna().to_numpy(dtype=float)
        if len(x) >= SPREAD_MIN_SAMPLES:
            hi, lo = np.percentile(x, [90, 10])
            p90.append(hi)
            spread.append(hi - lo)
    if not p90:
        return None, None, 0
    return round(float(np.mean(p90)), 3), round(float(np.mean(spread)), 3), len(p90)


def _no_pair() -> dict:
    keys = ("single", "single_ci95", "multi", "multi_ci95", "gap", "ci95", "aptitude")
    return {
        **dict.fromkeys(keys),
        "n": 0,
        "reason": "no task answered in both regimes",
        "small_sample": False,
        "unreliability": None,
        "single_aptitude": None,
        "single_unreliability": None,
        "spread_n": 0,
        "spread_reason": f"needs {SPREAD_MIN_SAMPLES} or more samples of a task in the conversation",
    }


def single_vs_multi(weights, samples: pd.DataFrame, names: list) -> dict:
    """``samples``: contender, task, cluster, sample, single (bool), score (0..1, NaN = no
    checks). {contender: {"single", "multi", "gap", "ci95", "n", "aptitude",
    "unreliability", ...}} (see the module docstring)."""
    scored = samples[samples["score"].notna()]
    if scored.empty:
        return {name: _no_pair() for name in names}
    per_task = scored.groupby(["contender", "task", "cluster", "single"], sort=True)["score"]
    per_task = per_task.mean().unstack("single")
    for regime in (True, False):
        if regime not in per_task:
            per_task[regime] = np.nan
    paired = per_task.dropna(subset=[True, False]).reset_index()
    paired = paired.rename(columns={True: "single_score", False: "multi_score"})
    paired["gap"] = paired["multi_score"] - paired["single_score"]
    figs = {key: _means(weights, paired, key, names) for key in ("single_score", "multi_score")}
    point, boot, n = _means(weights, paired, "gap", names)
    out = {}
    for i, name in enumerate(names):
        tasks = set(paired.loc[paired["contender"] == name, "task"])
        mine = scored[(scored["contender"] == name) & scored["task"].isin(tasks)]
        aptitude, unreliability, n_spread = _spread(mine[~mine["single"]])
        s_aptitude, s_unreliability, _ = _spread(mine[mine["single"]])
        single = _figure(*(x[..., i] for x in figs["single_score"]))
        multi = _figure(*(x[..., i] for x in figs["multi_score"]))
        gap = _figure(point[i], boot[:, i], n[i])
        out[name] = {
            "single": single["value"],
            "single_ci95": single["ci95"],
            "multi": multi["value"],
            "multi_ci95": multi["ci95"],
            "gap": gap["value"],
            "ci95": gap["ci95"],
            "n": gap["n"],
            "reason": gap["reason"] if n[i] else "no task answered in both regimes",
            "small_sample": gap["small_sample"],
            "aptitude": aptitude,
            "unreliability": unreliability,
            "single_aptitude": s_aptitude,
            "single_unreliability": s_unreliability,
            "spread_n": n_spread,
            "spread_reason": None
            if n_spread
            else f"needs {SPREAD_MIN_SAMPLES} or more samples of a task in the conversation",
        }
    return out
