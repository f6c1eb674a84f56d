"""pass@k, stability, Wilson interval, sign test, quality and costs against published values."""

import math

import numpy as np
import pandas as pd
import pytest

from reviews.stats import bias, costs, head_to_head, quality, reviewers, stability


def test_pass_at_k_matches_the_reference():
    assert stability.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert stability.pass_at_k(10, 3, 5) == pytest.approx(0.9167, abs=5e-5)
    assert stability.pass_hat_k(10, 3, 2) == pytest.approx(0.0667, abs=5e-5)
    assert stability.pass_at_k(10, 10, 3) == 1.0
    assert stability.pass_at_k(10, 0, 3) == 0.0
    with pytest.raises(ValueError):
        stability.pass_at_k(2, 1, 3)


def test_stability_matches_the_reference():
    assert stability.stability([0.80, 0.85, 0.75, 0.80]) == pytest.approx(0.9558, abs=5e-5)


def test_stability_of_a_zero_mean_is_defined():
    assert stability.stability([0.0, 0.0, 0.0]) == 1.0  # consistently zero: perfectly stable
    assert stability.stability([-1.0, 1.0]) == 0.0  # spread around zero: CV unbounded
    assert stability.stability([0.1, 0.9]) == pytest.approx(0.2)  # std 0.4 / mean 0.5
    assert stability.stability([0.5]) is None  # one sample says nothing about stability


def test_stability_is_clipped_to_zero():
    assert stability.stability([0.0, 0.0, 0.0, 1.0]) == 0.0  # CV = sqrt(3) > 1


def test_contender_stability_averages_per_task_values():
    rows = [("x", 1, s, q) for s, q in enumerate([0.80, 0.85, 0.75, 0.80])]
    rows += [("x", 2, s, q) for s, q in enumerate([0.0, 0.0])]
    rows += [("x", 3, 0, 0.5)]  # a single sample: left out
    rows += [("y", 1, 0, 0.5)]
    result = stability.contender_stability(
        pd.DataFrame(rows, columns=["contender", "task", "sample", "quality"])
    )
    assert result["x"]["stability"] == pytest.approx((0.95581 + 1.0) / 2, abs=5e-5)
    assert result["x"]["n_tasks"] == 2
    assert result["y"] == {"stability": None, "n_tasks": 0}


def test_contender_pass_averages_the_unbiased_estimator_over_tasks():
    rows = [("x", 1, i < 3) for i in range(10)] + [("x", 2, True) for _ in range(10)]
    result = stability.contender_pass(
        pd.DataFrame(rows, columns=["contender", "task", "passed"]), 5
    )
    assert result["x"]["pass_at_1"] == pytest.approx((0.3 + 1.0) / 2)
    assert result["x"]["pass_at_k"] == pytest.approx((0.916667 + 1.0) / 2, abs=1e-6)
    assert result["x"]["pass_hat_k"] == pytest.approx((0.0 + 1.0) / 2)


def test_wilson_matches_newcombes_example():
    # Newcombe (1998), example 81/263: Wilson score interval 0.2553 to 0.3662.
    lo, hi = bias.wilson(81, 263)
    assert lo == pytest.approx(0.2553, abs=5e-5)
    assert hi == pytest.approx(0.3662, abs=5e-5)
    assert bias.wilson(0, 0) is None
    lo, hi = bias.wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=5e-5)  # Newcombe's 0/10 example


def test_a_win_rate_near_half_is_known_to_about_ten_points_with_100_items():
    # Small test sets: with 100 items about +-9.8 points (95%), with 300 +-5.7 (the
    # normal approximation; Wilson's interval is a little narrower at 50%: 9.6 and 5.6).
    for wins, n, half in ((50, 100, 0.098), (150, 300, 0.057)):
        lo, hi = bias.wilson(wins, n)
        assert (lo + hi) / 2 == pytest.approx(0.5)
        assert (hi - lo) / 2 == pytest.approx(half, abs=0.0025)


def test_position_bias_reports_the_rate_against_chance():
    result = bias.position_bias([True] * 81 + [False] * 182, [2] * 263, source="preferences")
    assert result["first_position_win_rate"] == pytest.approx(81 / 263)
    assert result["n"] == 263 and result["expected"] == 0.5
    assert result["p_value"] < 0.001
    empty = bias.position_bias([], [], source="scores")
    assert empty["first_position_win_rate"] is None and empty["reason"]


def test_sign_test_matches_the_reference():
    assert head_to_head.sign_test(60, 40) == pytest.approx(0.057, abs=5e-4)
    assert head_to_head.sign_test(0, 0) is None


def test_head_to_head_lists_regressions():
    rows = [(t, "old", 0.5) for t in range(1, 6)] + [
        (1, "new", 0.9),
        (2, "new", 0.2),
        (3, "new", 0.5),
        (4, "new", 0.4),
        (5, "new", 0.6),
    ]
    frame = pd.DataFrame(rows, columns=["task", "contender", "quality"])
    result = head_to_head.head_to_head(
        frame, "old", "new", labels={t: f"T-{t}" for t in range(1, 6)}
    )
    assert (result["wins"], result["losses"], result["ties"]) == (2, 2, 1)
    assert [r["task"] for r in result["regressions"]] == ["T-2", "T-4"]
    assert [r["task"] for r in result["improvements"]] == ["T-1", "T-5"]
    assert result["p_value"] == pytest.approx(1.0)
    assert result["mean_diff"] == pytest.approx((0.4 - 0.3 + 0 - 0.1 + 0.1) / 5)
    missing = head_to_head.head_to_head(frame, "old", "ghost")
    assert missing["reason"] and missing["n_tasks"] == 0
    empty = head_to_head.head_to_head(frame.iloc[:0], "old", "new")
    assert empty["reason"] and empty["p_value"] is None


RUBRIC = [
    {"key": "accuracy", "min": 1, "max": 5},
    {"key": "errors", "min": 0, "max": 10, "direction": "lower"},
]


def test_normalize_respects_range_and_direction():
    values = pd.Series([1.0, 5.0, 3.0, 0.0, 10.0, 2.5])
    dims = pd.Series(["accuracy"] * 3 + ["errors"] * 3)
    assert quality.normalize(values, dims, RUBRIC).tolist() == [0.0, 1.0, 0.5, 1.0, 0.0, 0.75]


def test_output_quality_skips_na_and_weighted_quality_weights_categories():
    rows = [
        # output 1 (x, task 1, cat a): accuracy 5 -> 1.0, errors N/A -> quality 1.0
        (1, "x", 1, "a", "accuracy", 5.0),
        (1, "x", 1, "a", "errors", np.nan),
        # output 2 (x, task 2, cat b): accuracy 1 -> 0, errors 0 -> 1 -> quality 0.5
        (2, "x", 2, "b", "accuracy", 1.0),
        (2, "x", 2, "b", "errors", 0.0),
    ]
    final = pd.DataFrame(
        rows, columns=["output", "contender", "task", "category", "dimension", "value"]
    )
    outq = quality.output_quality(final, RUBRIC)
    assert outq.sort_values("output")["quality"].tolist() == [1.0, 0.5]
    weighted = quality.weighted_quality(outq, {"a": 3})
    assert weighted["x"]["quality"] == pytest.approx((3 * 1.0 + 1 * 0.5) / 4)


def test_mean_ci_is_a_t_interval():
    mean, (lo, hi) = quality.mean_ci([1.0, 2.0, 3.0, 4.0])
    half = 3.182446305284263 * np.std([1, 2, 3, 4], ddof=1) / 2  # t(0.975, 3)
    assert mean == 2.5 and lo == pytest.approx(2.5 - half) and hi == pytest.approx(2.5 + half)
    assert quality.mean_ci([7.0]) == (7.0, None)
    assert quality.mean_ci([]) == (None, None)


def test_an_interval_never_runs_past_what_the_quantity_can_be():
    # two tasks, qualities 0 and 1: the t interval is 0.5 +- 6.35, the quality is within 0..1
    mean, (lo, hi) = quality.mean_ci([0.0, 1.0])
    assert lo < -5 and hi > 5
    assert quality.mean_ci([0.0, 1.0], (0, 1)) == (0.5, [0, 1])
    outq = pd.DataFrame(
        [("x", t, c, q) for t, c, q in ((1, "a", 0.0), (2, "a", 1.0), (3, "b", 0.9))],
        columns=["contender", "task", "category", "quality"],
    )
    by_category = quality.summary_by(outq, "quality", ["contender", "category"])
    assert by_category[("x", "a")]["ci95"] == [0, 1]
    weighted = quality.weighted_quality(outq, {})
    assert 0 <= weighted["x"]["ci95"][0] <= weighted["x"]["ci95"][1] <= 1


def test_weighted_quality_interval_is_a_t_interval_over_tasks():
    # One category, five tasks: the leaderboard's quality interval is the same t interval as
    # the category's own (t(0.975, 4) = 2.776), not a normal one (1.96) that claims more
    # precision than five tasks give.
    values = [0.2, 0.5, 0.6, 0.9, 0.4]
    outq = pd.DataFrame(
        [("x", task, "a", q) for task, q in enumerate(values)],
        columns=["contender", "task", "category", "quality"],
    )
    weighted = quality.weighted_quality(outq, {})["x"]
    mean, ci = quality.mean_ci(values, (0, 1))
    assert weighted["quality"] == pytest.approx(mean)
    assert weighted["ci95"] == pytest.approx(ci)
    half = 2.7764451051977987 * np.std(values, ddof=1) / math.sqrt(5)
    assert weighted["ci95"] == pytest.approx([0.52 - half, 0.52 + half])
    # two categories of two tasks each: pooled df = 4 - 2 = 2 (t = 4.303)
    two = pd.DataFrame(
        [("x", 1, "a", 0.2), ("x", 2, "a", 0.4), ("x", 3, "b", 0.6), ("x", 4, "b", 1.0)],
        columns=["contender", "task", "category", "quality"],
    )
    result = quality.weighted_quality(two, {})["x"]
    se = math.sqrt(0.25 * 0.02 / 2 + 0.25 * 0.08 / 2)
    assert result["ci95"] == pytest.approx([max(0.55 - 4.302652729911275 * se, 0), 1.0])


def test_costs_normalize_to_the_cheapest_and_weigh_the_decision():
    norm, reason = costs.normalized_costs({"x": 0.002, "y": 0.001, "z": None})
    assert norm == {"x": 2.0, "y": 1.0, "z": None} and reason is None
    assert costs.decision_score(0.8, 0.9, 2.0, 0.7, 0.3) == pytest.approx((0.56 + 0.27) / 2)
    assert costs.decision_score(None, 0.9, 1.0, 0.7, 0.3) is None
    # one free beside paid ones: free = 0, paid against the most expensive
    free, reason = costs.normalized_costs({"x": 0.0, "y": 0.01, "z": 0.04, "w": None})
    assert free == {"x": 0.0, "y": 0.25, "z": 1.0, "w": None} and "most expensive" in reason
    # all free: a ratio means nothing
    assert costs.normalized_costs({"x": 0.0, "y": 0.0}) == (
        {"x": None, "y": None},
        "every contender is free",
    )


def test_cost_from_tokens_when_not_stored():
    gens = pd.DataFrame(
        {
            "cost": [np.nan, 0.5],
            "input_tokens": [1_000_000, 0],
            "output_tokens": [500_000, 0],
            "price_in": [0.15, 1.0],
            "price_out": [0.60, 1.0],
        }
    )
    assert costs.answer_costs(gens).tolist() == pytest.approx([0.15 + 0.30, 0.5])


def test_an_answer_without_token_counts_has_an_unknown_cost_not_zero():
    # The provider reported no usage: the cost is unknown (as generation stores it), so the
    # contender is not "free" and not the cheapest; its cost per task comes from the others.
    gens = pd.DataFrame(
        {
            "contender": "x",
            "task": [1, 1, 2],
            "cost": [np.nan, np.nan, np.nan],
            "input_tokens": [np.nan, 1_000_000, np.nan],
            "output_tokens": [np.nan, np.nan, np.nan],
            "price_in": 2.0,
            "price_out": 8.0,
            "latency_ms": 100.0,
            "ttft_ms": np.nan,
        }
    )
    answer = costs.answer_costs(gens)
    assert np.isnan(answer[0]) and answer[1] == pytest.approx(2.0) and np.isnan(answer[2])
    assert costs.cost_latency(gens.assign(answer_cost=answer))["x"]["cost_per_task"] == 2.0
    unknown = gens.assign(input_tokens=np.nan)
    result = costs.cost_latency(unknown.assign(answer_cost=costs.answer_costs(unknown)))
    assert result["x"]["cost_per_task"] is None


def test_latency_percentiles():
    gens = pd.DataFrame(
        {
            "contender": "x",
            "task": range(100),
            "answer_cost": 0.001,
            "latency_ms": np.arange(1, 101, dtype=float),
            "ttft_ms": np.nan,
        }
    )
    result = costs.cost_latency(gens)["x"]
    assert result["latency_ms"] == {"p50": 50.5, "p95": pytest.approx(95.05)}
    assert result["ttft_ms"] is None
    assert result["cost_per_task"] == pytest.approx(0.001)


def test_reviewer_figures():
    raw = pd.DataFrame(
        [
            ("ann", 1, "acc", 4.0),
            ("bob", 1, "acc", 2.0),
            ("ann", 2, "acc", 3.0),
            ("bob", 2, "acc", 3.0),
        ],
        columns=["reviewer", "output", "dimension", "value"],
    )
    reviews = pd.DataFrame(
        [("ann", 30), ("ann", 50), ("ann", 100), ("bob", 20), ("bob", None)],
        columns=["reviewer", "seconds"],
    )
    final = pd.DataFrame(
        [(1, "acc", 3.0), (2, "acc", 3.0)], columns=["output", "dimension", "value"]
    )
    result = reviewers.reviewer_figures(raw, reviews, final)
    assert result["ann"]["reviews"] == 3 and result["ann"]["median_seconds"] == 50
    assert result["ann"]["mean_offset"] == pytest.approx(0.5)
    assert result["bob"]["mean_offset"] == pytest.approx(-0.5)
    assert result["bob"]["mean_abs_offset"] == pytest.approx(0.5)
    assert result["ann"]["agreement_exact"] == 0.5 and result["ann"]["agreement_within_one"] == 0.5
    assert result["bob"]["median_seconds"] == 20
    assert math.isclose(result["bob"]["n_compared"], 2)


def test_means_are_taken_per_task_first():
    # task 1 has two samples (4 and 2 -> task mean 3), task 2 one (5): mean 4 over 2 tasks
    final = pd.DataFrame(
        [
            (1, "x", 1, 0, "a", "base", "accuracy", 4.0),
            (2, "x", 1, 1, "a", "base", "accuracy", 2.0),
            (3, "x", 2, 0, "b", "advanced", "accuracy", 5.0),
        ],
        columns=["output", "contender", "task", "sample", "category", "tier", "dimension", "value"],
    )
    dims = quality.dimension_scores(final, RUBRIC)
    mean, ci = quality.mean_ci([3.0, 5.0], (1, 5))
    assert dims[("x", "accuracy")] == {"mean": 4.0, "ci95": ci, "n_tasks": 2}
    assert mean == 4.0
    outq = quality.output_quality(final, RUBRIC)
    by_tier = quality.summary_by(outq, "quality", ["contender", "tier"])
    assert by_tier[("x", "base")] == {"mean": 0.5, "ci95": None, "n_tasks": 1}
    assert by_tier[("x", "advanced")]["mean"] == 1.0
