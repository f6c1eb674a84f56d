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

from reviews.report.figures import task_quality
from reviews.report.sections import Context, figure
from reviews.stats import joint, length, passes

META_PREFIX = "meta:"


def slice_keys(meta: dict) -> list[str]:
    return list((meta.get("weights") or {}).get("slice_by") or [])


def slices_section(ctx: Context, outq: pd.DataFrame, based: pd.DataFrame, heads: dict) -> dict:
    """{key: {value: {contender: {"quality", "pass_at_1", "n_tasks"}}}}; ``heads`` is each
    contender's headline pass basis. One weighted mean per key and figure covers every value
    and contender at once (groups = value x contender)."""
    out: dict = {}
    tasks = ctx.f.tasks
    quality = task_quality(outq) if len(outq) else None
    rates = {
        basis: passes.task_pass_rates(based, basis) if len(based) else None
        for basis in ("human", "checks")
    }
    for key in slice_keys(ctx.meta):
        column = META_PREFIX + key
        values = tasks[column] if column in tasks else pd.Series(dtype=object)
        known = values.dropna()
        names = sorted(known.unique(), key=str)
        code = dict(
            zip(tasks.loc[known.index, "id"], pd.Index(names).get_indexer(known), strict=True)
        )
        q = _by_value(ctx, quality, "quality", code, len(names))
        r = {
            basis: _by_value(ctx, frame, "rate", code, len(names)) for basis, frame in rates.items()
        }
        groups: dict = {}
        for v, value in enumerate(names):
            n_tasks = int(sum(1 for c in code.values() if c == v))
            groups[str(value)] = {
                name: _cell_of(q, r, v * len(ctx.names) + i, heads.get(name), n_tasks)
                for i, name in enumerate(ctx.names)
            }
        out[key] = groups
    return out


def _by_value(ctx: Context, frame: pd.DataFrame | None, column: str, code: dict, n_values: int):
    """(point, boot, n), each over groups value x contender, of a per-(contender, task) column."""
    k = len(ctx.names)
    size = n_values * k
    if frame is None or not len(frame) or not size:
        return np.full(size, np.nan), np.full((len(ctx.weights), size), np.nan), np.zeros(size, int)
    frame = frame[frame["contender"].isin(ctx.contender_index) & frame["task"].isin(code)]
    cl = ctx.clusters(frame["task"])
    grp = frame["task"].map(code).to_numpy(dtype=int) * k + frame["contender"].map(
        ctx.contender_index
    ).to_numpy(dtype=int)
    vals = frame[column].to_numpy(dtype=float)
    point, boot = joint.group_means(ctx.weights, cl, grp, vals, size)
    return point, boot, joint.n_clusters(cl, grp, vals, size)


def _cell_of(q, r: dict, g: int, basis, n_tasks: int) -> dict:
    """One contender's figures in one slice (group g = value x contender)."""
    cell = {"quality": _cell(q[0][g], q[1][:, g], q[2][g]), "pass_at_1": None}
    if basis in r:
        p, b, n = r[basis]
        cell["pass_at_1"] = {**_cell(p[g], b[:, g], n[g]), "basis": basis}
    cell["n_tasks"] = n_tasks
    return cell


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
