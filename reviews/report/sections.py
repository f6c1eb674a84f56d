"""The report's sections, one function each, on one shared context (pure: no database).

`build_report` (in ``report_build``) makes a `Context` once: the frames, the campaign's
settings, the contenders, and the one (B x T) matrix of bootstrap draws over test cases that
every interval uses (``reviews.stats.joint``). Test cases are ordered by ``external_id`` for
the draws, so the same data and seed give the same intervals whatever the database ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reviews.report.outcomes import check_scores
from reviews.rubric import Rubric
from reviews.stats import agreement, joint, passes, rates, reliability, reviewers, stability
from tasks.models import Generation


@dataclass
class Context:
    f: object  # CampaignFrames
    meta: dict
    names: list
    outputs: pd.DataFrame
    weights: np.ndarray  # (B x T) draw counts over test cases
    cluster_of: dict  # task id -> column of `weights`
    labels: dict  # task id -> external_id
    warnings: list = field(default_factory=list)

    @property
    def contender_index(self) -> dict:
        return {n: i for i, n in enumerate(self.names)}

    def clusters(self, tasks: pd.Series) -> np.ndarray:
        return tasks.map(self.cluster_of).to_numpy(dtype=int)


def make_context(f, meta: dict, *, n_boot: int, seed: int, outputs: pd.DataFrame) -> Context:
    tasks = f.tasks.sort_values(["external_id", "id"])
    cluster_of = {t: i for i, t in enumerate(tasks["id"])}
    return Context(
        f=f,
        meta=meta,
        names=f.contenders["name"].tolist(),
        outputs=outputs,
        weights=joint.cluster_weights(len(cluster_of), n_boot, seed),
        cluster_of=cluster_of,
        labels=dict(zip(f.tasks["id"], f.tasks["external_id"], strict=True)),
    )


def per_contender(ctx: Context, frame: pd.DataFrame, value: str):
    """(point (K,), boot (B x K), n (K,)) of a per-(contender, task) column, over test cases."""
    frame = frame[frame["contender"].isin(ctx.contender_index)]
    cl = ctx.clusters(frame["task"])
    grp = frame["contender"].map(ctx.contender_index).to_numpy(dtype=int)
    vals = frame[value].to_numpy(dtype=float)
    k = len(ctx.names)
    point, boot = joint.group_means(ctx.weights, cl, grp, vals, k)
    return point, boot, joint.n_clusters(cl, grp, vals, k)


def figure(point, boot, n, places: int = 3) -> dict:
    out = joint.summary(point, boot, n)
    out["mean"] = joint.round_figure(out["mean"], places)
    out["ci95"] = joint.round_figure(out["ci95"], places)
    return out


# ---------------------------------------------------------------------------------------------
# Progress and disputes


def progress(ctx: Context) -> dict:
    f, meta = ctx.f, ctx.meta
    states = f.items["state"].value_counts()
    settled = int(sum(states.get(s, 0) for s in ("agreed", "disputed", "resolved")))
    ever_disputed = int(states.get("disputed", 0) + states.get("resolved", 0))
    ready = int(f.items["ready"].sum()) if len(f.items) else 0
    # Under a review policy the judge settles some items alone: nobody reviews them, and
    # they never dispute, so the dispute rate is of the items people settled.
    # (Frames built by hand, as bench scripts do, may have no "source": people settled all.)
    by_judge = int((f.items["source"] == "judge").sum()) if "source" in f.items else 0
    by_people = settled - by_judge
    return {
        "items": int(len(f.items)),
        "ready": ready,
        "reviews_done": int(len(f.reviews)),
        "reviews_needed": (ready - by_judge) * meta["overlap"],
        "settled": settled,
        "settled_by_judge": by_judge,
        "judging": int(states.get("judging", 0)),
        "agreed": int(states.get("agreed", 0)),
        "disputed": int(states.get("disputed", 0)),
        "resolved": int(states.get("resolved", 0)),
        "open": int(states.get("open", 0)),
        "dispute_rate": ever_disputed / by_people if by_people else None,
        "generations": {
            k: int(v) for k, v in sorted(f.generations["status"].value_counts().items())
        },
    }


def disputes(ctx: Context, prog: dict) -> dict:
    """Items per reason part (reasons that disputed the item), and the dispute rate's interval
    over test cases (disputed items / items with all reviews in)."""
    items = ctx.f.items
    reason_counts: dict[str, int] = {}
    for reasons in items["dispute_reasons"]:
        for part in {r.get("part", "?") for r in (reasons or []) if r.get("disputes", True)}:
            reason_counts[part] = reason_counts.get(part, 0) + 1
    done = items[items["state"].isin(["agreed", "disputed", "resolved"])]
    t = ctx.weights.shape[1]
    s, d = np.zeros(t), np.zeros(t)
    cl = ctx.clusters(done["task"])
    np.add.at(s, cl, 1.0)
    np.add.at(d, cl, done["state"].isin(["disputed", "resolved"]).to_numpy(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = (ctx.weights @ d) / (ctx.weights @ s)
    n = int((s > 0).sum())
    ci, reason = joint.interval(boot, n) if prog["dispute_rate"] is not None else (None, None)
    return {
        "disputed_items": int(d.sum()),
        "rate": prog["dispute_rate"],
        "ci95": joint.round_figure(ci, 3),
        "ci_reason": reason,
        "n_items": int(len(done)),
        "n_cases": n,
        "small_sample": bool(0 < n < joint.SMALL_SAMPLE),
        "reasons": dict(sorted(reason_counts.items())),
    }


# ---------------------------------------------------------------------------------------------
# Agreement (raw reviews, before arbitration)


def raw_ratings(ctx: Context) -> pd.DataFrame:
    f = ctx.f
    raw = f.scores.merge(
        f.reviews[["id", "reviewer"]].rename(columns={"id": "review"}), on="review", how="inner"
    )
    task_of = dict(zip(ctx.outputs["id"], ctx.outputs["task"], strict=True))
    raw["cluster"] = raw["output"].map(task_of).map(ctx.cluster_of)
    return raw[raw["cluster"].notna()]


def agreement_section(ctx: Context, raw: pd.DataFrame) -> dict:
    out = {}
    for dim in Rubric.coerce(ctx.meta["rubric"]):
        key, level = dim.key, dim.level
        if level not in agreement.LEVELS:
            out[key] = {
                "alpha": None,
                "level": level,
                "reason": f"unknown level of measurement {level!r}",
            }
            continue
        ratings = raw.loc[raw["dimension"] == key, ["output", "reviewer", "value", "cluster"]]
        ratings = ratings.rename(columns={"output": "unit", "reviewer": "coder"})
        out[key] = _rounded(reliability.agreement_figures(ratings, level, ctx.weights))
    return out


def preference_agreement(ctx: Context) -> dict:
    f, outputs = ctx.f, ctx.outputs
    r = f.reviews[f.reviews["preference"].isin(["output", "tie", "both_bad"])]
    contender_of = dict(zip(outputs["id"], outputs["contender"], strict=True))
    choice = r["preferred_output"].map(lambda o: contender_of.get(int(o)) if pd.notna(o) else None)
    choice = choice.where(r["preference"] == "output", r["preference"])
    task_of = dict(zip(f.items["id"], f.items["task"], strict=True))
    ratings = pd.DataFrame(
        {
            "unit": r["item"],
            "coder": r["reviewer"],
            "value": agreement.categorical_codes(choice),
            "cluster": r["item"].map(task_of).map(ctx.cluster_of),
        }
    ).dropna(subset=["cluster"])
    return _rounded(reliability.agreement_figures(ratings, "nominal", ctx.weights, numeric=False))


def _rounded(a: dict) -> dict:
    for key in ("alpha", "ac1", "ac2", "exact", "within_one"):
        if key in a:
            a[key] = joint.round_figure(a[key], 3)
    for key in ("ci95", "ac1_ci95", "ac2_ci95"):
        if key in a:
            a[key] = joint.round_figure(a[key], 3)
    return a


# ---------------------------------------------------------------------------------------------
# Pass rates (separate bases) and stability (within-task spread)


def sample_frame(ctx: Context, outq: pd.DataFrame) -> pd.DataFrame:
    """One row per finished generation: contender, task, sample, tier, failed, checks_passed,
    human_quality (final quality of a settled item), pending (in an unresolved dispute)."""
    f = ctx.f
    names = dict(zip(f.contenders["id"], f.contenders["name"], strict=True))
    gens = f.generations[
        f.generations["status"].isin([Generation.Status.DONE, Generation.Status.FAILED])
    ]
    tier = dict(zip(f.tasks["id"], f.tasks["tier"], strict=True))
    disputed_items = set(f.items.loc[f.items["state"] == "disputed", "id"])
    disputed = set(ctx.outputs.loc[ctx.outputs["item"].isin(disputed_items), "generation"])
    human = outq.groupby("generation")["quality"].mean()
    hq = gens["id"].map(human).astype(float)
    return pd.DataFrame(
        {
            "contender": gens["contender"].map(names),
            "task": gens["task"],
            "sample": gens["sample"],
            "tier": gens["task"].map(tier),
            "failed": (gens["status"] == Generation.Status.FAILED).to_numpy(),
            "checks_passed": gens["checks_passed"].map(
                lambda v: None if v is None or (isinstance(v, float) and np.isnan(v)) else bool(v)
            ),
            "human_quality": hq,
            "pending": (gens["id"].isin(disputed) & hq.isna()).to_numpy(),
        }
    ).dropna(subset=["contender"])


def pass_section(ctx: Context, samples: pd.DataFrame) -> dict:
    """{contender: {human|checks|combined: figures with ci95 on pass@1, pending, headline}}."""
    k = ctx.meta["samples_per_task"]
    based = passes.sample_bases(samples, ctx.meta["pass_threshold"])
    figures = passes.contender_passes(based, k)
    for basis in passes.BASES:
        point, boot, n = per_contender(ctx, passes.task_pass_rates(based, basis), "rate")
        for i, name in enumerate(ctx.names):
            if name not in figures:
                continue
            fig = figures[name][basis]
            s = joint.summary(point[i], boot[:, i], int(n[i]))
            fig["ci95"] = joint.round_figure(s["ci95"], 3)
            fig["ci_reason"], fig["small_sample"] = s["reason"], s["small_sample"]
            for key in ("pass_at_1", "pass_at_k", "pass_hat_k"):
                fig[key] = joint.round_figure(fig[key], 3)
            for point_k in fig["curve"]:
                for part in (point_k, point_k["low"], point_k["high"]):
                    part["pass_at_k"] = joint.round_figure(part["pass_at_k"], 3)
                    part["pass_hat_k"] = joint.round_figure(part["pass_hat_k"], 3)
    for entry in figures.values():
        for key in ("pass_at_1", "pass_at_k", "pass_hat_k"):
            entry[key] = {basis: entry[basis][key] for basis in passes.BASES}
    for name, tiers in _tier_rates(based, ctx.meta["pass_threshold"]).items():
        if name in figures:
            figures[name]["by_tier"] = tiers
    empty = {"pending": 0, "headline": None}
    return {name: figures.get(name, empty) for name in ctx.names}, based


def _tier_rates(based: pd.DataFrame, pass_threshold) -> dict:
    """{contender: {tier: {"threshold", human|checks|combined: Wilson rate over samples}}},
    each tier judged against its own threshold."""
    out: dict = {}
    for (name, tier), frame in based.groupby(["contender", "tier"], sort=True):
        entry = {"threshold": passes.threshold_for(tier, pass_threshold)}
        for basis in passes.BASES:
            on = frame[basis].dropna()
            entry[basis] = rates.rate(int(on.sum()), int(len(on)))
        out.setdefault(name, {})[str(tier)] = entry
    return out


def stability_section(ctx: Context, outq: pd.DataFrame, gens: pd.DataFrame):
    """Within-task unbiased SD (ddof = 1) of the normalized sample scores (people's, else the
    checks' pass share) over tasks with two or more samples, mean over tasks with its interval;
    stability = 1 - sampling_sd / 0.5, clipped to [0, 1]. Returns (section,
    stability boot (B x K))."""
    sample_q = (
        outq.groupby(["contender", "task", "sample"], sort=True)["quality"].mean().reset_index()
    )
    bases = {
        "human": stability.task_spreads(sample_q),
        "checks": stability.task_spreads(check_scores(gens)),
    }
    figs = {b: per_contender(ctx, frame, "sampling_sd") for b, frame in bases.items()}
    out, boot_stab = {}, np.full((len(ctx.weights), len(ctx.names)), np.nan)
    for i, name in enumerate(ctx.names):
        source = next((b for b in ("human", "checks") if figs[b][2][i] > 0), None)
        if source is None:
            out[name] = {"stability": None, "sampling_sd": None, "n_tasks": 0, "source": None}
            continue
        point, boot, n = (x[..., i] for x in figs[source])
        sd = joint.summary(point, boot, int(n))
        stab_boot = np.clip(1 - boot / stability.MAX_SD, 0, 1)
        boot_stab[:, i] = stab_boot
        ci, reason = (sd["ci95"], sd["reason"])
        out[name] = {
            "stability": joint.round_figure(stability.spread_stability(point), 3),
            "stability_ci95": joint.round_figure(
                [stability.spread_stability(ci[1]), stability.spread_stability(ci[0])]
                if ci
                else None,
                3,
            ),
            "sampling_sd": joint.round_figure(float(point), 3),
            "sampling_sd_ci95": joint.round_figure(ci, 3),
            "ci_reason": reason,
            "n_tasks": int(n),
            # tasks with one scored sample have no spread: left out of the mean, counted here
            "n_single_sample_tasks": _single_sample_tasks(bases[source], name),
            "small_sample": sd["small_sample"],
            "source": source,
        }
    _stability_warnings(ctx, out)
    return out, boot_stab


def _single_sample_tasks(spreads: pd.DataFrame, name: str) -> int:
    mine = spreads[spreads["contender"] == name]
    return int((mine["n_samples"] < 2).sum())


def _stability_warnings(ctx: Context, out: dict) -> None:
    if any(v["source"] == "checks" for v in out.values()):
        ctx.warnings.append(
            "stability: people scored fewer than two samples of a task, so stability is measured "
            "on the automatic checks (the share of each task's samples that pass); review two or "
            "more samples per task (reviewed_samples) to measure it on people's scores"
        )
    if all(v["stability"] is None for v in out.values()):
        ctx.warnings.append(
            "stability: not measured: it needs two or more samples of a task scored by people "
            "(reviewed_samples of 2 or more) or by automatic checks"
        )


# ---------------------------------------------------------------------------------------------
# Reviewers


def reviewer_section(ctx: Context, raw: pd.DataFrame, final_scores: pd.DataFrame) -> dict:
    """`reviewers.reviewer_figures`, plus the interval of each reviewer's mean offset from the
    final outcome (over test cases, from the joint bootstrap) and the test cases it rests on."""
    out = reviewers.reviewer_figures(
        raw[["reviewer", "output", "dimension", "value"]],
        ctx.f.reviews[["reviewer", "seconds"]],
        final_scores,
    )
    joined = raw[raw["value"].notna()].merge(
        final_scores[final_scores["value"].notna()].rename(columns={"value": "final"}),
        on=["output", "dimension"],
    )
    names = sorted(out)
    if joined.empty or not names:
        return out
    index = {n: i for i, n in enumerate(names)}
    offsets = (joined["value"] - joined["final"]).to_numpy(dtype=float)
    grp = joined["reviewer"].map(index).to_numpy(dtype=int)
    cl = joined["cluster"].to_numpy(dtype=int)
    # one value per (reviewer, test case): the mean of its offsets there
    per = pd.DataFrame({"g": grp, "c": cl, "v": offsets}).groupby(["g", "c"])["v"].mean()
    g, c = per.index.get_level_values(0).to_numpy(), per.index.get_level_values(1).to_numpy()
    point, boot = joint.group_means(ctx.weights, c, g, per.to_numpy(), len(names))
    n = joint.n_clusters(c, g, per.to_numpy(), len(names))
    for name, i in index.items():
        s = joint.summary(point[i], boot[:, i], int(n[i]))
        out[name]["mean_offset_ci95"] = joint.round_figure(s["ci95"], 3)
        out[name]["offset_n_cases"] = int(n[i])
        out[name]["offset_ci_reason"] = s["reason"] if n[i] else None
        out[name]["small_sample"] = s["small_sample"]
    return out
