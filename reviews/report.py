"""The campaign report: ORM -> DataFrames (few bulk reads) -> statistics -> one JSON-able dict.

Two layers, so dashboards, exports and the benchmark can reuse them:

* `campaign_frames(campaign)` reads the campaign with a handful of `values_list` queries into
  plain DataFrames (`CampaignFrames`), and `campaign_meta(campaign)` the settings the statistics
  need. Nothing else touches the database.
* `build_report(frames, meta)` is pure: frames in, report dict out (it calls `reviews.stats`).
  `campaign_report(campaign=...)` is the two together.

Everything is deterministic: rows are sorted before use, bootstraps use a fixed seed, floats are
rounded (12 decimals, 10 significant digits) and NaN becomes null, so the same data gives a byte-identical
`report_json`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tasks.models import Campaign, Generation, Task

from .models import ItemOutput, Review, ReviewItem, Score
from .report_build import build_report as _build
from .report_outcomes import (  # noqa: F401 (re-exported: dashboards and tests read them here)
    SETTLED,
    check_scores,
    final_outcomes,
    output_quality_frame,
)
from .stats import head_to_head

SEED = 20261130
N_BOOT = 1000


@dataclass
class CampaignFrames:
    """Plain frames of one campaign. Ids are the database's; names only in ``contenders``.

    contenders: id, name, price_in, price_out (per million tokens)
    tasks: id, external_id, category, tier
    generations: id, task, contender, sample, status, cost, input_tokens, output_tokens,
                 latency_ms, ttft_ms, checks_passed, check_results ({check: {"passed": bool}})
    items: id, task, sample, state, ready, final (dict|None), dispute_reasons (list)
    outputs: id, item, generation (ItemOutput rows)
    reviews: id, item, reviewer (username), preference, preferred_output, seconds,
             presented_order (list of ItemOutput ids)
    scores: review, output, dimension, value (NaN = N/A)
    """

    contenders: pd.DataFrame
    tasks: pd.DataFrame
    generations: pd.DataFrame
    items: pd.DataFrame
    outputs: pd.DataFrame
    reviews: pd.DataFrame
    scores: pd.DataFrame


def campaign_meta(campaign: Campaign) -> dict:
    return {
        "slug": campaign.slug,
        "name": campaign.name,
        "mode": campaign.mode,
        "rubric": list(campaign.rubric or []),
        "weights": dict(campaign.weights or {}),
        "pass_threshold": float(campaign.pass_threshold),
        "samples_per_task": int(campaign.samples_per_task),
        "reviewed_samples": int(campaign.reviewed_samples),
        "overlap": int(campaign.overlap),
    }


def _frame(rows, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(list(rows), columns=columns)


def campaign_frames(campaign: Campaign) -> CampaignFrames:
    """Seven bulk reads, no per-row queries."""
    contenders = _frame(
        campaign.contenders.order_by("name").values_list(
            "id", "name", "price_in_per_mtok", "price_out_per_mtok"
        ),
        ["id", "name", "price_in", "price_out"],
    )
    contenders["price_in"] = contenders["price_in"].astype(float)
    contenders["price_out"] = contenders["price_out"].astype(float)
    tasks = _frame(
        Task.objects.filter(testset_id=campaign.testset_id)
        .order_by("id")
        .values_list("id", "external_id", "category", "tier"),
        ["id", "external_id", "category", "tier"],
    )
    generations = _frame(
        Generation.objects.filter(campaign=campaign)
        .order_by("id")
        .values_list(
            "id",
            "task_id",
            "contender_id",
            "sample_index",
            "status",
            "cost",
            "input_tokens",
            "output_tokens",
            "latency_ms",
            "ttft_ms",
            "checks_passed",
            "check_results",
        ),
        [
            "id",
            "task",
            "contender",
            "sample",
            "status",
            "cost",
            "input_tokens",
            "output_tokens",
            "latency_ms",
            "ttft_ms",
            "checks_passed",
            "check_results",
        ],
    )
    for col in ("cost", "input_tokens", "output_tokens", "latency_ms", "ttft_ms"):
        generations[col] = pd.to_numeric(generations[col], errors="coerce").astype(float)
    items = _frame(
        ReviewItem.objects.filter(campaign=campaign)
        .order_by("id")
        .values_list("id", "task_id", "sample_index", "state", "ready", "final", "dispute_reasons"),
        ["id", "task", "sample", "state", "ready", "final", "dispute_reasons"],
    )
    outputs = _frame(
        ItemOutput.objects.filter(item__campaign=campaign)
        .order_by("id")
        .values_list("id", "item_id", "generation_id"),
        ["id", "item", "generation"],
    )
    reviews = _frame(
        Review.objects.filter(item__campaign=campaign)
        .order_by("id")
        .values_list(
            "id",
            "item_id",
            "reviewer__username",
            "preference",
            "preferred_output_id",
            "seconds_spent",
            "presented_order",
        ),
        ["id", "item", "reviewer", "preference", "preferred_output", "seconds", "presented_order"],
    )
    scores = _frame(
        Score.objects.filter(review__item__campaign=campaign)
        .order_by("id")
        .values_list("review_id", "output_id", "dimension", "value"),
        ["review", "output", "dimension", "value"],
    )
    scores["value"] = scores["value"].astype(float)
    return CampaignFrames(contenders, tasks, generations, items, outputs, reviews, scores)


def campaign_report(*, campaign: Campaign, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """The report dict for one campaign. Shape (every figure may be null with a reason):

    ``campaign`` slug; ``name``; ``settings`` (mode, samples, overlap, weights, pass threshold);
    ``progress`` {items, ready, reviews_done, reviews_needed, settled, agreed, disputed,
    resolved, open, dispute_rate, generations {status: n}};
    ``agreement`` {dimension: {alpha, level, ci95, band, n_units, n_ratings, exact, within_one,
    reason}}; ``preference_agreement`` (same shape, nominal);
    ``leaderboard`` [ {contender, rating, ci95, rank, wins, losses, ties, scores {dimension:
    {mean, ci95, n_tasks}}, quality, quality_ci95, stability, pass_at_1, pass_at_k, pass_hat_k,
    k, cost_per_task, normalized_cost, latency_ms {p50, p95}, ttft_ms {p50, p95},
    decision_score, stability_source} ] ordered by rating (then quality, then name);
    ``rating`` {method, n_battles, n_items, sources {preference, scores}, ridge, undefeated,
    winless, components, reason, bootstrap {rounds, ridge_rounds, seed}};
    ``quality`` {weights, by_category {contender: {category: {mean, ci95, n_tasks}}}, by_tier};
    ``stability`` {contender: {stability, n_tasks, source ("human"|"checks"|null), pass_at_1,
    pass_at_k, pass_hat_k, k}};
    ``position_bias`` {first_position_win_rate, ci95, n, expected, p_value, source, reason};
    ``reviewers`` {username: {reviews, median_seconds, mean_offset, mean_abs_offset,
    agreement_exact, agreement_within_one, n_compared}};
    ``disputes`` {disputed_items, rate, reasons {part: items}};
    ``head_to_head`` [ {a, b, n_tasks, mean_diff (b - a), ci95, wins, losses, ties, p_value,
    regressions [{task, diff}], improvements, reason} ] for every pair of contenders;
    ``decision`` {w_quality, w_stability, formula}; ``warnings`` [str].
    """
    return build_report(
        campaign_frames(campaign), campaign_meta(campaign), n_boot=n_boot, seed=seed
    )


def report_json(report: dict) -> str:
    return json.dumps(clean(report), indent=2, ensure_ascii=False, allow_nan=False)


def clean(value):
    """Round floats (see below), NaN/inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        v = float(value)
        if not math.isfinite(v):
            return None
        # 12 decimals absolute (float noise like 1e-17 becomes 0), then 10 significant digits
        # (small costs per task such as 0.0000345 keep their precision).
        r = float(f"{round(v, 12):.10g}")
        return 0.0 if r == 0 else r
    return value


# ---------------------------------------------------------------------------------------------
# Pure assembly


def _output_table(f: CampaignFrames) -> pd.DataFrame:
    """ItemOutput id -> item, generation, contender (name), task, sample, category, tier, state."""
    gens = f.generations[["id", "task", "contender", "sample"]].rename(columns={"id": "generation"})
    names = dict(zip(f.contenders["id"], f.contenders["name"], strict=True))
    out = f.outputs.merge(gens, on="generation", how="inner")
    out["contender"] = out["contender"].map(names)
    tasks = f.tasks.rename(columns={"id": "task"})
    out = out.merge(tasks, on="task", how="left")
    out = out.merge(f.items[["id", "state"]].rename(columns={"id": "item"}), on="item", how="left")
    return out.dropna(subset=["contender"]).sort_values("id").reset_index(drop=True)


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return np.nan
    return float(value)


def _final_tables(f: CampaignFrames, outputs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Final scores (output, dimension, value) and final preferences (item, preference) of the
    settled items (agreed or resolved by arbitration)."""
    settled = f.items[f.items["state"].isin(SETTLED) & f.items["final"].notna()]
    own = outputs.groupby("item")["id"].agg(frozenset).to_dict() if len(outputs) else {}
    rows, prefs = [], []
    # Defensive about the JSON: a key that is not one of the item's outputs, or a value that is
    # not a number, is skipped rather than crashing the report.
    for item, final in zip(settled["id"], settled["final"], strict=True):
        if not isinstance(final, dict):
            continue
        mine = own.get(item, frozenset())
        for output, dims in (final.get("scores") or {}).items():
            o = int(output) if str(output).isdigit() else None
            if o in mine and isinstance(dims, dict):
                rows.extend((o, str(dim), _number(v)) for dim, v in dims.items())
        prefs.append((item, final.get("preference")))
    return (
        pd.DataFrame(rows, columns=["output", "dimension", "value"]),
        pd.DataFrame(prefs, columns=["item", "preference"]),
    )


def final_outcomes(f: CampaignFrames, outputs: pd.DataFrame | None = None):
    """(final scores, final preferences, final scores joined with the output's contender,
    task, sample, category and tier) of the settled items."""
    outputs = _output_table(f) if outputs is None else outputs
    final_scores, final_prefs = _final_tables(f, outputs)
    cols = ["id", "item", "generation", "contender", "task", "sample", "category", "tier"]
    final_full = final_scores.merge(
        outputs[cols].rename(columns={"id": "output"}), on="output", how="inner"
    ).sort_values(["output", "dimension"])
    return final_scores, final_prefs, final_full


def output_quality_frame(f: CampaignFrames, meta: dict) -> pd.DataFrame:
    """One row per reviewed output of a settled item: item, output, generation, contender,
    task, sample, category, tier, quality (0..1). For capability heatmaps and the like."""
    return quality.output_quality(final_outcomes(f)[2], meta["rubric"])


def campaign_head_to_head(*, campaign: Campaign, a: str, b: str, limit: int | None = None) -> dict:
    """Head-to-head of contender ``b`` against ``a`` (names): paired per-task quality
    differences, the exact sign test and every task where b regressed (``limit`` caps lists)."""
    f = campaign_frames(campaign)
    outq = output_quality_frame(f, campaign_meta(campaign))
    task_q = outq.groupby(["task", "contender"], sort=True)["quality"].mean().reset_index()
    labels = dict(zip(f.tasks["id"], f.tasks["external_id"], strict=True))
    return clean(head_to_head.head_to_head(task_q, a, b, labels=labels, limit=limit))


def _battles(
    outputs: pd.DataFrame, outq: pd.DataFrame, prefs: pd.DataFrame, order: dict
) -> tuple[pd.DataFrame, dict]:
    """Pairwise outcomes per settled item: the final preference where given (a tie or "both
    bad" is a tie for every pair; a preferred output beats every other output of its item),
    otherwise (and for pairs without the preferred output) the final overall scores. A pair
    with neither (pairwise mode collects no scores) is no outcome."""
    cols = ["item", "output", "contender"]
    settled = outputs.loc[outputs["item"].isin(prefs["item"]), ["item", "id", "contender"]]
    left = (
        settled.rename(columns={"id": "output"})
        .merge(outq[["output", "quality"]], on="output", how="left")[[*cols, "quality"]]
        .astype({"quality": float})
    )
    pairs = left.merge(left, on="item", suffixes=("_a", "_b"))
    pairs = pairs[pairs["contender_a"].map(order) < pairs["contender_b"].map(order)]
    qa, qb = pairs["quality_a"].round(9), pairs["quality_b"].round(9)
    by_score = np.where(qa > qb, 1.0, np.where(qa < qb, 0.0, 0.5))
    by_score = np.where(qa.isna() | qb.isna(), np.nan, by_score)
    pref = pairs["item"].map(dict(zip(prefs["item"], prefs["preference"], strict=True)))
    pref = pref.where(pref.notna(), "")
    pref = pref.astype(str)
    tie = pref.isin(["tie", "both_bad"])
    wins_a = pref == pairs["output_a"].astype(str)
    wins_b = pref == pairs["output_b"].astype(str)
    explicit = (tie | wins_a | wins_b).to_numpy()
    score = np.where(wins_a, 1.0, np.where(wins_b, 0.0, np.where(tie, 0.5, by_score)))
    decided = ~np.isnan(score)
    battles = pd.DataFrame(
        {
            "item": pairs["item"].to_numpy()[decided],
            "a": pairs["contender_a"].to_numpy()[decided],
            "b": pairs["contender_b"].to_numpy()[decided],
            "score": score[decided],
        }
    )
    return battles.sort_values(["item", "a", "b"]).reset_index(drop=True), {
        "preference": int(explicit.sum()),
        "scores": int((decided & ~explicit).sum()),
    }


def _position_bias(f: CampaignFrames, rubric: list[dict]) -> dict:
    reviews = f.reviews
    explicit = reviews[(reviews["preference"] == "output") & reviews["preferred_output"].notna()]
    explicit = explicit[
        explicit["presented_order"].map(lambda o: isinstance(o, list) and len(o) >= 2)
    ]
    if len(explicit):
        first = explicit["presented_order"].map(lambda o: int(o[0]))
        won = (explicit["preferred_output"].astype(int) == first).to_numpy()
        return bias.position_bias(
            won, explicit["presented_order"].map(len).to_numpy(), source="preferences"
        )
    # Rubric-only campaigns: the output a reviewer scored strictly best, by its overall score.
    s = f.scores[f.scores["value"].notna()]
    if s.empty:
        return bias.position_bias([], [], source="scores")
    norm = s.assign(q=quality.normalize(s["value"], s["dimension"], rubric))
    overall = norm.groupby(["review", "output"], sort=True)["q"].mean().round(9).reset_index()
    best = overall.groupby("review")["q"].transform("max")
    top = overall[overall["q"] == best]
    counts = top.groupby("review")["output"].agg(["size", "first"])
    strict = counts[counts["size"] == 1]
    order = dict(zip(reviews["id"], reviews["presented_order"], strict=True))
    won, n_opts = [], []
    for review, output in zip(strict.index, strict["first"], strict=True):
        shown = order.get(review) or []
        if len(shown) >= 2:
            won.append(int(shown[0]) == int(output))
            n_opts.append(len(shown))
    return bias.position_bias(won, n_opts, source="scores")


def check_scores(generations: pd.DataFrame) -> pd.DataFrame:
    """Per done generation with automatic checks: the share of its checks that passed."""
    done = generations[generations["status"] == Generation.Status.DONE]

    def share(results):
        if not isinstance(results, dict) or not results:
            return np.nan
        return sum(bool((r or {}).get("passed")) for r in results.values()) / len(results)

    scored = done.assign(quality=done["check_results"].map(share))
    return scored.loc[scored["quality"].notna(), ["contender", "task", "sample", "quality"]]


def _stability(sample_q: pd.DataFrame, gens: pd.DataFrame, names: list, warnings: list) -> dict:
    """Stability from human final quality where a task has >= 2 human-scored samples; for a
    contender without any, from the automatic checks' pass share of all its samples."""
    human = stability.contender_stability(sample_q)
    checks = stability.contender_stability(check_scores(gens)) if "check_results" in gens else {}
    out = {}
    for name in names:
        h, c = human.get(name, {}), checks.get(name, {})
        if h.get("stability") is not None:
            out[name] = {**h, "source": "human"}
        elif c.get("stability") is not None:
            out[name] = {**c, "source": "checks"}
        else:
            out[name] = {"stability": None, "n_tasks": 0, "source": None}
    if any(v["source"] == "checks" for v in out.values()):
        warnings.append(
            "stability: people scored fewer than two samples of a task, so stability is measured "
            "on the automatic checks (the share of each task's samples that pass); review two or "
            "more samples per task (reviewed_samples) to measure it on people's scores"
        )
    if all(v["stability"] is None for v in out.values()):
        warnings.append(
            "stability: not measured: it needs two or more samples of a task scored by people "
            "(reviewed_samples of 2 or more) or by automatic checks"
        )
    return out


def _preference_agreement(
    f: CampaignFrames, outputs: pd.DataFrame, *, n_boot: int, seed: int
) -> dict:
    r = f.reviews[f.reviews["preference"].isin(["output", "tie", "both_bad"])]
    contender_of = dict(zip(outputs["id"], outputs["contender"], strict=True))
    choice = r["preferred_output"].map(lambda o: contender_of.get(int(o)) if pd.notna(o) else None)
    choice = choice.where(r["preference"] == "output", r["preference"])
    ratings = pd.DataFrame({"unit": r["item"], "coder": r["reviewer"], "value": choice})
    ratings["value"] = agreement.categorical_codes(ratings["value"])
    return agreement.krippendorff_alpha(ratings, "nominal", n_boot=n_boot, seed=seed, numeric=False)


def build_report(f: CampaignFrames, meta: dict, *, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    rubric = meta["rubric"]
    weights = meta["weights"]
    w_quality = float(weights.get("quality", 0.7))
    w_stability = float(weights.get("stability", 0.3))
    category_weights = {str(k): float(v) for k, v in (weights.get("categories") or {}).items()}
    names = f.contenders["name"].tolist()
    order = {n: i for i, n in enumerate(names)}
    warnings: list[str] = []
    outputs = _output_table(f)
    labels = dict(zip(f.tasks["id"], f.tasks["external_id"], strict=True))

    # Progress
    states = f.items["state"].value_counts()
    settled = int(sum(states.get(s, 0) for s in ("agreed", "disputed", "resolved")))
    ever_disputed = int(states.get("disputed", 0) + states.get("resolved", 0))
    ready = int(f.items["ready"].sum()) if len(f.items) else 0
    progress = {
        "items": int(len(f.items)),
        "ready": ready,
        "reviews_done": int(len(f.reviews)),
        "reviews_needed": ready * meta["overlap"],
        "settled": settled,
        "agreed": int(states.get("agreed", 0)),
        "disputed": int(states.get("disputed", 0)),
        "resolved": int(states.get("resolved", 0)),
        "open": int(states.get("open", 0)),
        "dispute_rate": ever_disputed / settled if settled else None,
        "generations": {
            k: int(v) for k, v in sorted(f.generations["status"].value_counts().items())
        },
    }

    # Agreement on raw reviews (before arbitration): unit = one output on one dimension.
    raw = f.scores.merge(
        f.reviews[["id", "reviewer"]].rename(columns={"id": "review"}), on="review", how="inner"
    )
    agreement_out = {}
    for dim in rubric:
        key = dim["key"]
        ratings = raw.loc[raw["dimension"] == key, ["output", "reviewer", "value"]]
        ratings = ratings.rename(columns={"output": "unit", "reviewer": "coder"})
        level = dim.get("level", "ordinal")
        if level not in agreement.LEVELS:
            agreement_out[key] = {
                "alpha": None,
                "level": level,
                "reason": f"unknown level of measurement {level!r}",
            }
            continue
        agreement_out[key] = agreement.krippendorff_alpha(ratings, level, n_boot=n_boot, seed=seed)
    pref_agreement = _preference_agreement(f, outputs, n_boot=n_boot, seed=seed)

    # Final outcomes -> quality, battles
    final_scores, final_prefs, final_full = final_outcomes(f, outputs)
    outq = quality.output_quality(final_full, rubric)
    dims = quality.dimension_scores(final_full, rubric)
    weighted = quality.weighted_quality(outq, category_weights)
    by_category = (
        quality.summary_by(outq, "quality", ["contender", "category"]) if len(outq) else {}
    )
    by_tier = quality.summary_by(outq, "quality", ["contender", "tier"]) if len(outq) else {}

    battles, sources = _battles(outputs, outq, final_prefs, order)
    bt = bradley_terry.bradley_terry(battles, names, n_boot=n_boot, seed=seed)
    if bt["reason"]:
        warnings.append(f"ratings: {bt['reason']}")
    if bt["unrated"]:
        left_out = [u["contender"] for u in bt["unrated"]]
        one = len(left_out) == 1
        warnings.append(
            f"ratings: {', '.join(left_out)} {'has' if one else 'have'} no comparisons (none of "
            f"{'its' if one else 'their'} outputs was compared in an item with a final outcome), "
            f"so {'it is' if one else 'they are'} left out of the ratings; the others are rated "
            "among themselves"
        )
    if bt["ridge"]:
        parts = [f"{', '.join(bt['undefeated'])} never lost"] if bt["undefeated"] else []
        parts += [f"{', '.join(bt['winless'])} never won"] if bt["winless"] else []
        who = "; ".join(parts) or "a group of contenders never lost (or never won) against the rest"
        warnings.append(
            f"ratings: {who}, so the plain estimate would be infinite; a ridge penalty of "
            f"{bt['ridge']} keeps ratings finite (read them as 'far above/below', not as exact)"
        )

    # Stability and pass@k over samples
    sample_q = (
        outq.groupby(["contender", "task", "sample"], sort=True)["quality"].mean().reset_index()
    )
    gens = f.generations.copy()
    gens["contender"] = gens["contender"].map(
        dict(zip(f.contenders["id"], f.contenders["name"], strict=True))
    )
    stab = _stability(sample_q, gens, names, warnings)
    gen_quality = outq.groupby("generation")["quality"].mean()
    finished = gens[gens["status"].isin([Generation.Status.DONE, Generation.Status.FAILED])].copy()
    human = finished["id"].map(gen_quality)
    finished["passed"] = (
        (finished["status"] == Generation.Status.DONE)
        & (finished["checks_passed"].map(lambda v: v is not False))
        & (human.isna() | (human >= meta["pass_threshold"] - 1e-12))
    )
    passes = stability.contender_pass(
        finished[["contender", "task", "passed"]], meta["samples_per_task"]
    )

    # Cost and latency
    done = gens[gens["status"] == Generation.Status.DONE].copy()
    prices = f.contenders.set_index("name")
    done["price_in"] = done["contender"].map(prices["price_in"])
    done["price_out"] = done["contender"].map(prices["price_out"])
    done["answer_cost"] = costs.answer_costs(done) if len(done) else pd.Series(dtype=float)
    cost_lat = costs.cost_latency(done)
    normalized, cost_reason = costs.normalized_costs(
        {c: cost_lat.get(c, {}).get("cost_per_task") for c in names}
    )
    if cost_reason:
        warnings.append(f"cost: {cost_reason}")

    # One formula for every contender, so their decision scores compare: where any of them
    # lacks stability, the stability term is left out for all.
    lacking = [n for n in names if stab.get(n, {}).get("stability") is None]
    formula = "(w_quality * quality + w_stability * stability) / normalized_cost"
    if lacking:
        formula = "quality / normalized_cost"
        if len(lacking) < len(names):
            warnings.append(
                f"decision score: no stability for {', '.join(lacking)}, so every contender's "
                "decision score is quality / normalized cost, without the stability term"
            )
    leaderboard = []
    for name in names:
        rec = bt["record"][name]
        q = weighted.get(name, {})
        st = stab.get(name, {})
        ps = passes.get(name, {})
        cl = cost_lat.get(name, {})
        decision = costs.decision_score(
            q.get("quality"),
            None if lacking else st.get("stability"),
            normalized.get(name),
            w_quality,
            w_stability,
        )
        leaderboard.append(
            {
                "contender": name,
                "rating": bt["ratings"][name],
                "ci95": bt["ci95"][name],
                "rank": bt["rank"][name],
                "wins": rec["wins"],
                "losses": rec["losses"],
                "ties": rec["ties"],
                "scores": {
                    d["key"]: {k: v for k, v in dims[(name, d["key"])].items()}
                    if (name, d["key"]) in dims
                    else {"mean": None, "ci95": None, "n_tasks": 0}
                    for d in rubric
                },
                "stability_source": st.get("source"),
                "quality": q.get("quality"),
                "quality_ci95": q.get("ci95"),
                "stability": st.get("stability"),
                "pass_at_1": ps.get("pass_at_1"),
                "pass_at_k": ps.get("pass_at_k"),
                "pass_hat_k": ps.get("pass_hat_k"),
                "k": meta["samples_per_task"],
                "cost_per_task": cl.get("cost_per_task"),
                "normalized_cost": normalized.get(name),
                "latency_ms": cl.get("latency_ms"),
                "ttft_ms": cl.get("ttft_ms"),
                "decision_score": decision,
            }
        )

    def sort_key(row):
        r, qv = row["rating"], row["quality"]
        return (r is None, -(r or 0.0), qv is None, -(qv or 0.0), row["contender"])

    leaderboard.sort(key=sort_key)

    # Disputes: items per reason part (only reasons that disputed the item)
    reason_counts: dict[str, int] = {}
    for reasons in f.items["dispute_reasons"]:
        parts = {r.get("part", "?") for r in (reasons or []) if r.get("disputes", True)}
        for part in parts:
            reason_counts[part] = reason_counts.get(part, 0) + 1

    task_q = outq.groupby(["task", "contender"], sort=True)["quality"].mean().reset_index()
    wide = head_to_head.task_table(task_q)
    h2h = [
        head_to_head.head_to_head_wide(wide, a, b, labels=labels, limit=10)
        for a, b in combinations(names, 2)
    ]

    final_for_reviewers = final_scores
    report = {
        "campaign": meta["slug"],
        "name": meta["name"],
        "settings": {
            "mode": meta["mode"],
            "samples_per_task": meta["samples_per_task"],
            "reviewed_samples": meta["reviewed_samples"],
            "overlap": meta["overlap"],
            "pass_threshold": meta["pass_threshold"],
        },
        "contenders": names,
        "progress": progress,
        "agreement": agreement_out,
        "preference_agreement": pref_agreement,
        "leaderboard": leaderboard,
        "rating": {
            "method": "bradley-terry (elo scale, mean 1000)",
            "n_battles": bt["n_battles"],
            "n_items": bt["n_items"],
            "sources": sources,
            "ridge": bt["ridge"],
            "undefeated": bt["undefeated"],
            "winless": bt["winless"],
            "components": bt["components"],
            "unrated": bt["unrated"],
            "reason": bt["reason"],
            "bootstrap": bt["bootstrap"],
        },
        "quality": {
            "weights": {
                c: category_weights.get(c, 1.0) for c in sorted(f.tasks["category"].unique())
            },
            "by_category": _nest(by_category),
            "by_tier": _nest(by_tier),
        },
        "stability": {
            name: {
                **stab[name],
                **{
                    k: passes.get(name, {}).get(k) for k in ("pass_at_1", "pass_at_k", "pass_hat_k")
                },
                "k": meta["samples_per_task"],
            }
            for name in names
        },
        "position_bias": _position_bias(f, rubric),
        "reviewers": reviewers.reviewer_figures(
            raw[["reviewer", "output", "dimension", "value"]],
            f.reviews[["reviewer", "seconds"]],
            final_for_reviewers,
        ),
        "disputes": {
            "disputed_items": ever_disputed,
            "rate": progress["dispute_rate"],
            "reasons": dict(sorted(reason_counts.items())),
        },
        "head_to_head": h2h,
        "decision": {
            "w_quality": w_quality,
            "w_stability": w_stability,
            "formula": formula,
        },
        "warnings": warnings,
    }
    if not settled:
        warnings.append(
            "final outcomes: no item has a final outcome yet (agreed, or resolved by an "
            "arbiter), so ratings, quality, head-to-head and reviewer offsets wait for one"
        )
    return clean(report)


def _nest(flat: dict) -> dict:
    out: dict = {}
    for (contender, group), value in sorted(
        flat.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))
    ):
        out.setdefault(contender, {})[str(group)] = value
    return out
