"""`build_report`: frames in, report dict out, one section function at a time (pure)."""

from __future__ import annotations

import dataclasses

import numpy as np
from django.conf import settings

from reviews.models import FLAGS
from reviews.report import agentic
from reviews.report import figures as fig
from reviews.report import gates as report_gates
from reviews.report import sections as sec
from reviews.report import slices as report_slices
from reviews.report.outcomes import battles as make_battles
from reviews.report.outcomes import (
    check_rows,
    final_flags,
    final_outcomes,
    output_table,
    position_bias,
)
from reviews.report.usage import usage_section
from reviews.stats import costs, joint, passes, quality, rates
from tasks.generation.sample_seed import DERIVED
from tasks.generation.sample_seed import pinned as seeds_pinned
from tasks.models import Generation


def build_report(f, meta: dict, *, n_boot: int, seed: int) -> dict:
    """The report from the frames, one section at a time in this order: later sections read
    earlier ones' figures, and the warnings are listed in the order the sections raise them."""
    f_all = f
    f = _conversation_regime(f)
    outputs = output_table(f)
    ctx = sec.make_context(f, meta, n_boot=n_boot, seed=seed, outputs=outputs)
    category_weights = _category_weights(meta)
    prog = sec.progress(ctx)
    raw = sec.raw_ratings(ctx)
    final_scores, final_prefs, final_full, turn_final = _final_outcomes(f, outputs)
    outq = quality.output_quality(final_full, meta["rubric"])
    weighted, q_boot = fig.weighted_quality(ctx, outq, category_weights)
    battles, sources = make_battles(outputs, outq, final_prefs, ctx.contender_index)
    bt = fig.rating_section(ctx, battles)
    gens = _named_generations(f)
    stab, s_boot = sec.stability_section(ctx, outq, gens)
    pass_figs, based = sec.pass_section(ctx, sec.sample_frame(ctx, outq))
    _seeds_pinned(ctx, f, stab, s_boot, pass_figs)
    flaky = _flaky_tasks(ctx, based, pass_figs, stab)
    decision, decision_meta = _cost_decision(
        ctx, f, gens, fig.Boot(weighted, q_boot), fig.Boot(stab, s_boot)
    )
    standing = Standing(quality=weighted, stability=stab, passes=pass_figs, decision=decision)
    board = leaderboard(ctx, bt, standing, final_full)
    top = [r["contender"] for r in board if r["rating"] is not None][:2]
    _outcome_warnings(ctx, prog, weighted)
    both_regimes = agentic.done_generations(ctx, f_all)
    tools = agentic.tools_section(ctx, f_all, both_regimes)
    conversation = agentic.conversation_section(ctx, f_all, both_regimes, turn_final)
    report = {
        "campaign": meta["slug"],
        "name": meta["name"],
        "settings": _settings(meta),
        "contenders": ctx.names,
        "currency": settings.EVALSITE_CURRENCY,  # of every cost and price in the report
        "progress": prog,
        "agreement": sec.agreement_section(ctx, raw),
        "preference_agreement": sec.preference_agreement(ctx),
        "leaderboard": board,
        "rating": _rating_meta(bt, sources),
        "quality": _quality_section(ctx, f, outq, category_weights),
        "stability": _stability_section(ctx, stab, pass_figs, flaky),
        "flaky_tasks": flaky,
        "passes": pass_figs,
        "rates": _rates_section(ctx, f, gens, outputs),
        "position_bias": position_bias(f, meta["rubric"]),
        "reviewers": sec.reviewer_section(ctx, raw, final_scores),
        "disputes": sec.disputes(ctx, prog),
        "head_to_head": fig.head_to_head_section(ctx, outq, battles),
        "slices": report_slices.slices_section(
            ctx, outq, based, {n: pass_figs[n].get("headline") for n in ctx.names}
        ),
        "length": report_slices.length_section(ctx, battles, gens, bt),
        "separation": fig.separation(ctx, outq, top),
        "decision": decision_meta,
        "usage": usage_section(f, gens, ctx.names),
        "tools": tools,
        "conversation": conversation,
        "bootstrap": _bootstrap_meta(ctx, seed),
        "warnings": ctx.warnings,
    }
    _gates(ctx, report)
    for row in report["leaderboard"]:
        controlled = report["length"]["contenders"][row["contender"]]
        row["rating_length_controlled"] = controlled["rating_controlled"]
        row["rating_length_controlled_ci95"] = controlled["rating_controlled_ci95"]
    return report


def _gates(ctx, report: dict) -> None:
    """``gates`` per contender, their limits in ``decision.gates``, the leaderboard rows
    marked, and the decision score ranked among the contenders that pass every gate."""
    decision = report["decision"]
    gates, decision["gates"] = report_gates.gates_section(
        report, decision["min_quality"], ctx.meta["weights"].get("gates")
    )
    report["gates"] = gates
    for row in report["leaderboard"]:
        verdict = gates[row["contender"]]
        row["gates_pass"] = verdict["pass"]
        row["gates_failed"] = [f["gate"] for f in verdict["failed"]]
    ranked = fig.decision_ranks(
        {r["contender"]: r for r in report["leaderboard"] if r["gates_pass"]}
    )
    for row in report["leaderboard"]:
        row["decision_rank"] = ranked.get(row["contender"])
    failing = [n for n in ctx.names if not gates[n]["pass"]]
    if failing:
        ctx.warnings.append(
            "gates: "
            + "; ".join(
                f"{n} fails {', '.join(f['gate'] for f in gates[n]['failed'])}" for n in failing
            )
            + ", so not ranked on decision score"
        )


def _conversation_regime(f):
    """The frames without single-turn rows and per-turn scores: those have their own figures
    (``report_agentic``); every other figure reads the conversation regime and the rubric's
    own dimensions."""
    return dataclasses.replace(
        f,
        generations=agentic.without_single_turn(f.generations),
        scores=agentic.split_turn_scores(f.scores)[0],
    )


def _category_weights(meta: dict) -> dict[str, float]:
    return {str(k): float(v) for k, v in (meta["weights"].get("categories") or {}).items()}


def _final_outcomes(f, outputs):
    """(final scores on the rubric's dimensions, final preferences, every final score on the
    rubric's dimensions, the final per-turn scores)."""
    final_scores, final_prefs, final_full = final_outcomes(f, outputs)
    final_scores = agentic.split_turn_scores(final_scores)[0]
    final_full, turn_final = agentic.split_turn_scores(final_full)
    return final_scores, final_prefs, final_full, turn_final


def _named_generations(f):
    """The generations with each contender's name in place of its id."""
    gens = f.generations.copy()
    gens["contender"] = gens["contender"].map(
        dict(zip(f.contenders["id"], f.contenders["name"], strict=True))
    )
    return gens


def _cost_decision(ctx, f, gens, quality: fig.Boot, stability: fig.Boot):
    """(the decision score per contender, the decision section) from the done generations'
    costs at the contenders' prices."""
    done = gens[gens["status"] == Generation.Status.DONE].copy()
    prices = f.contenders.set_index("name")
    done["price_in"] = done["contender"].map(prices["price_in"])
    done["price_out"] = done["contender"].map(prices["price_out"])
    done["answer_cost"] = costs.answer_costs(done) if len(done) else np.nan
    return fig.cost_decision(ctx, done, quality, stability)


def _outcome_warnings(ctx, prog: dict, weighted: dict) -> None:
    if not prog["settled"]:
        ctx.warnings.append(
            "final outcomes: no item has a final outcome yet (agreed, or resolved by an "
            "arbiter), so ratings, quality, head-to-head and reviewer offsets wait for one"
        )
    _small_sample_warning(ctx, weighted)


def _settings(meta: dict) -> dict:
    keys = ("mode", "samples_per_task", "reviewed_samples", "overlap", "pass_threshold")
    return {k: meta[k] for k in keys}


def _quality_section(ctx, f, outq, category_weights: dict) -> dict:
    """Every category's weight (1 unless given), and quality by category, tier and case type."""
    return {
        "weights": {c: category_weights.get(c, 1.0) for c in sorted(f.tasks["category"].unique())},
        "by_category": fig.grouped_quality(ctx, outq, "category"),
        "by_tier": fig.grouped_quality(ctx, outq, "tier"),
        "by_case_type": fig.grouped_quality(ctx, outq, "case_type"),
    }


def _stability_section(ctx, stab: dict, pass_figs: dict, flaky: dict) -> dict:
    """Per contender: its stability with its headline pass figures, k and flaky tasks."""
    k = ctx.meta["samples_per_task"]
    return {
        name: {**stab[name], **_headline(pass_figs[name]), "k": k, "flaky_tasks": flaky[name]}
        for name in ctx.names
    }


NOT_MEASURED = "samples identical by seed: not measured"


def _seeds_pinned(ctx, f, stab: dict, s_boot, pass_figs: dict) -> None:
    """Contenders whose samples all went out with one seed (``sample_seeds: fixed``) have no
    stability and no pass@k beyond k = 1: the samples repeat one answer, so agreement among
    them measures the seed, not the model."""
    mode = (ctx.meta["weights"] or {}).get("sample_seeds", DERIVED)
    params = f.contenders["params"] if "params" in f.contenders else [None] * len(f.contenders)
    pinned = [n for n, p in zip(f.contenders["name"], params, strict=True) if seeds_pinned(p, mode)]
    if not pinned or ctx.meta["samples_per_task"] < 2:
        return
    for name in pinned:
        i = ctx.names.index(name)
        s_boot[:, i] = np.nan
        stab[name] = {**dict.fromkeys(stab[name]), "n_tasks": 0, "reason": NOT_MEASURED}
        for basis in passes.BASES:
            figs = pass_figs[name].get(basis)
            if figs and figs.get("curve"):
                figs.update(pass_at_k=None, pass_hat_k=None, curve=figs["curve"][:1])
                figs["reason"] = NOT_MEASURED
        for key in ("pass_at_k", "pass_hat_k"):
            if key in pass_figs[name]:
                pass_figs[name][key] = dict.fromkeys(passes.BASES)
        pass_figs[name]["reason"] = NOT_MEASURED
    ctx.warnings.append(
        f"stability: {', '.join(pinned)}: one seed for every sample (sample_seeds: fixed), so "
        "the samples repeat one answer; stability and pass@k are not measured"
    )


def _flaky_tasks(ctx, based, pass_figs: dict, stab: dict) -> dict:
    """{contender: [task ids whose settled samples disagree (some pass, some fail)]}, on the
    basis stability is measured on (people's scores where two or more samples of a task were
    reviewed, else the checks), else the contender's headline pass basis."""
    out = {}
    for name in ctx.names:
        basis = (stab.get(name) or {}).get("source") or pass_figs[name].get("headline")
        mine = based[(based["contender"] == name)] if len(based) else based
        if basis is None or mine.empty:
            out[name] = []
            continue
        out[name] = sorted(str(ctx.labels.get(t, t)) for t in passes.flaky_tasks(mine, basis))
    return out


def _rates_section(ctx, f, gens, outputs) -> dict:
    """Per contender: the automatic checks' pass rates and the final flags' rates."""
    return rates.contender_rates(
        check_rows(gens, f.tasks), final_flags(f, outputs, FLAGS), ctx.names
    )


def _bootstrap_meta(ctx, seed: int) -> dict:
    return {
        "rounds": int(len(ctx.weights)),
        "seed": seed,
        "unit": "test case (all its samples, items, outputs and reviews together)",
        "min_items": joint.MIN_ITEMS,
        "small_sample_below": joint.SMALL_SAMPLE,
    }


def _headline(p: dict) -> dict:
    basis = p.get("headline")
    figs = p.get(basis) or {}
    return {
        "pass_at_1": figs.get("pass_at_1"),
        "pass_at_k": figs.get("pass_at_k"),
        "pass_hat_k": figs.get("pass_hat_k"),
        "pass_basis": basis,
        "pending": p.get("pending", 0),
    }


def _rating_meta(bt: dict, sources: dict) -> dict:
    keys = ("n_battles", "n_items", "ridge", "undefeated", "winless", "components", "unrated")
    return {
        "method": "bradley-terry (elo scale, mean 1000)",
        **{k: bt[k] for k in keys},
        "n_cases": bt["n_cases"],
        "sources": sources,
        "reason": bt["reason"],
        "ci_reason": bt["ci_reason"],
        "bootstrap": bt["bootstrap"],
        "rank_rule": "rank = 1 + the number of contenders whose lower bound is above this one's "
        "upper bound (an open side counts as infinite)",
    }


@dataclasses.dataclass(frozen=True)
class Standing:
    """Each contender's figures a leaderboard row shows beside its rating: weighted quality,
    stability, pass rates and the decision score."""

    quality: dict
    stability: dict
    passes: dict
    decision: dict


def leaderboard(ctx, bt, standing: Standing, final_full) -> list:
    weighted, stab, pass_figs, decision = (
        standing.quality,
        standing.stability,
        standing.passes,
        standing.decision,
    )
    dims = fig.dimension_scores(ctx, final_full, ctx.meta["rubric"])
    rows = []
    for name in ctx.names:
        q, st, d = weighted.get(name, {}), stab.get(name, {}), decision[name]
        cl = d["cost"]
        rows.append(
            {
                "contender": name,
                "rating": bt["ratings"][name],
                "rating_bound": bt["rating_bound"][name],
                "ci95": bt["ci95"][name],
                "rank": bt["rank"][name],
                "rank_ci95": bt["rank_ci95"][name],
                "p_best": bt["p_best"][name],
                "n_cases": bt["n_cases"],
                **bt["record"][name],
                "scores": dims[name],
                "stability_source": st.get("source"),
                "quality": q.get("quality"),
                "quality_ci95": q.get("ci95"),
                "quality_n": q.get("n_tasks", 0),
                "quality_reason": q.get("reason"),
                "small_sample": bool(
                    q.get("small_sample", False) or 0 < bt["n_cases"] < joint.SMALL_SAMPLE
                ),
                "rating_ci_reason": bt["ci_reasons"][name],
                "stability": st.get("stability"),
                "stability_ci95": st.get("stability_ci95"),
                "sampling_sd": st.get("sampling_sd"),
                **_headline(pass_figs[name]),
                "k": ctx.meta["samples_per_task"],
                "cost_per_task": cl.get("cost_per_task"),
                "normalized_cost": d["normalized_cost"],
                "cost_reason": d["cost_reason"],
                "latency_ms": cl.get("latency_ms"),
                "ttft_ms": cl.get("ttft_ms"),
                "decision_score": d["decision_score"],
                "decision_ci95": d["decision_ci95"],
                "decision_reason": d["decision_reason"],
                "decision_rank": d["decision_rank"],
                "below_floor": d["below_floor"],
                "pareto": d["pareto"],
            }
        )

    def sort_key(row):
        r, qv = row["rating"], row["quality"]
        return (r is None, -(r or 0.0), qv is None, -(qv or 0.0), row["contender"])

    return sorted(rows, key=sort_key)


def _small_sample_warning(ctx, weighted: dict) -> None:
    small = [n for n, q in weighted.items() if q.get("small_sample")]
    if small:
        ctx.warnings.append(
            f"small_sample: quality of {', '.join(small)} rests on fewer than 30 test cases; "
            "read every figure with its interval, and no interval below 10; " + joint.UNDER_COVERAGE
        )
