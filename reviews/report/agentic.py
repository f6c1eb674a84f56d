"""The report's ``tools`` and ``conversation`` sections (pure: frames in, dicts out).

Both exist only when the campaign's test set has such tasks (a task that declares ``tools``; a
task with ``turns``), and are ``None`` otherwise, like ``separation``. Figures are defined in
``reviews.stats.tools`` and ``reviews.stats.turns`` (and docs/statistics.md); every interval
comes from the context's one bootstrap over test cases.
"""

from __future__ import annotations

import pandas as pd

from reviews.report.outcomes import check_scores
from reviews.report.sections import Context, figure, per_contender
from reviews.rubric import TurnScoring
from reviews.stats import tools, turns
from tasks.models import Generation

TURN_BASES = {"human": "people's per-turn scores", "turn_checks": "the turn checks"}


def _task_flag(f, column: str) -> set:
    """Ids of the tasks whose ``column`` (a count or a flag) is set; none when absent."""
    if column not in f.tasks:
        return set()
    flags = f.tasks[column].fillna(0).astype(bool)
    return set(f.tasks.loc[flags, "id"])


def done_generations(ctx: Context, f) -> pd.DataFrame:
    """Done generations of both regimes: contender (name), task, sample, single (bool),
    transcript, check_results, checks_passed, latency_ms, cluster."""
    g = f.generations
    g = g[g["status"] == Generation.Status.DONE]
    names = dict(zip(f.contenders["id"], f.contenders["name"], strict=True))
    out = g.assign(
        contender=g["contender"].map(names),
        single=g["single_turn"].fillna(False).astype(bool) if "single_turn" in g else False,
        transcript=g["transcript"] if "transcript" in g else [[]] * len(g),
        cluster=g["task"].map(ctx.cluster_of),
    )
    return out.dropna(subset=["contender", "cluster"]).astype({"cluster": int})


# ---------------------------------------------------------------------------------------------
# Tool use


def tools_section(ctx: Context, f, gens: pd.DataFrame) -> dict | None:
    """{contender: {tool_call_accuracy, invalid_call_rate, unmocked_call_rate,
    error_recovery_rate, mean_steps, mean_steps_ci95, completion_ms {p50, p95}, n_samples,
    n_tasks, n_calls}} over the conversation-regime samples of tasks with tools."""
    tool_tasks = _task_flag(f, "tools")
    if not tool_tasks:
        return None
    rows = tools.sample_rows(gens[gens["task"].isin(tool_tasks) & ~gens["single"]])
    steps = rows.groupby(["contender", "task"], sort=True)["steps"].mean().reset_index()
    point, boot, n = per_contender(ctx, steps, "steps")
    out = {}
    for i, name in enumerate(ctx.names):
        figs = tools.contender_figures(rows[rows["contender"] == name])
        s = figure(point[i], boot[:, i], int(n[i]))
        out[name] = {
            **figs,
            "mean_steps_ci95": s["ci95"],
            "mean_steps_reason": s["reason"],
            "small_sample": s["small_sample"],
        }
    return out


# ---------------------------------------------------------------------------------------------
# Conversations


def _turn_scores(ctx: Context, gens: pd.DataFrame, turn_final: pd.DataFrame):
    """(scores with cluster, basis, why the human basis was not used or None)."""
    scoring = TurnScoring.parse(ctx.meta.get("score_turns"))
    why = None
    if scoring is not None:
        human = turns.turn_scores_human(turn_final, scoring.dimension, scoring.min, scoring.max)
        if len(human):
            human["cluster"] = human["task"].map(ctx.cluster_of)
            return human.dropna(subset=["cluster"]).astype({"cluster": int}), "human", None
        why = (
            "per-turn scores are on, but no item with them has a final outcome yet, so the "
            "turn curve reads the turn checks"
        )
    checks = turns.turn_scores_checks(gens)
    checks["cluster"] = checks["task"].map(ctx.cluster_of)
    return checks.dropna(subset=["cluster"]).astype({"cluster": int}), "turn_checks", why


def _single_vs_multi(ctx: Context, f, gens: pd.DataFrame) -> dict | None:
    both = _task_flag(f, "single_turn") & _task_flag(f, "turns")
    if not both:
        return None
    mine = gens[gens["task"].isin(both)]
    scored = check_scores(mine)
    samples = mine[["contender", "task", "sample", "single", "cluster"]].assign(
        score=scored["quality"].reindex(mine.index).to_numpy(dtype=float)
    )
    return turns.single_vs_multi(ctx.weights, samples, ctx.names)


def conversation_section(ctx: Context, f, gens: pd.DataFrame, turn_final: pd.DataFrame):
    """{contender: {basis, turn_curve [{turn, mean, ci95, n, ...}], decay {value, ci95, n,
    first_turn, last_turn}, single_vs_multi {...} | None, n_tasks}} over the tasks with turns;
    None without such tasks."""
    talk = _task_flag(f, "turns")
    if not talk:
        return None
    multi = gens[gens["task"].isin(talk) & ~gens["single"]]
    scores, basis, why = _turn_scores(ctx, multi, turn_final[turn_final["task"].isin(talk)])
    if why:
        ctx.warnings.append(f"conversation: {why}")
    curve = turns.turn_curve(ctx.weights, scores, ctx.names)
    decays = turns.decay(ctx.weights, scores, ctx.names)
    svm = _single_vs_multi(ctx, f, gens)
    counts = multi.groupby("contender")["task"].nunique()
    return {
        name: {
            "basis": basis,
            "basis_reason": why,
            "turn_curve": curve[name],
            "decay": decays[name],
            "single_vs_multi": svm[name] if svm else None,
            "n_tasks": int(counts.get(name, 0)),
        }
        for name in ctx.names
    }


def split_turn_scores(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rubric rows, per-turn rows): the per-turn dimensions ("<dimension>@<turn>") are kept
    out of every rubric statistic and read by the turn curve only."""
    if frame.empty:
        return frame, frame
    turn = frame["dimension"].astype(str).str.contains("@", regex=False).to_numpy(dtype=bool)
    return frame[~turn], frame[turn]


def without_single_turn(generations: pd.DataFrame) -> pd.DataFrame:
    """The conversation-regime rows: single-turn rows have their own figure and are kept out
    of every other one (pass rates, stability, rates, cost, latency)."""
    if "single_turn" not in generations:
        return generations
    return generations[~generations["single_turn"].fillna(False).astype(bool).to_numpy()]
