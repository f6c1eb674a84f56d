"""Conventions that no longer overstate: published values first, then hand-computed fixtures.

Every expected value is derived in the test (or its comment) from a formula or a published
table, never read back from the code.
"""

import math

import numpy as np
import pandas as pd
import pytest

from reviews.stats import joint, passes, ratings, reliability, stability
from tasks.monitors.metrics import paired_p

# --- Clopper-Pearson bounds for undefeated / winless contenders ------------------------------


def battles_of(rows):
    """rows: (task, a, b, score of a)."""
    frame = pd.DataFrame(rows, columns=["task", "a", "b", "score"])
    return frame.assign(item=frame["task"], cluster=frame["task"])


def test_fifteen_of_fifteen_is_an_exact_bound_of_262_elo_over_the_opponents():
    # one-sided 95% Clopper-Pearson lower bound on p after 15 wins in 15 games: 0.05 ** (1/15)
    p = 0.05 ** (1 / 15)
    assert p == pytest.approx(0.8190, abs=5e-5)
    delta = 400 * math.log10(p / (1 - p))
    assert delta == pytest.approx(262, abs=0.5)
    # A beats B in all 15 test cases; B and C are rated from the data (B 2:1 over C twice)
    rows = [(t, "A", "B", 1.0) for t in range(15)]
    rows += [(15 + t, "B", "C", s) for t, s in enumerate([1, 1, 0, 1, 1, 0])]
    battles = battles_of(rows)
    bt = ratings.joint_ratings(battles, ["A", "B", "C"], joint.cluster_weights(21, 200, 1))
    assert bt["undefeated"] == ["A"]
    # the bound is B's rating (A's only opponent) + 262, from the data, not the penalty
    assert bt["ci95"]["A"][0] == pytest.approx(bt["ratings"]["B"] + delta, abs=0.1)
    assert bt["ci95"]["A"][1] is None
    assert bt["rating_bound"]["A"] == f">= {bt['ci95']['A'][0]:.0f}"


def test_two_contenders_fifteen_nil_sit_around_the_centre():
    # nobody's rating comes from the data: A >= 1000 + 262 / 2, B <= 1000 - 262 / 2
    battles = battles_of([(t, "B", "A", 0.0) for t in range(15)])
    bt = ratings.joint_ratings(battles, ["A", "B"], joint.cluster_weights(15, 200, 1))
    p = 0.05 ** (1 / 15)
    half = 200 * math.log10(p / (1 - p))
    assert bt["ci95"]["A"] == [pytest.approx(1000 + half, abs=0.1), None]
    assert bt["ci95"]["B"] == [None, pytest.approx(1000 - half, abs=0.1)]
    # the rank story: A is best in every round
    assert bt["p_best"] == {"A": 1.0, "B": 0.0} and bt["rank"] == {"A": 1, "B": 2}


def test_below_ten_cases_the_bound_is_still_given():
    # 5 of 5: p >= 0.05 ** (1/5) = 0.5493, +34.3 Elo; no interval (too few items) but a bound
    battles = battles_of([(t, "A", "B", 1.0) for t in range(5)])
    bt = ratings.joint_ratings(battles, ["A", "B"], joint.cluster_weights(5, 200, 1))
    p = 0.05 ** (1 / 5)
    assert bt["ci95"]["A"] is None and bt["ci_reason"].endswith("too few items (n=5)")
    assert bt["rating_bound"]["A"] == f">= {1000 + 200 * math.log10(p / (1 - p)):.0f}"
    assert bt["rating_bound"]["B"] == f"<= {1000 - 200 * math.log10(p / (1 - p)):.0f}"


# --- one rank story ----------------------------------------------------------------------------


def test_all_ties_split_p_best_evenly_and_say_all_equal():
    battles = battles_of([(t, a, b, 0.5) for t in range(12) for a, b in (("A", "B"), ("B", "C"))])
    bt = ratings.joint_ratings(battles, ["A", "B", "C"], joint.cluster_weights(12, 200, 3))
    assert bt["p_best"] == {c: pytest.approx(1 / 3) for c in "ABC"}
    assert all(bt["ci95"][c] is None for c in "ABC")
    assert all(bt["ci_reasons"][c] == "all equal (n=12)" for c in "ABC")


def test_p_best_sums_to_one_and_the_rank_stays_inside_its_interval():
    bt = {"rank": {}, "rank_ci95": {}, "p_best": {}}
    # three rounds; A and B tie for best in the first
    elo = np.array([[1100.0, 1100.0, 900.0], [1100.0, 1000.0, 900.0], [1000.0, 1100.0, 900.0]])
    ratings.rank_story(
        bt, ["A", "B", "C"], elo, np.array([1050.0, 950, 850]), np.array([1150.0, 1150, 950])
    )
    assert bt["p_best"] == {"A": pytest.approx(0.5), "B": pytest.approx(0.5), "C": 0.0}
    assert sum(bt["p_best"].values()) == pytest.approx(1.0)
    assert bt["rank"]["A"] == 1 and bt["rank_ci95"]["C"] == [3, 3]
    # a non-overlap rank outside the rank interval is not shown: C's intervals here say rank
    # 1 (nobody's lower bound above its upper bound) while every round ranks it 3
    bt = {"rank": {}, "rank_ci95": {}, "p_best": {}}
    ratings.rank_story(
        bt, ["A", "B", "C"], elo, np.array([1050.0, 950, 850]), np.array([1150.0, 1150, 1200])
    )
    assert bt["rank"]["C"] is None and bt["rank_ci95"]["C"] == [3, 3]


# --- pass@k and pass^k over pending samples ---------------------------------------------------


def rows_for(tasks):
    """tasks: {task: [pass 1.0 / fail 0.0 / pending None, ...]} on the human basis."""
    out = []
    for task, samples in tasks.items():
        for i, v in enumerate(samples):
            out.append(
                {
                    "contender": "x",
                    "task": task,
                    "sample": i,
                    "tier": "base",
                    "failed": False,
                    "checks_passed": True,
                    "human_quality": np.nan if v is None else v,
                    "pending": v is None,
                }
            )
    return passes.sample_bases(pd.DataFrame(out), 0.5)


def test_every_task_stays_in_every_k_and_pending_samples_give_bounds():
    # T1 3/3 pass; T2 2 pass, 1 pending; T3 1 pass, 2 pending; T4 0/3
    based = rows_for(
        {1: [1.0, 1.0, 1.0], 2: [1.0, 1.0, None], 3: [1.0, None, None], 4: [0.0, 0.0, 0.0]}
    )
    figs = passes.basis_figures(based, "human", 3)
    at3 = figs["curve"][2]
    # pass^3 per task: low (pending fail) 1, 0, 0, 0 -> 0.25; high (pending pass) 1, 1, 1, 0 -> 0.75
    assert at3["low"]["pass_hat_k"] == 0.25 and at3["high"]["pass_hat_k"] == 0.75
    assert at3["n_tasks"] == 4
    # T2 and T3 have fewer than 3 settled samples: no point, only the bounds
    assert at3["pass_hat_k"] is None and figs["pass_hat_k"] is None
    # pass@1: settled rates 1, 1, 1, 0 -> 0.75; low 1, 2/3, 1/3, 0 -> 0.5; high 1, 1, 1, 0
    at1 = figs["curve"][0]
    assert at1["pass_at_k"] == 0.75
    assert at1["low"]["pass_at_k"] == pytest.approx(0.5)
    assert at1["high"]["pass_at_k"] == pytest.approx(0.75)
    # pass^2 low: C(c,2)/C(3,2) = 1, 1/3, 0, 0 -> 1/3; high: 1, 1, 1, 0 -> 0.75
    at2 = figs["curve"][1]
    assert at2["low"]["pass_hat_k"] == pytest.approx(1 / 3) and at2["high"]["pass_hat_k"] == 0.75


def test_pass_hat_k_never_rises_with_k_on_either_side():
    rng = np.random.default_rng(7)
    for _ in range(50):
        tasks = {
            t: [rng.choice([1.0, 0.0, None], p=[0.5, 0.3, 0.2]) for _ in range(rng.integers(1, 5))]
            for t in range(8)
        }
        if all(v is None for s in tasks.values() for v in s):
            continue
        curve = passes.basis_figures(rows_for(tasks), "human", 1)["curve"]
        for side in ("low", "high"):
            hats = [p[side]["pass_hat_k"] for p in curve]
            assert all(b <= a + 1e-12 for a, b in zip(hats, hats[1:], strict=False)), (side, tasks)
        for p in curve:
            assert p["low"]["pass_at_k"] <= p["high"]["pass_at_k"] + 1e-12
            if p["pass_at_k"] is not None:
                assert (
                    p["low"]["pass_at_k"] - 1e-12
                    <= p["pass_at_k"]
                    <= p["high"]["pass_at_k"] + 1e-12
                )


# --- paired tests match the interval beside them ------------------------------------------------


def test_a_delta_of_zero_in_every_round_has_p_one():
    assert paired_p(np.zeros(1000), 0.0) == 1.0
    assert joint.boot_p(np.zeros(1000), 0.0, 20) == 1.0


def test_the_paired_p_agrees_with_the_percentile_interval():
    rng = np.random.default_rng(11)
    for shift in np.linspace(-0.3, 0.3, 25):
        boot = rng.normal(shift, 0.1, size=2000)
        (lo, hi), _ = joint.interval(boot, 30)
        p = joint.boot_p(boot, float(shift), 30)
        excludes = lo > 0 or hi < 0
        # the same rounds, the same expansion: they agree (up to the quantile interpolation)
        assert (p < 0.05) == excludes or abs(p - 0.05) < 2e-3, (shift, p, lo, hi)


def test_the_expanded_percentile_tails_follow_hesterberg():
    # Phi(-sqrt(n / (n - 1)) * t_{0.975, n - 1}): n = 15: t = 2.1448, x 1.0351 = 2.2201 -> 1.32%
    assert joint.expanded_tail(15) == pytest.approx(1.32, abs=0.01)
    # n = 60: t = 2.0010, x 1.0084 = 2.0178 -> 2.18%; large n -> 2.5%
    assert joint.expanded_tail(60) == pytest.approx(2.18, abs=0.01)
    assert joint.expanded_tail(100_000) == pytest.approx(2.5, abs=0.01)


# --- AC2 weights by level (Gwet 2014, p. 120: 4 raters x 12 units, categories 1-5) -------------

GWET_4RATERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, None],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 3],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def gwet_counts():
    counts = np.zeros((12, 5))
    for rater in GWET_4RATERS:
        for unit, v in enumerate(rater):
            if v is not None:
                counts[unit, v - 1] += 1
    return counts, np.arange(1.0, 6.0)


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.775), ("ordinal", 0.899), ("interval", 0.914), ("ratio", 0.857)],
)
def test_ac2_matches_gwet_s_published_values_for_each_level(level, published):
    # Gwet's AC1 / AC2 with identity, ordinal, quadratic and ratio weights
    counts, domain = gwet_counts()
    assert reliability.gwet_ac(counts, domain, level) == pytest.approx(published, abs=5e-4)


def test_ratio_weights_follow_gwet():
    w = reliability.gwet_weights(np.array([1.0, 2.0, 5.0]), "ratio")
    # ((k - l) / (k + l))^2: (1,2) 1/9, (1,5) 4/9, (2,5) 9/49; max 4/9
    assert w[0, 1] == pytest.approx(1 - (1 / 9) / (4 / 9))
    assert w[1, 2] == pytest.approx(1 - (9 / 49) / (4 / 9))
    assert w[0, 2] == 0.0 and np.all(np.diag(w) == 1.0)


def ratings_frame(r1, r2):
    rows = [(u, "r1", v, u) for u, v in enumerate(r1)] + [(u, "r2", v, u) for u, v in enumerate(r2)]
    return pd.DataFrame(rows, columns=["unit", "coder", "value", "cluster"]).astype(
        {"value": float}
    )


def test_within_one_exists_only_for_ordinal_and_wider_scales():
    r1, r2 = [0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0], [0, 1, 0, 0, 1, 1, 1, 1, 0, 1, 0, 0]
    weights = joint.cluster_weights(12, 100, 1)
    nominal = reliability.agreement_figures(ratings_frame(r1, r2), "nominal", weights)
    ordinal = reliability.agreement_figures(ratings_frame(r1, r2), "ordinal", weights)
    assert nominal["within_one"] is None and nominal["exact"] == pytest.approx(9 / 12)
    assert ordinal["within_one"] == 1.0


def test_the_note_names_the_weights_when_prevalence_is_not_the_cause():
    # scores 3-5, reviewers mostly one point apart, no value on most ratings (4 on half):
    # alpha about 0 (as much disagreement as chance), AC2's ordinal weights give the near
    # misses most of the credit
    r1 = [3, 4, 3, 4, 5, 4, 3, 4, 4, 3] * 2
    r2 = [4, 3, 4, 4, 4, 3, 3, 5, 3, 4] * 2
    fig = reliability.agreement_figures(
        ratings_frame(r1, r2), "ordinal", joint.cluster_weights(20, 100, 1)
    )
    assert fig["ac2"] - fig["alpha"] > reliability.DISAGREE
    assert "weights" in fig["note"] and "prevalence" not in fig["note"]


def test_the_note_names_prevalence_when_one_value_dominates():
    r1 = [1] * 29 + [0]
    r2 = [1] * 28 + [0, 1]
    fig = reliability.agreement_figures(
        ratings_frame(r1, r2), "nominal", joint.cluster_weights(30, 100, 1)
    )
    assert "prevalence" in fig["note"]


# --- within-task spread: the unbiased SD --------------------------------------------------------


def test_stability_uses_the_unbiased_sd_and_counts_single_sample_tasks():
    # scores 0.80 0.85 0.75 0.80: sample SD sqrt(0.005 / 3) = 0.04082 (population SD 0.03536)
    frame = pd.DataFrame(
        {
            "contender": "x",
            "task": [1, 1, 1, 1, 2],
            "sample": [0, 1, 2, 3, 0],
            "quality": [0.80, 0.85, 0.75, 0.80, 0.9],
        }
    )
    spreads = stability.task_spreads(frame)
    one = spreads[spreads["task"] == 1].iloc[0]
    assert one["sampling_sd"] == pytest.approx(math.sqrt(0.005 / 3))
    assert stability.spread_stability(one["sampling_sd"]) == pytest.approx(
        1 - math.sqrt(0.005 / 3) / 0.5
    )
    single = spreads[spreads["task"] == 2].iloc[0]
    assert single["n_samples"] == 1 and np.isnan(single["sampling_sd"])


# --- seeds and flaky tasks ----------------------------------------------------------------------


def test_flaky_tasks_are_the_ones_whose_samples_disagree():
    # T1 all pass, T2 pass + fail, T3 all fail, T4 pass + pending (one settled: not flaky)
    based = rows_for({1: [1.0, 1.0], 2: [1.0, 0.0], 3: [0.0, 0.0], 4: [1.0, None]})
    assert passes.flaky_tasks(based, "human") == [2]


def bench_frames(**kwargs):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "report.py"
    spec = importlib.util.spec_from_file_location("bench_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic(**kwargs)


def test_a_pinned_seed_leaves_stability_and_pass_at_k_unmeasured():
    from reviews.report.campaign import CampaignFrames, build_report

    frames, meta = bench_frames(tasks=20, contenders=2, samples=3, reviewers=2)
    frames["contenders"]["params"] = [{"seed": 7}, {}]  # model-1 has no seed to pin
    meta["weights"]["sample_seeds"] = "fixed"
    report = build_report(CampaignFrames(**frames), meta, n_boot=50, seed=1)
    pinned, free = report["stability"]["model-0"], report["stability"]["model-1"]
    assert (
        pinned["stability"] is None
        and pinned["reason"] == "samples identical by seed: not measured"
    )
    assert free["stability"] is not None
    human = report["passes"]["model-0"]["human"]
    assert human["pass_at_k"] is None and [p["k"] for p in human["curve"]] == [1]
    assert human["pass_at_1"] is not None
    assert any("one seed for every sample" in w for w in report["warnings"])
    # the flaky tasks of the stability tab are the report's
    assert report["stability"]["model-1"]["flaky_tasks"] == report["flaky_tasks"]["model-1"]


# --- length control ------------------------------------------------------------------------------


def test_length_control_finds_a_preference_that_follows_length_only():
    from reviews.stats import length

    # 40 test cases; in half A's answer is longer (d = +0.5), in half B's (d = -0.5); the longer
    # answer wins 8 of 10 times either way. Then logit(0.8) = delta + 0.5 g and
    # logit(0.2) = delta - 0.5 g: delta = 0 (equal strength) and g = 2 ln 4 = 2.773.
    rows = []
    for t in range(40):
        longer_a = t % 2 == 0
        longer_wins = t % 10 < 8
        score = 1.0 if longer_a == longer_wins else 0.0
        rows.append({"task": t, "a": "A", "b": "B", "score": score, "d": 0.5 if longer_a else -0.5})
    battles = pd.DataFrame(rows).assign(cluster=lambda f: f["task"])
    fit = length.length_controlled(battles, ["A", "B"], joint.cluster_weights(40, 400, 2))
    assert fit["ratings"]["A"] == pytest.approx(1000.0, abs=1e-6)
    assert fit["coefficient"]["value"] == pytest.approx(2 * math.log(4), abs=1e-6)
    lo, hi = fit["coefficient"]["ci95"]
    assert lo > 0 and lo < 2 * math.log(4) < hi
    # the normalized difference of 300 and 100 characters is (300 - 100) / 400 = 0.5
    assert length.length_difference([300, 0], [100, 0]).tolist() == [0.5, 0.0]


# --- slices --------------------------------------------------------------------------------------


def test_slices_break_pass_rates_down_by_a_metadata_key():
    from reviews.report.campaign import CampaignFrames, build_report

    # 27 tasks: 9 with the fact at the start, 9 in the middle, 9 at the end of the document;
    # nobody reviewed yet, so pass@1 is the checks'. model-0 finds the middle fact in 1 of 9.
    frames, meta = bench_frames(tasks=27, contenders=2, samples=1, reviewers=2)
    positions = ["start", "middle", "end"]
    frames["tasks"]["meta:position"] = [positions[i % 3] for i in range(27)]
    frames["items"] = frames["items"].assign(state="open", final=None)
    gens = frames["generations"]
    gens["status"] = "done"  # (the bench data fails 1% of generations at random)
    position_of = dict(zip(frames["tasks"]["id"], frames["tasks"]["meta:position"], strict=True))
    middle = [t for t in frames["tasks"]["id"] if position_of[t] == "middle"]
    missed = (gens["contender"] == 1) & gens["task"].isin(middle[1:])
    gens["checks_passed"] = ~missed
    gens["check_results"] = [{"must_include": {"passed": bool(ok)}} for ok in ~missed]
    meta["weights"]["slice_by"] = ["position"]
    report = build_report(CampaignFrames(**frames), meta, n_boot=200, seed=1)
    position = report["slices"]["position"]
    assert set(position) == {"start", "middle", "end"}
    middle_0 = position["middle"]["model-0"]["pass_at_1"]
    assert middle_0["mean"] == pytest.approx(1 / 9, abs=5e-4) and middle_0["basis"] == "checks"
    assert middle_0["ci95"] is None and middle_0["reason"] == "too few items (n=9)"
    assert position["start"]["model-0"]["pass_at_1"]["mean"] == 1.0
    assert position["middle"]["model-1"]["pass_at_1"]["mean"] == 1.0
    assert position["middle"]["model-0"]["n_tasks"] == 9


def test_flaky_tasks_follow_the_checks_when_people_scored_one_sample():
    from reviews.report.campaign import CampaignFrames, build_report

    # nobody reviewed yet; 12 tasks x 3 samples; model-0's second sample fails the checks on
    # the first two tasks, model-1 passes everything
    frames, meta = bench_frames(tasks=12, contenders=2, samples=3, reviewers=2)
    frames["items"] = frames["items"].assign(state="open", final=None)
    gens = frames["generations"].assign(status="done")
    ids = sorted(frames["tasks"]["id"])[:2]
    failing = (gens["contender"] == 1) & (gens["sample"] == 1) & gens["task"].isin(ids)
    gens["checks_passed"] = ~failing
    gens["check_results"] = [{"regex": {"passed": bool(ok)}} for ok in ~failing]
    frames["generations"] = gens
    report = build_report(CampaignFrames(**frames), meta, n_boot=50, seed=1)
    external = dict(zip(frames["tasks"]["id"], frames["tasks"]["external_id"], strict=True))
    assert report["flaky_tasks"]["model-0"] == sorted(external[t] for t in ids)
    assert report["flaky_tasks"]["model-1"] == []
    assert report["stability"]["model-0"]["source"] == "checks"
