"""Report sections on final outcomes: quality, ratings, head-to-head, cost and decision.

Every interval comes from the context's one joint bootstrap over test cases (see
``report_sections``); a figure keeps ``n`` (the test cases it rests on), a ``reason`` where its
interval is null and ``small_sample`` below 30 test cases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from reviews.report.sections import Context, figure, per_contender
from reviews.stats import bradley_terry, costs, head_to_head, joint, ratings

Z_ALPHA, Z_POWER = 1.959963984540054, 0.8416212335729143  # two-sided 0.05, power 0.80


def task_quality(outq: pd.DataFrame) -> pd.DataFrame:
    return outq.groupby(["contender", "task"], sort=True)["quality"].mean().reset_index()


def weighted_quality(ctx: Context, outq: pd.DataFrame, category_weights: dict):
    """Category means weighted by the campaign's weights, per bootstrap round too. Returns
    ({contender: {quality, ci95, n_tasks, reason, small_sample}}, boot (B x K))."""
    k, b = len(ctx.names), len(ctx.weights)
    cats = sorted(outq["category"].dropna().unique()) if len(outq) else []
    num_p, den_p = np.zeros(k), np.zeros(k)
    num_b, den_b = np.zeros((b, k)), np.zeros((b, k))
    for cat in cats:
        w = float(category_weights.get(cat, 1.0))
        point, boot, _ = per_contender(ctx, task_quality(outq[outq["category"] == cat]), "quality")
        num_p += np.where(np.isfinite(point), w * point, 0)
        den_p += np.where(np.isfinite(point), w, 0)
        num_b += np.where(np.isfinite(boot), w * boot, 0)
        den_b += np.where(np.isfinite(boot), w, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        point, boot = num_p / den_p, num_b / den_b
    n = per_contender(ctx, task_quality(outq), "quality")[2] if len(outq) else np.zeros(k)
    out = {}
    for i, name in enumerate(ctx.names):
        fig = figure(point[i], boot[:, i], int(n[i]))
        out[name] = {
            "quality": fig["mean"],
            "ci95": fig["ci95"],
            "n_tasks": fig["n"],
            "reason": fig["reason"],
            "small_sample": fig["small_sample"],
        }
    return out, boot


def grouped_quality(ctx: Context, outq: pd.DataFrame, column: str) -> dict:
    """{contender: {group: {mean, ci95, n_tasks, ...}}} of quality by category, tier or case type."""
    out: dict = {}
    if outq.empty or column not in outq:
        return out
    for group in sorted(outq[column].dropna().unique(), key=str):
        point, boot, n = per_contender(ctx, task_quality(outq[outq[column] == group]), "quality")
        for i, name in enumerate(ctx.names):
            if n[i]:
                fig = figure(point[i], boot[:, i], int(n[i]))
                fig["n_tasks"] = fig.pop("n")
                out.setdefault(name, {})[str(group)] = fig
    return out


def dimension_scores(ctx: Context, final_full: pd.DataFrame, rubric: list[dict]) -> dict:
    """{contender: {dimension: {mean, ci95, n_tasks, ...}}} on the raw rubric scale."""
    rated = final_full[final_full["value"].notna()]
    out = {name: {} for name in ctx.names}
    for dim in rubric:
        rows = rated[rated["dimension"] == dim["key"]]
        per_task = rows.groupby(["contender", "task"], sort=True)["value"].mean().reset_index()
        point, boot, n = per_contender(ctx, per_task, "value")
        for i, name in enumerate(ctx.names):
            if not n[i]:
                out[name][dim["key"]] = {"mean": None, "ci95": None, "n_tasks": 0}
                continue
            fig = figure(point[i], boot[:, i], int(n[i]), places=2)
            fig["n_tasks"] = fig.pop("n")
            out[name][dim["key"]] = fig
    return out


def rating_section(ctx: Context, battles: pd.DataFrame) -> dict:
    battles = battles.assign(cluster=ctx.clusters(battles["task"])) if len(battles) else battles
    if not len(battles):
        battles = pd.DataFrame(columns=["item", "task", "cluster", "a", "b", "score"])
    bt = ratings.joint_ratings(battles, ctx.names, ctx.weights)
    for name in ctx.names:
        bt["ratings"][name] = joint.round_figure(bt["ratings"][name], 1)
        bt["ci95"][name] = joint.round_figure(bt["ci95"][name], 1)
        if bt["p_best"][name] is not None:
            bt["p_best"][name] = round(bt["p_best"][name], 3)
    _rating_warnings(ctx, bt)
    return bt


def _rating_warnings(ctx: Context, bt: dict) -> None:
    w = ctx.warnings
    if bt["reason"]:
        w.append(f"ratings: {bt['reason']}")
    if bt["unrated"]:
        left_out = [u["contender"] for u in bt["unrated"]]
        one = len(left_out) == 1
        w.append(
            f"ratings: {', '.join(left_out)} {'has' if one else 'have'} no comparisons (none of "
            f"{'its' if one else 'their'} outputs was compared in an item with a final outcome), "
            f"so {'it is' if one else 'they are'} left out of the ratings; the others are rated "
            "among themselves"
        )
    if bt["ridge"]:
        parts = [f"{', '.join(bt['undefeated'])} never lost"] if bt["undefeated"] else []
        parts += [f"{', '.join(bt['winless'])} never won"] if bt["winless"] else []
        who = "; ".join(parts) or "a group of contenders never lost (or never won) against the rest"
        w.append(
            f"ratings: {who}, so the plain estimate would be infinite; a ridge penalty of "
            f"{bt['ridge']} keeps ratings finite, and the penalty sets the number: read such a "
            "rating as its bound (rating_bound: the one-sided 95% exact binomial bound on its "
            "win probability against the field, on the Elo scale), not as a value"
        )
    if bt["ci_reason"]:
        w.append(f"ratings: {bt['ci_reason']}")
    if 0 < bt["n_cases"] < joint.SMALL_SAMPLE:
        w.append(
            f"ratings: small_sample: {bt['n_cases']} test cases (fewer than 30)"
            + (f"; {joint.UNDER_COVERAGE}" if bt["n_cases"] >= joint.MIN_ITEMS else "")
        )


def head_to_head_section(ctx: Context, outq: pd.DataFrame, battles: pd.DataFrame) -> list:
    """Every pair: paired per-task quality differences (rubric) and the paired win rate from
    the battles (preferences, else scores), each with an interval, an exact sign test and the
    Holm-adjusted p over all pairs."""
    wide = head_to_head.task_table(task_quality(outq)) if len(outq) else pd.DataFrame()
    out = []
    for a, b in combinations(ctx.names, 2):
        entry = head_to_head.head_to_head_wide(wide, a, b, labels=ctx.labels, limit=10)
        entry.update(_paired_difference(ctx, wide, a, b))
        entry["battles"] = _paired_battles(ctx, battles, a, b)
        out.append(entry)
    for key, get in (
        ("p_holm", lambda e: e["p_value"]),
        ("battles_p_holm", lambda e: e["battles"]["p_value"]),
    ):
        for entry, p in zip(out, ratings.holm([get(e) for e in out]), strict=True):
            entry[key] = p
    return out


def _paired_difference(ctx: Context, wide: pd.DataFrame, a: str, b: str) -> dict:
    """b - a mean quality difference over the test cases both have, with its interval and p
    from the joint bootstrap (null below 10 test cases, "all equal" when every round agrees);
    the exact sign test on the tasks b won / lost stays as ``sign_test_p``."""
    out = {"mean_diff": None, "ci95": None, "ci_reason": None, "small_sample": False}
    out.update(p_value=None, sign_test_p=None)
    if a not in wide.columns or b not in wide.columns:
        return out
    diff = (wide[b] - wide[a]).dropna().round(12)
    if diff.empty:
        return out
    cl = ctx.clusters(pd.Series(diff.index))
    point, boot = joint.group_means(ctx.weights, cl, np.zeros(len(diff), int), diff.to_numpy(), 1)
    fig = figure(point[0], boot[:, 0], len(diff))
    out.update(mean_diff=fig["mean"], ci95=fig["ci95"], ci_reason=fig["reason"])
    out.update(small_sample=fig["small_sample"])
    out["p_value"] = joint.round_figure(joint.boot_p(boot[:, 0], point[0], len(diff)), 4)
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    out["sign_test_p"] = head_to_head.sign_test(wins, losses)
    return out


def _paired_battles(ctx: Context, battles: pd.DataFrame, a: str, b: str) -> dict:
    """b's paired win rate against a over test cases (a case's battles averaged)."""
    out = {"n_tasks": 0, "win_rate": None, "ci95": None, "wins": 0, "losses": 0, "ties": 0}
    out.update(p_value=None, sign_test_p=None, reason=None, small_sample=False)
    if not len(battles):
        out["reason"] = "no pairwise outcome between them"
        return out
    mine = battles[
        ((battles["a"] == a) & (battles["b"] == b)) | (battles["a"] == b) & (battles["b"] == a)
    ]
    if mine.empty:
        out["reason"] = "no pairwise outcome between them"
        return out
    s = np.where(mine["a"] == b, mine["score"], 1 - mine["score"])  # battle score is its a's
    per = pd.Series(s, index=mine["task"].to_numpy()).groupby(level=0).mean()
    cl = ctx.clusters(pd.Series(per.index))
    point, boot = joint.group_means(ctx.weights, cl, np.zeros(len(per), int), per.to_numpy(), 1)
    fig = figure(point[0], boot[:, 0], len(per))
    wins, losses = int((per > 0.5).sum()), int((per < 0.5).sum())
    out.update(n_tasks=len(per), win_rate=fig["mean"], ci95=fig["ci95"], reason=fig["reason"])
    out.update(wins=wins, losses=losses, ties=int(len(per) - wins - losses))
    out["p_value"] = joint.round_figure(joint.boot_p(boot[:, 0], point[0], len(per), 0.5), 4)
    out.update(sign_test_p=head_to_head.sign_test(wins, losses), small_sample=fig["small_sample"])
    return out


def separation(ctx: Context, outq: pd.DataFrame, top: list) -> dict | None:
    """For the top two: minimum detectable difference of mean paired quality at the current n
    (80% power, two-sided 0.05, normal approximation: MDD = (z_0.975 + z_0.80) * sd(d) /
    sqrt(n)) and the n needed to separate them at the observed difference
    (((z_0.975 + z_0.80) * sd(d) / |mean d|) ** 2)."""
    if len(top) < 2 or outq.empty:
        return None
    wide = head_to_head.task_table(task_quality(outq))
    if top[0] not in wide or top[1] not in wide:
        return None
    d = (wide[top[0]] - wide[top[1]]).dropna().to_numpy()
    n = len(d)
    if n < 2:
        return None
    sd, mean = float(d.std(ddof=1)), float(d.mean())
    z = Z_ALPHA + Z_POWER
    needed = math.ceil((z * sd / abs(mean)) ** 2) if mean and sd else None
    return {
        "a": top[0],
        "b": top[1],
        "n_tasks": n,
        "observed_diff": round(mean, 3),
        "sd_diff": round(sd, 3),
        "mdd": round(z * sd / math.sqrt(n), 3),
        "n_needed": needed,
        "basis": "paired per-task quality (0-1)",
    }


@dataclass(frozen=True)
class Boot:
    """A section's figures per contender and its bootstrap rounds (rounds x contenders)."""

    figures: dict
    rounds: np.ndarray


def cost_decision(ctx: Context, done: pd.DataFrame, quality: Boot, stability: Boot):
    """Cost per task (point and per round), decision score with its interval, the quality
    floor and the cost-quality Pareto front. Returns (per-contender dict, decision meta)."""
    quality_fig, q_boot = quality.figures, quality.rounds
    stab, s_boot = stability.figures, stability.rounds
    weights = ctx.meta["weights"]
    wq, ws = float(weights.get("quality", 0.7)), float(weights.get("stability", 0.3))
    cost_lat = costs.cost_latency(done)
    per_task = done.groupby(["contender", "task"], sort=True)["answer_cost"].mean().reset_index()
    c_point, c_boot, _ = per_contender(ctx, per_task, "answer_cost")
    known = {n: cost_lat.get(n, {}).get("cost_per_task") for n in ctx.names}
    normalized, cost_reason, free = _normalized(ctx, known)
    formula, lacking = _decision_formula(ctx, stab, free)
    # A contender lacking stability: the formula leaves stability out for every contender.
    d_boot = _decision_boot(
        c_boot, q_boot, None if lacking else s_boot, weights=(wq, ws), free=free
    )
    floor = _floor(ctx.meta)
    out = {}
    for i, name in enumerate(ctx.names):
        q = quality_fig.get(name, {}).get("quality")
        nc = 1.0 if free else normalized.get(name)
        score = costs.decision_score(q, None if lacking else stab[name]["stability"], nc, wq, ws)
        n = quality_fig.get(name, {}).get("n_tasks", 0)
        ci, reason = joint.interval(d_boot[:, i], n) if score is not None else (None, None)
        no_cost = known.get(name) is None
        out[name] = {
            "cost": cost_lat.get(name, {}),
            "normalized_cost": normalized.get(name),
            "cost_reason": costs.NO_COST_DATA if no_cost else None,
            "decision_score": joint.round_figure(score, 3),
            "decision_ci95": joint.round_figure(ci, 3),
            "decision_reason": reason
            or (costs.NO_COST_DATA if score is None and no_cost and q is not None else None),
            "below_floor": bool(q is not None and q < floor - 1e-12),
        }
    front = pareto_front(
        {n: (quality_fig.get(n, {}).get("quality"), known.get(n)) for n in ctx.names}
    )
    ranked = decision_ranks(out)
    for name in ctx.names:
        out[name]["pareto"] = name in front
        out[name]["decision_rank"] = ranked.get(name)
    meta = {
        "w_quality": wq,
        "w_stability": ws,
        "formula": formula,
        "min_quality": floor,
        "pareto_front": [n for n in ctx.names if n in front],
        "free": bool(known) and all(v is not None and v <= 0 for v in known.values()),
        "some_free": free,
        "cost_reason": cost_reason,
    }
    return out, meta


def _normalized(ctx: Context, known: dict) -> tuple[dict, str | None, bool]:
    """(normalized cost per contender, how it was normalized or why it is missing, whether some
    contender is free: then the decision score leaves the cost term out for everyone, since a
    ratio to a cost of 0 is infinite). The reason is a report warning too."""
    normalized, cost_reason = costs.normalized_costs(known)
    free = any(v is not None and v <= 0 for v in known.values())
    if free and all(v is not None and v <= 0 for v in known.values()):
        cost_reason = (
            "every contender is free (cost 0), so normalized cost is undefined; the decision "
            "score leaves the cost term out"
        )
    elif free:
        cost_reason = (
            f"{cost_reason}; the decision score leaves the cost term out for every contender "
            "(a ratio to a cost of 0 would be infinite)"
        )
    if cost_reason:
        ctx.warnings.append(f"cost: {cost_reason}")
    missing = [n for n, v in known.items() if v is None]
    if missing and len(missing) < len(known):
        ctx.warnings.append(
            f"cost: no cost data for {', '.join(missing)} (its provider reported neither a cost "
            "nor token counts): no normalized cost and no decision score; it stays on the "
            "quality axis of the cost-quality chart, marked"
        )
    return normalized, cost_reason, free


def _decision_formula(ctx: Context, stab: dict, free: bool) -> tuple[str, list[str]]:
    """(the decision score's formula, the contenders without a stability): one of them
    lacking drops the stability term for all, with a warning."""
    lacking = [n for n in ctx.names if stab.get(n, {}).get("stability") is None]
    formula = "(w_quality * quality + w_stability * stability)"
    if lacking:
        formula = "quality"
        if len(lacking) < len(ctx.names):
            ctx.warnings.append(
                f"decision score: no stability for {', '.join(lacking)}, so every contender's "
                "decision score is quality / normalized cost, without the stability term"
            )
    return (formula if free else f"{formula} / normalized_cost"), lacking


def _decision_boot(c_boot, q_boot, s_boot, *, weights: tuple, free: bool):
    """The decision score in every bootstrap round (rounds x contenders); `s_boot` None: the
    formula without stability."""
    wq, ws = weights
    with np.errstate(divide="ignore", invalid="ignore"):
        cheapest = joint.nanmin_rows(np.where(c_boot > 0, c_boot, np.nan))
        norm_boot = np.ones_like(c_boot) if free else c_boot / cheapest
        top = wq * q_boot + (0 if s_boot is None else ws * s_boot)
        return (top / (wq if s_boot is None else 1.0)) / norm_boot


def _floor(meta: dict) -> float:
    value = meta.get("min_quality")
    if value is None:
        value = meta["pass_threshold"]
    if isinstance(value, dict):
        value = min(float(v) for v in value.values())
    return float(value)


def pareto_front(points: dict) -> set:
    """Contenders no other beats on both quality (higher) and cost (lower), one strictly."""
    known = {n: qc for n, qc in points.items() if qc[0] is not None and qc[1] is not None}
    front = set()
    for n, (q, c) in known.items():
        beaten = any(
            q2 >= q and c2 <= c and (q2 > q or c2 < c) for m, (q2, c2) in known.items() if m != n
        )
        if not beaten:
            front.add(n)
    return front


def decision_ranks(rows: dict) -> dict:
    """The non-overlap rank rule on decision intervals, among contenders above the floor."""
    eligible = [
        n for n, r in rows.items() if not r["below_floor"] and r["decision_ci95"] is not None
    ]
    lo = [rows[n]["decision_ci95"][0] for n in eligible]
    hi = [rows[n]["decision_ci95"][1] for n in eligible]
    return dict(zip(eligible, bradley_terry.ranks(lo, hi), strict=True))
