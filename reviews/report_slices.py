"""Report sections on slices and length (pure: frames and earlier figures in).

* ``slices``: every quality and pass figure broken down by each task metadata key the campaign
  names (``"slice_by": ["position", "doc_length_bucket"]``), each value's figures with their
  intervals from the report's one joint bootstrap: ``{key: {value: {contender: {quality,
  pass_at_1, n_tasks}}}}``. Tasks without the key are left out of that key's slices.
* ``length``: per contender the output-length distribution (characters of the answer, done
  generations), and beside the raw rating a length-controlled one with the length
  coefficient and its interval (``reviews/stats/length.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .report_figures import task_quality
from .report_sections import Context, figure, per_contender
from .stats import joint, length, passes

META_PREFIX = "meta:"


def slice_keys(meta: dict) -> list[str]:
    return list((meta.get("weights") or {}).get("slice_by") or [])


def slices_section(ctx: Context, outq: pd.DataFrame, based: pd.DataFrame, heads: dict) -> dict:
    """{key: {value: {contender: {"quality", "pass_at_1", "n_tasks"}}}}; ``heads`` is each
    contender's headline pass basis."""
    out: dict = {}
    tasks = ctx.f.tasks
    for key in slice_keys(ctx.meta):
        column = META_PREFIX + key
        values = tasks[column] if column in tasks else pd.Series(dtype=object)
        groups: dict = {}
        for value in sorted(values.dropna().unique(), key=str):
            ids = set(tasks.loc[values == value, "id"])
            groups[str(value)] = _slice(ctx, outq, based, heads, ids)
        out[key] = groups
    return out


def _slice(ctx: Context, outq, based, heads: dict, ids: set) -> dict:
    q = outq[outq["task"].isin(ids)]
    q_point, q_boot, q_n = per_contender(ctx, task_quality(q), "quality") if len(q) else _none(ctx)
    mine = based[based["task"].isin(ids)] if len(based) else based
    rates = {
        basis: per_contender(ctx, passes.task_pass_rates(mine, basis), "rate")
        if len(mine)
        else _none(ctx)
        for basis in ("human", "checks")
    }
    out = {}
    for i, name in enumerate(ctx.names):
        basis = heads.get(name)
        cell = {"quality": _cell(q_point[i], q_boot[:, i], q_n[i]), "pass_at_1": None}
        if basis in rates:
            p, b, n = rates[basis]
            cell["pass_at_1"] = {**_cell(p[i], b[:, i], n[i]), "basis": basis}
        cell["n_tasks"] = int(sum(1 for t in ids if t in ctx.cluster_of))
        out[name] = cell
    return out


def _none(ctx: Context):
    k = len(ctx.names)
    return np.full(k, np.nan), np.full((len(ctx.weights), k), np.nan), np.zeros(k, dtype=int)


def _cell(point, boot, n) -> dict:
    fig = figure(point, boot, int(n))
    fig["n_tasks"] = fig.pop("n")
    return fig


def length_section(ctx: Context, battles: pd.DataFrame, gens: pd.DataFrame, bt: dict) -> dict:
    """Per contender the length distribution and the length-controlled rating; the length
    coefficient; why a figure is missing."""
    done = gens[gens["status"] == "done"] if len(gens) else gens
    chars = done["output_chars"] if "output_chars" in done else pd.Series(dtype=float)
    per = {
        name: {"chars": length.distribution(chars[done["contender"] == name])} for name in ctx.names
    }
    rated = [n for n in ctx.names if bt["ratings"].get(n) is not None]
    of_output = _output_lengths(ctx, gens)
    lc_battles = battles.assign(
        cluster=ctx.clusters(battles["task"]) if len(battles) else [],
        d=length.length_difference(
            battles["output_a"].map(of_output), battles["output_b"].map(of_output)
        )
        if len(battles)
        else [],
    )
    if len(battles):
        unknown = (
            battles["output_a"].map(of_output).isna() | battles["output_b"].map(of_output).isna()
        )
        lc_battles.loc[unknown.to_numpy(), "d"] = np.nan
    fit = length.length_controlled(lc_battles, rated, ctx.weights, ridge=bt.get("ridge") or 0.0)
    for name in ctx.names:
        per[name]["rating_controlled"] = joint.round_figure(fit["ratings"].get(name), 1)
        per[name]["rating_controlled_ci95"] = joint.round_figure(fit["ci95"].get(name), 1)
        per[name]["rating"] = bt["ratings"].get(name)
    coefficient = fit["coefficient"]
    return {
        "contenders": per,
        "coefficient": {
            "value": joint.round_figure(coefficient["value"], 3),
            "ci95": joint.round_figure(coefficient["ci95"], 3),
            "reason": coefficient["reason"],
            "meaning": "log-odds of winning per unit of normalized length difference "
            "(len_a - len_b) / (len_a + len_b); above 0: the longer answer wins more often",
        },
        "n_battles": fit["n_battles"],
        "reason": fit["reason"],
    }


def _output_lengths(ctx: Context, gens: pd.DataFrame) -> dict:
    """ItemOutput id -> length of its generation's answer (characters)."""
    if "output_chars" not in gens or not len(ctx.outputs):
        return {}
    chars = dict(zip(gens["id"], gens["output_chars"], strict=True))
    return {
        o: chars.get(g) for o, g in zip(ctx.outputs["id"], ctx.outputs["generation"], strict=True)
    }
