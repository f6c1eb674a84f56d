"""Stage-2 conventions ("honest numbers"): published values first, then hand-computed fixtures."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reviews.report import figures as report_figures
from reviews.report.outcomes import battles
from reviews.stats import joint, passes, ratings, reliability, stability

BENCH = Path(__file__).resolve().parents[2] / "bench" / "report.py"


def bench_module():
    spec = importlib.util.spec_from_file_location("bench_report", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- published values ------------------------------------------------------------------------


def test_ac1_and_kappa_match_wongpakaran_2013():
    # 2 raters, 2 categories, table [[118, 5], [2, 0]] (n = 125)
    counts = np.array([[2, 0]] * 118 + [[1, 1]] * 7, dtype=float)
    assert reliability.gwet_ac(counts, np.array([0.0, 1.0])) == pytest.approx(0.941, abs=5e-4)
    assert reliability.cohen_kappa([[118, 5], [2, 0]]) == pytest.approx(-0.023, abs=5e-4)
    exact = 118 / 125
    assert exact == pytest.approx(0.944, abs=5e-4)


def test_pass_at_k_curve_matches_chen_et_al_and_ends_at_any_sample_passed():
    points = passes.curve(np.array([10]), np.array([3]))
    assert points[0]["pass_at_k"] == pytest.approx(0.3)
    assert points[4]["pass_at_k"] == pytest.approx(0.9167, abs=5e-5)
    assert points[1]["pass_hat_k"] == pytest.approx(0.0667, abs=5e-5)
    # k = n: "any sample passed" (1 for a task with a pass, 0 without)
    last = passes.curve(np.array([3, 3]), np.array([1, 0]))[-1]
    assert last["k"] == 3 and last["pass_at_k"] == 0.5


def test_holm_adjusts_step_down():
    # p = 0.01, 0.04, 0.03 -> 0.03, 0.06, 0.06 (3 * 0.01, max(2 * 0.03, 0.03), max(0.04, 0.06))
    assert ratings.holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])


# --- small samples ---------------------------------------------------------------------------


def test_two_items_give_null_intervals_with_reasons():
    s = joint.summary(0.594, np.array([0.5, 0.7, 0.6]), 2)
    assert s["ci95"] is None and s["reason"] == "too few items (n=2)" and s["small_sample"]


def test_identical_resamples_say_all_equal_not_x_to_x():
    ci, reason = joint.interval(np.full(100, 0.75), 12)
    assert ci is None and reason == "all equal (n=12)"


def test_a_two_item_report_has_null_intervals_and_a_small_sample_warning():
    bench = bench_module()
    frames, meta = bench.synthetic(tasks=2, contenders=2, samples=1, reviewers=2)
    from reviews.report.campaign import CampaignFrames, build_report

    report = build_report(CampaignFrames(**frames), meta, n_boot=200, seed=1)
    for row in report["leaderboard"]:
        assert row["ci95"] is None and row["rank"] is None and row["quality_ci95"] is None
        assert row["quality_reason"] == "too few items (n=2)"
    assert report["rating"]["ci_reason"] == "no intervals and no ranks: too few items (n=2)"
    assert any(w.startswith("small_sample") for w in report["warnings"])


# --- ratings: undefeated contender, joint bootstrap ----------------------------------------


def undefeated_battles(n_tasks=20):
    rows = []
    for t in range(n_tasks):
        rows += [(t, t, "A", "B", 1.0), (t, t, "A", "C", 1.0)]
        rows.append((t, t, "B", "C", 1.0 if t % 3 else 0.0))
    return pd.DataFrame(rows, columns=["item", "task", "a", "b", "score"]).assign(
        cluster=lambda f: f["task"]
    )


def test_an_undefeated_contender_gets_a_one_sided_bound():
    w = joint.cluster_weights(20, 300, seed=5)
    bt = ratings.joint_ratings(undefeated_battles(), ["A", "B", "C"], w)
    lo, hi = bt["ci95"]["A"]
    assert hi is None and lo is not None
    assert bt["rating_bound"]["A"] == f">= {lo:.0f}"
    assert bt["rating_bound"]["B"] is None and None not in bt["ci95"]["B"]
    assert bt["rank"]["A"] == 1 and bt["p_best"]["A"] == 1.0 and bt["rank_ci95"]["A"] == [1, 1]


def test_the_joint_bootstrap_is_reproducible_with_a_seed():
    a = ratings.joint_ratings(
        undefeated_battles(), ["A", "B", "C"], joint.cluster_weights(20, 200, 9)
    )
    b = ratings.joint_ratings(
        undefeated_battles(), ["A", "B", "C"], joint.cluster_weights(20, 200, 9)
    )
    assert a["ci95"] == b["ci95"] and a["rank_ci95"] == b["rank_ci95"]


def test_the_report_is_byte_identical_across_runs_with_the_same_seed():
    bench = bench_module()
    from reviews.report.campaign import CampaignFrames, build_report, report_json

    frames, meta = bench.synthetic(tasks=24, contenders=3, samples=2, reviewers=4)
    first = report_json(build_report(CampaignFrames(**frames), meta, n_boot=100, seed=3))
    frames, meta = bench.synthetic(tasks=24, contenders=3, samples=2, reviewers=4)
    again = report_json(build_report(CampaignFrames(**frames), meta, n_boot=100, seed=3))
    assert first == again


# --- passes: bases, pending, per-tier thresholds ------------------------------------------


def sample_rows(rows):
    cols = ["contender", "task", "sample", "tier", "failed", "checks_passed", "human_quality"]
    return pd.DataFrame(rows, columns=[*cols, "pending"])


def test_an_unresolved_dispute_is_pending_not_a_pass():
    rows = sample_rows(
        [
            ("x", 1, 0, "base", False, True, 0.9, False),  # human pass, checks pass
            ("x", 2, 0, "base", False, True, np.nan, True),  # disputed, unresolved
            ("x", 3, 0, "base", False, True, 0.2, False),  # human fail, checks pass
            ("x", 4, 0, "base", False, True, np.nan, False),  # never reviewed
        ]
    )
    based = passes.sample_bases(rows, 0.6)
    figs = passes.contender_passes(based, 1)["x"]
    assert figs["pending"] == 1
    assert figs["human"]["pass_at_1"] == 0.5 and figs["human"]["n_samples"] == 2
    assert figs["checks"]["pass_at_1"] == 1.0 and figs["checks"]["n_samples"] == 4
    # combined: task 1 pass, task 3 fail (human), task 4 checks only; task 2 pending, left out
    assert figs["combined"]["pass_at_1"] == pytest.approx(2 / 3)
    assert figs["headline"] == "human"
    assert figs["pass_at_1"] == {"human": 0.5, "checks": 1.0, "combined": pytest.approx(2 / 3)}


def test_each_tier_is_judged_against_its_own_threshold():
    rows = sample_rows(
        [
            ("x", 1, 0, "base", False, None, 0.65, False),
            ("x", 2, 0, "advanced", False, None, 0.65, False),
            ("x", 3, 0, "boundary", False, None, 0.45, False),
        ]
    )
    thresholds = {"base": 0.6, "advanced": 0.7, "boundary": 0.4}
    based = passes.sample_bases(rows, thresholds)
    assert based["human"].tolist() == [1.0, 0.0, 1.0]
    assert based["checks"].isna().all()


# --- both_bad, pairwise head-to-head ------------------------------------------------------


def test_both_bad_with_rubric_scores_is_decided_by_them():
    outputs = pd.DataFrame(
        {"id": [1, 2, 3, 4], "item": [10, 10, 11, 11], "contender": ["p", "q", "p", "q"]}
    ).assign(task=lambda f: f["item"])
    outq = pd.DataFrame({"output": [1, 2], "quality": [0.5, 0.0]})  # item 10: p 3 vs q 1
    prefs = pd.DataFrame({"item": [10, 11], "preference": ["both_bad", "both_bad"]})
    out, sources = battles(outputs, outq, prefs, {"p": 0, "q": 1})
    assert out["score"].tolist() == [1.0, 0.5]  # scores decide item 10; item 11 has none: tie
    assert sources == {"preference": 1, "scores": 1}


# --- stability ----------------------------------------------------------------------------


def test_stability_is_equal_for_equal_spreads_at_different_means():
    low = pd.DataFrame({"contender": "x", "task": 1, "sample": [0, 1], "quality": [0.1, 0.3]})
    high = low.assign(quality=[0.7, 0.9])
    sd_low = stability.task_spreads(low)["sampling_sd"].iloc[0]
    sd_high = stability.task_spreads(high)["sampling_sd"].iloc[0]
    # the unbiased SD (ddof = 1) of two scores 0.2 apart: 0.2 / sqrt(2) = 0.1414
    assert sd_low == pytest.approx(0.2 / math.sqrt(2)) and sd_high == pytest.approx(sd_low)
    assert stability.spread_stability(sd_low) == pytest.approx(stability.spread_stability(sd_high))
    assert stability.spread_stability(sd_low) == pytest.approx(1 - 0.2 / math.sqrt(2) / 0.5)
    # 1 - CV would give 0.5 and 0.875 for the same spread
    assert stability.stability([0.1, 0.3]) == pytest.approx(0.5)


# --- decision, Pareto, free contenders, minimum detectable difference ---------------------


def test_the_pareto_front_keeps_contenders_no_one_beats_on_both():
    front = report_figures.pareto_front(
        {"a": (0.9, 3.0), "b": (0.8, 1.0), "c": (0.7, 2.0), "d": (None, 1.0)}
    )
    assert front == {"a", "b"}  # c is beaten by b (better and cheaper)


def test_free_contenders_have_no_normalized_cost_and_say_so():
    bench = bench_module()
    from reviews.report.campaign import CampaignFrames, build_report

    frames, meta = bench.synthetic(tasks=12, contenders=2, samples=2, reviewers=2)
    frames["contenders"] = frames["contenders"].assign(price_in=0.0, price_out=0.0)
    frames["generations"] = frames["generations"].assign(cost=0.0)
    report = build_report(CampaignFrames(**frames), meta, n_boot=50, seed=1)
    assert report["decision"]["free"] is True
    assert any("every contender is free" in w for w in report["warnings"])
    for row in report["leaderboard"]:
        assert row["normalized_cost"] is None and row["decision_score"] is not None


def test_minimum_detectable_difference_follows_the_normal_approximation():
    # MDD = (z_0.975 + z_0.80) * sd(d) / sqrt(n); n_needed = ((z_0.975 + z_0.80) sd / |d|)^2
    d = np.array([0.1, 0.2, 0.0, 0.3, 0.1, 0.2, 0.1, 0.0])
    outq = pd.DataFrame(
        {
            "contender": ["a"] * 8 + ["b"] * 8,
            "task": list(range(8)) * 2,
            "quality": np.r_[0.5 + d, np.full(8, 0.5)],
        }
    )
    sep = report_figures.separation(None, outq, ["a", "b"])
    z = 1.959964 + 0.841621
    assert sep["mdd"] == pytest.approx(z * d.std(ddof=1) / math.sqrt(8), abs=1e-3)
    assert sep["n_needed"] == math.ceil((z * d.std(ddof=1) / d.mean()) ** 2)


def test_bands_are_judged_on_the_interval():
    assert reliability.band_on_interval([0.81, 0.95]) == "reliable"
    assert reliability.band_on_interval([0.46, 0.99]) == "tentative"
    assert reliability.band_on_interval([0.2, 0.6]) == "unreliable"
    assert reliability.band_on_interval(None) is None


def test_no_bootstrap_rounds_gives_point_figures_and_says_why():
    bench = bench_module()
    from reviews.report.campaign import CampaignFrames, build_report

    frames, meta = bench.synthetic(tasks=12, contenders=2, samples=2, reviewers=2)
    report = build_report(CampaignFrames(**frames), meta, n_boot=0, seed=1)
    assert report["rating"]["ci_reason"] == "no intervals and no ranks: no bootstrap rounds"
    row = report["leaderboard"][0]
    assert row["rating"] is not None and row["ci95"] is None
    assert row["quality"] is not None and row["quality_reason"] == "no bootstrap rounds"


def test_reviewer_offsets_get_an_interval_from_the_joint_bootstrap():
    bench = bench_module()
    from reviews.report.campaign import CampaignFrames, build_report

    frames, meta = bench.synthetic(tasks=30, contenders=2, samples=1, reviewers=3)
    report = build_report(CampaignFrames(**frames), meta, n_boot=100, seed=2)
    for figures in report["reviewers"].values():
        assert figures["offset_n_cases"] >= 10
        lo, hi = figures["mean_offset_ci95"]
        assert lo <= figures["mean_offset"] <= hi


def test_the_prevalence_paradox_gets_a_note_beside_alpha():
    # 100 units, 2 raters, table [[97, 1], [2, 0]]: 97% exact agreement, alpha near 0, AC1 high
    rows = []
    for unit in range(100):
        a, b = (0, 0) if unit < 97 else ((0, 1) if unit == 97 else (1, 0))
        rows += [(unit, "r1", float(a), unit), (unit, "r2", float(b), unit)]
    ratings = pd.DataFrame(rows, columns=["unit", "coder", "value", "cluster"])
    out = reliability.agreement_figures(ratings, "nominal", joint.cluster_weights(100, 200, 1))
    assert out["exact"] == pytest.approx(0.97)
    assert abs(out["alpha"]) < 0.02 and out["ac1"] > 0.9
    assert out["note"] and "disagree" in out["note"]
    # kappa by hand: pe = 0.99 x 0.98 + 0.01 x 0.02 = 0.9704 -> (0.97 - 0.9704) / 0.0296
    assert reliability.cohen_kappa([[97, 1], [2, 0]]) == pytest.approx(-0.0135, abs=1e-4)
    # AC1 by hand: pi_0 = 0.985, pe = 2 x 0.985 x 0.015 = 0.02955 -> (0.97 - pe) / (1 - pe)
    assert out["ac1"] == pytest.approx((0.97 - 0.02955) / (1 - 0.02955), abs=1e-9)
    assert out["band"] == "unreliable"  # the whole interval is below 0.667
