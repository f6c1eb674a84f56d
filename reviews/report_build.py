"""`build_report`: frames in, report dict out, one section function at a time (pure)."""

from __future__ import annotations

import dataclasses

import numpy as np
from django.conf import settings

from tasks.models import Generation

from . import report_agentic as agentic
from . import report_figures as fig
from . import report_sections as sec
from .models import FLAGS
from .report_outcomes import battles as make_battles
from .report_outcomes import check_rows, final_flags, final_outcomes, output_table, position_bias
from .stats import costs, joint, quality, rates


def build_report(f, meta: dict, *, n_boot: int, seed: int) -> dict:
    # Single-turn rows and per-turn scores have their own figures (``report_agentic``); every
    # other figure reads the conversation regime and the rubric's own dimensions.
    f_all = f
    f = dataclasses.replace(
        f,
        generations=agentic.without_single_turn(f.generations),
        scores=agentic.split_turn_scores(f.scores)[0],
    )
    outputs = output_table(f)
    ctx = sec.make_context(f, meta, n_boot=n_boot, seed=seed, outputs=outputs)
    rubric = meta["rubric"]
    category_weights = {
        str(k): float(v) for k, v in (meta["weights"].get("categories") or {}).items()
    }
    prog = sec.progress(ctx)
    raw = sec.raw_ratings(ctx)

    final_scores, final_prefs, final_full = final_outcomes(f, outputs)
    final_scores = agentic.split_turn_scores(final_scores)[0]
    final_full, turn_final = agentic.split_turn_scores(final_full)
    outq = quality.output_quality(final_full, rubric)
    weighted, q_boot = fig.weighted_quality(ctx, outq, category_weights)
    battles, sources = make_battles(outputs, outq, final_prefs, ctx.contender_index)
    bt = fig.rating_section(ctx, battles)

    gens = f.generations.copy()
    gens["contender"] = gens["contender"].map(
        dict(zip(f.contenders["id"], f.contenders["name"], strict=True))
    )
    stab, s_boot = sec.stability_section(ctx, outq, gens)
    pass_figs, _ = sec.pass_section(ctx, sec.sample_frame(ctx, outq))

    done = gens[gens["status"] == Generation.Status.DONE].copy()
    prices = f.contenders.set_index("name")
    done["price_in"] = done["contender"].map(prices["price_in"])
    done["price_out"] = done["contender"].map(prices["price_out"])
    done["answer_cost"] = costs.answer_costs(done) if len(done) else np.nan
    decision, decision_meta = fig.cost_decision(ctx, done, weighted, q_boot, stab, s_boot)

    board = leaderboard(ctx, bt, weighted, stab, pass_figs, decision, final_full)
    top = [r["contender"] for r in board if r["rating"] is not None][:2]
    if not prog["settled"]:
        ctx.warnings.append(
            "final outcomes: no item has a final outcome yet (agreed, or resolved by an "
            "arbiter), so ratings, quality, head-to-head and reviewer offsets wait for one"
        )
    _small_sample_warning(ctx, weighted)
    both_regimes = agentic.done_generations(ctx, f_all)
    tools = agentic.tools_section(ctx, f_all, both_regimes)
    conversation = agentic.conversation_section(ctx, f_all, both_regimes, turn_final)
    return {
        "campaign": meta["slug"],
        "name": meta["name"],
        "settings": {
            "mode": meta["mode"],
            "samples_per_task": meta["samples_per_task"],
            "reviewed_samples": meta["reviewed_samples"],
            "overlap": meta["overlap"],
            "pass_threshold": meta["pass_threshold"],
        },
        "contenders": ctx.names,
        "currency": settings.EVALSITE_CURRENCY,  # of every cost and price in the report
        "progress": prog,
        "agreement": sec.agreement_section(ctx, raw),
        "preference_agreement": sec.preference_agreement(ctx),
        "leaderboard": board,
        "rating": _rating_meta(bt, sources),
        "quality": {
            "weights": {
                c: category_weights.get(c, 1.0) for c in sorted(f.tasks["category"].unique())
            },
            "by_category": fig.grouped_quality(ctx, outq, "category"),
            "by_tier": fig.grouped_quality(ctx, outq, "tier"),
            "by_case_type": fig.grouped_quality(ctx, outq, "case_type"),
        },
        "stability": {
            name: {**stab[name], **_headline(pass_figs[name]), "k": meta["samples_per_task"]}
            for name in ctx.names
        },
        "passes": pass_figs,
        "rates": rates.contender_rates(
            check_rows(gens, f.tasks), final_flags(f, outputs, FLAGS), ctx.names
        ),
        "position_bias": position_bias(f, rubric),
        "reviewers": sec.reviewer_section(ctx, raw, final_scores),
        "disputes": sec.disputes(ctx, prog),
        "head_to_head": fig.head_to_head_section(ctx, outq, battles),
        "separation": fig.separation(ctx, outq, top),
        "decision": decision_meta,
        "tools": tools,
        "conversation": conversation,
        "bootstrap": {
            "rounds": int(len(ctx.weights)),
            "seed": seed,
            "unit": "test case (all its samples, items, outputs and reviews together)",
            "min_items": joint.MIN_ITEMS,
            "small_sample_below": joint.SMALL_SAMPLE,
        },
        "warnings": ctx.warnings,
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


def leaderboard(ctx, bt, weighted, stab, pass_figs, decision, final_full) -> list:
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
                "small_sample": q.get("small_sample", False),
                "stability": st.get("stability"),
                "stability_ci95": st.get("stability_ci95"),
                "sampling_sd": st.get("sampling_sd"),
                **_headline(pass_figs[name]),
                "k": ctx.meta["samples_per_task"],
                "cost_per_task": cl.get("cost_per_task"),
                "normalized_cost": d["normalized_cost"],
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
            "read every figure with its interval, and no interval below 10"
        )
