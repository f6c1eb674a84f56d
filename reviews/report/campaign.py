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
from dataclasses import dataclass

import pandas as pd
from django.db.models.functions import Length

from reviews.identity_reports.selectors import blinding_report
from reviews.judges.calibration import campaign_judges
from reviews.judges.policy_start import policy_state
from reviews.models import ItemOutput, Review, ReviewItem, Score
from reviews.report.basis import BASES, basis_apply, frames_of_basis, outcome_basis
from reviews.report.build import build_report as _build
from reviews.report.outcomes import output_quality_frame
from reviews.stats import head_to_head
from reviews.stats.rounding import clean
from tasks.generation.served import served_models
from tasks.models import Campaign, Generation, Task

SEED = 20261130
# Items an admin dropped (reported as revealing their model) are in no figure.
DROPPED = ReviewItem.State.DROPPED
N_BOOT = 1000


@dataclass
class CampaignFrames:
    """Plain frames of one campaign. Ids are the database's; names only in ``contenders``.

    contenders: id, name, price_in, price_out (per million tokens), pricing (the price table),
                params (whose seed matters)
    tasks: id, external_id, category, tier, case_type, tools (how many), turns (how many),
           single_turn (has a single-turn statement)
    generations: id, task, contender, sample, status, cost, input_tokens, output_tokens,
                 latency_ms, ttft_ms, checks_passed, check_results ({check: {"passed": bool}}),
                 single_turn (the single-turn regime's row), transcript (list of turns),
                 tokens_per_s, reasoning_tokens, cache_read_tokens, cache_write_tokens,
                 reasoning_cost, output_chars (length of the answer in characters)
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
        # a number, or {tier: threshold} (tasks/campaigns/thresholds.py)
        "pass_threshold": (campaign.weights or {}).get("pass_thresholds")
        or float(campaign.pass_threshold),
        "min_quality": (campaign.weights or {}).get("min_quality"),
        "samples_per_task": int(campaign.samples_per_task),
        "reviewed_samples": int(campaign.reviewed_samples),
        "overlap": int(campaign.overlap),
        # {"dimension", "min", "max"} or None: per-turn human scores for the turn curve
        "score_turns": campaign.score_turns or None,
    }


def _frame(rows, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(list(rows), columns=columns)


def campaign_frames(campaign: Campaign) -> CampaignFrames:
    """Seven bulk reads, no per-row queries."""
    return CampaignFrames(
        _contenders_frame(campaign),
        _tasks_frame(campaign),
        _generations_frame(campaign),
        _items_frame(campaign),
        _outputs_frame(campaign),
        _reviews_frame(campaign),
        _scores_frame(campaign),
    )


def _contenders_frame(campaign: Campaign) -> pd.DataFrame:
    contenders = _frame(
        campaign.contenders.order_by("name").values_list(
            "id", "name", "price_in_per_mtok", "price_out_per_mtok", "pricing", "params"
        ),
        ["id", "name", "price_in", "price_out", "pricing", "params"],
    )
    contenders["price_in"] = contenders["price_in"].astype(float)
    contenders["price_out"] = contenders["price_out"].astype(float)
    return contenders


def _tasks_frame(campaign: Campaign) -> pd.DataFrame:
    keys = list((campaign.weights or {}).get("slice_by") or [])
    columns = [
        "id",
        "external_id",
        "category",
        "tier",
        "case_type",
        "tools",
        "turns",
        "single_turn",
    ]
    tasks = _frame(
        Task.objects.filter(testset_id=campaign.testset_id)
        .order_by("id")
        .values_list(*columns, *(["metadata"] if keys else [])),
        columns + (["metadata"] if keys else []),
    )
    # The metadata keys the campaign slices by, one column each ("meta:<key>"; a value is
    # read as text, so 3 and "3" are one slice); the rest of the metadata is not read.
    for key in keys:
        tasks[f"meta:{key}"] = tasks["metadata"].map(
            lambda m, key=key: (
                None if not isinstance(m, dict) or m.get(key) is None else str(m[key])
            )
        )
    tasks = tasks.drop(columns=["metadata"], errors="ignore")
    # How many tools and turns, whether a single-turn statement exists: what the tools and
    # conversation sections need to know of a task (not the schemas and messages themselves).
    tasks["tools"] = tasks["tools"].map(lambda v: len(v) if isinstance(v, list) else 0)
    tasks["turns"] = tasks["turns"].map(lambda v: len(v) if isinstance(v, list) else 0)
    tasks["single_turn"] = tasks["single_turn"].map(bool)
    return tasks


def _generations_frame(campaign: Campaign) -> pd.DataFrame:
    generations = _frame(
        Generation.objects.filter(campaign=campaign)
        .annotate(output_chars=Length("output"))
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
            "single_turn",
            "transcript",
            "tokens_per_s",
            "reasoning_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_cost",
            "output_chars",
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
            "single_turn",
            "transcript",
            "tokens_per_s",
            "reasoning_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_cost",
            "output_chars",
        ],
    )
    for col in (
        "cost",
        "input_tokens",
        "output_tokens",
        "latency_ms",
        "ttft_ms",
        "tokens_per_s",
        "reasoning_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_cost",
        "output_chars",
    ):
        generations[col] = pd.to_numeric(generations[col], errors="coerce").astype(float)
    return generations


def _items_frame(campaign: Campaign) -> pd.DataFrame:
    return _frame(
        ReviewItem.objects.filter(campaign=campaign)
        .exclude(state=DROPPED)
        .order_by("id")
        .values_list(
            "id", "task_id", "sample_index", "state", "ready", "final", "dispute_reasons", "source"
        ),
        ["id", "task", "sample", "state", "ready", "final", "dispute_reasons", "source"],
    )


def _outputs_frame(campaign: Campaign) -> pd.DataFrame:
    return _frame(
        ItemOutput.objects.filter(item__campaign=campaign)
        .exclude(item__state=DROPPED)
        .order_by("id")
        .values_list("id", "item_id", "generation_id"),
        ["id", "item", "generation"],
    )


def _reviews_frame(campaign: Campaign) -> pd.DataFrame:
    return _frame(
        Review.objects.filter(item__campaign=campaign)
        .exclude(item__state=DROPPED)
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


def _scores_frame(campaign: Campaign) -> pd.DataFrame:
    scores = _frame(
        Score.objects.filter(review__item__campaign=campaign)
        .exclude(review__item__state=DROPPED)
        .order_by("id")
        .values_list("review_id", "output_id", "dimension", "value"),
        ["review", "output", "dimension", "value"],
    )
    scores["value"] = scores["value"].astype(float)
    return scores


def campaign_report(*, campaign: Campaign, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """The report dict for one campaign. Shape (every figure may be null with a reason):

    ``campaign`` slug; ``name``; ``settings`` (mode, samples, overlap, weights, pass threshold);
    ``progress`` {items, ready, reviews_done, reviews_needed, settled, settled_by_judge,
    judging, agreed, disputed, resolved, open, dispute_rate, generations {status: n}};
    ``agreement`` {dimension: {alpha, level, ci95, ci_reason, band (judged on ci95), ac1|ac2,
    ac1_ci95|ac2_ci95, note, n_units, n_items, small_sample, n_ratings, exact, within_one,
    reason}}; ``preference_agreement`` (same shape, nominal);
    ``leaderboard`` [ {contender, rating, rating_bound, ci95 (an open side null), rank,
    rank_ci95, p_best, n_cases, wins, losses, ties, scores {dimension: {mean, ci95, n_tasks,
    reason, small_sample}}, quality, quality_ci95, quality_n, quality_reason, small_sample,
    stability, stability_ci95, sampling_sd, pass_at_1, pass_at_k, pass_hat_k (of pass_basis),
    pass_basis, pending, k, cost_per_task, normalized_cost, latency_ms {p50, p95}, ttft_ms
    {p50, p95}, decision_score, decision_ci95, decision_reason, decision_rank, below_floor,
    pareto, stability_source, rating_ci_reason, cost_reason, gates_pass, gates_failed,
    rating_length_controlled, rating_length_controlled_ci95} ] ordered by rating (then
    quality, then name);
    ``rating`` {method, n_battles, n_items, n_cases, sources {preference, scores}, ridge,
    undefeated, winless, components, unrated, reason, ci_reason, rank_rule, bootstrap};
    ``quality`` {weights, by_category, by_tier, by_case_type {contender: {group: {mean, ci95,
    n_tasks, reason, small_sample}}}};
    ``stability`` {contender: {stability, stability_ci95, sampling_sd, sampling_sd_ci95,
    n_tasks, source ("human"|"checks"|null), pass_at_1, pass_at_k, pass_hat_k, pass_basis,
    pending, k}};
    ``passes`` {contender: {human|checks|combined: {pass_at_1, ci95, pass_at_k, pass_hat_k,
    curve [{k, pass_at_k, pass_hat_k, n_tasks}], n_samples, n_tasks}, pass_at_1 {basis: ..},
    pass_at_k, pass_hat_k, pending, headline, by_tier {tier: {threshold, basis: rate}}}};
    ``rates`` {contender: {checks {kind: rate}, flags {flag: rate}, by_tier, by_case_type}}
    (a rate = {rate, ci95 (Wilson), n, small_sample});
    ``position_bias`` {first_position_win_rate, ci95, n, expected, p_value, source, reason};
    ``reviewers`` {username: {reviews, median_seconds, mean_offset, mean_offset_ci95,
    offset_n_cases, mean_abs_offset, agreement_exact, agreement_within_one, n_compared}};
    ``disputes`` {disputed_items, rate, ci95, n_items, n_cases, small_sample, reasons};
    ``head_to_head`` [ {a, b, n_tasks, mean_diff (b - a), ci95, wins, losses, ties, p_value,
    p_holm, regressions [{task, diff}], improvements, reason, battles {n_tasks, win_rate (b's),
    ci95, wins, losses, ties, p_value}, battles_p_holm} ] for every pair of contenders;
    ``separation`` {a, b, n_tasks, observed_diff, sd_diff, mdd, n_needed, basis} | null;
    ``decision`` {w_quality, w_stability, formula, min_quality, pareto_front, free,
    cost_reason}; ``bootstrap`` {rounds, seed, unit, min_items, small_sample_below};
    ``tools`` {contender: {tool_call_accuracy, invalid_call_rate, unmocked_call_rate,
    error_recovery_rate (rates), mean_steps, mean_steps_ci95, completion_ms {p50, p95},
    n_samples, n_tasks, n_calls}} | null without tool tasks;
    ``conversation`` {contender: {basis, basis_reason, turn_curve [{turn, mean, ci95, n,
    reason, small_sample}], decay {value, ci95, n, first_turn, last_turn, reason},
    single_vs_multi {single, multi, gap, ci95, n, aptitude, unreliability, ...} | null,
    n_tasks}} | null without tasks with turns;
    ``usage`` {contender: {tokens_per_s {p50, p95} (output tokens per second while the
    answers streamed), n_timed, reasoning_tokens, cache_read_tokens, cache_write_tokens
    (totals, null when never reported), reasoning_cost_per_task, prices {source ("definition"
    or the price data and its version), matched {provider, model}, price_in_per_mtok,
    price_out_per_mtok, cache_read_per_mtok, cache_write_per_mtok, reasoning_per_mtok, tiers
    [{above_input_tokens, ...rates}]}}};
    ``gates`` {contender: {pass, failed [{gate, value, ci95, limit, certain}]}} (limits and
    their source in ``decision.gates``);
    ``slices`` {metadata key: {value: {contender: {quality, pass_at_1, n_tasks}}}};
    ``length`` {contenders {contender: {chars {mean, p50, p95, n}, rating, rating_controlled,
    rating_controlled_ci95}}, coefficient {value, ci95, reason, meaning}, n_battles, reason};
    ``flaky_tasks`` {contender: [task ids whose samples disagree]};
    ``warnings`` [str];
    ``served_models`` {contender: {served model id: outputs}};
    ``judges`` {judge: {items, judgements, failed, cost, basis, dimensions {dimension: {n,
    judge_vs_panel, reviewer_vs_panel, advantage, epsilon, bias, exact, within_one, confusion,
    verdict, reason, ...}}, preference {n, agreement, position_consistency, verdict, reason,
    ...} | null}} (reviews/judges/calibration.py).
    ``basis`` {outcomes ("human"|"judge"|"mixed"|null), items {human, judge}, figures
    [section], figures_basis (the basis of the report's own figures: people's on a mixed
    basis), by_basis {human|judge: {section: ...}} (mixed only: each figure apart)} (also
    ``basis`` in each leaderboard row, ``outcome_basis`` in rating and quality:
    reviews/report/basis.py); ``review_policy`` (reviews/policy/selectors.py) | null;
    ``blinding`` {reports, held, probe_every, probe {contender: {guesses, correct, chance,
    bang_index {value, ci95}, reason}}}.
    """
    frames = campaign_frames(campaign)
    meta = campaign_meta(campaign)
    report = build_report(frames, meta, n_boot=n_boot, seed=seed)
    # Whose final outcomes the figures rest on: people's, a review policy's judge's, or both;
    # on both, each figure is computed apart on each basis, never pooled.
    counts = outcome_basis(frames.items)
    apart = None
    if counts["basis"] == "mixed":
        apart = {
            basis: build_report(frames_of_basis(frames, basis), meta, n_boot=n_boot, seed=seed)
            for basis in BASES
        }
    basis_apply(report, counts, apart)
    report["review_policy"] = policy_state(campaign=campaign)
    # {contender: {served model id: outputs}}: what the endpoints really answered with.
    report["served_models"] = served_models(campaign_id=campaign.pk)
    # {judge: progress, cost and calibration against the panel}: the judges' figures, apart
    # from the people's (docs/judges.md).
    report["judges"] = clean(campaign_judges(campaign=campaign, n_boot=n_boot, seed=seed))
    # {"reports", "held", "probe_every", "probe": {contender: {guesses, correct, chance,
    # bang_index {value, ci95}, reason}}}: whether blinding held (reviews.blinding_probe).
    report["blinding"] = clean(blinding_report(campaign=campaign))
    return report


def report_json(report: dict) -> str:
    return json.dumps(clean(report), indent=2, ensure_ascii=False, allow_nan=False)


def campaign_head_to_head(*, campaign: Campaign, a: str, b: str, limit: int | None = None) -> dict:
    """Head-to-head of contender ``b`` against ``a`` (names): paired per-task quality
    differences, the exact sign test and every task where b regressed (``limit`` caps lists)."""
    f = campaign_frames(campaign)
    outq = output_quality_frame(f, campaign_meta(campaign))
    task_q = outq.groupby(["task", "contender"], sort=True)["quality"].mean().reset_index()
    labels = dict(zip(f.tasks["id"], f.tasks["external_id"], strict=True))
    return clean(head_to_head.head_to_head(task_q, a, b, labels=labels, limit=limit))


def build_report(f: CampaignFrames, meta: dict, *, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """Pure: frames in, report dict out (see ``report_build``), cleaned for JSON."""
    return clean(_build(f, meta, n_boot=n_boot, seed=seed))
