"""The report's tools and conversation sections on hand-built frames, against hand-computed
values (docs/statistics.md, "Tool use" and "Conversations", shows the arithmetic)."""

import pytest

from reviews.report.campaign import build_report
from reviews.stats import joint, turns
from tests.reviews.agentic_frames import (
    FIVE_TURNS,
    Builder,
    conversation,
    meta,
    single_multi_campaign,
    tool_campaign,
    turn_campaign,
)

# --- tool use ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tool_report():
    return build_report(tool_campaign(), meta(), n_boot=200, seed=1)


def test_tool_call_accuracy_is_the_share_of_samples_whose_tool_check_passed(tool_report):
    # 8 of the 10 samples of T1..T5 pass their tool_calls check. Wilson (z = 1.96) at 8 / 10:
    # centre (0.8 + 0.19207) / 1.38415 = 0.71674, half 0.22658 -> [0.490, 0.943]
    acc = tool_report["tools"]["careful"]["tool_call_accuracy"]
    assert acc == {"rate": 0.8, "ci95": [0.49, 0.943], "n": 10, "small_sample": True}


def test_invalid_and_unmocked_rates_are_per_call(tool_report):
    # 13 calls: T1 2+2, T2 0+1, T3 1+1, T4 2+2, T5 1+1; one with arguments that are not JSON
    # (T3 #0), one nothing mocked (T2 #1). Wilson at 1 / 13: [0.0137, 0.3331]
    t = tool_report["tools"]["careful"]
    assert t["n_calls"] == 13
    assert t["invalid_call_rate"] == {
        "rate": 0.077,
        "ci95": [0.014, 0.333],
        "n": 13,
        "small_sample": True,
    }
    assert t["unmocked_call_rate"] == t["invalid_call_rate"]


def test_error_recovery_counts_the_samples_that_got_a_mocked_error(tool_report):
    # Only T1's two samples got get_order's timeout; one of them then passed every check, the
    # other got the tools right and the answer wrong. The unmocked error of T2 #1 is not a
    # mocked one. Wilson at 1 / 2: [0.095, 0.905]
    rec = tool_report["tools"]["careful"]["error_recovery_rate"]
    assert rec == {"rate": 0.5, "ci95": [0.095, 0.905], "n": 2, "small_sample": True}


def test_mean_steps_and_completion_time_percentiles(tool_report):
    t = tool_report["tools"]["careful"]
    # steps per task (samples averaged): T1 3, T2 1.5, T3 2, T4 2, T5 2 -> 10.5 / 5
    assert t["mean_steps"] == 2.1
    assert t["mean_steps_ci95"] is None and t["mean_steps_reason"] == "too few items (n=5)"
    # sorted: 300 600 650 700 800 900 1000 1200 1500 1600 (T6 has no tools: not counted)
    # p50 at rank 4.5 = 850; p95 at rank 0.95 x 9 = 8.55 -> 1500 + 0.55 x 100 = 1555
    assert t["completion_ms"] == {"p50": 850.0, "p95": 1555.0}
    assert (t["n_samples"], t["n_tasks"]) == (10, 5)


def test_rates_of_nothing_are_null_with_a_reason(tool_report):
    silent = tool_report["tools"]["silent"]
    assert silent["tool_call_accuracy"] == {
        "rate": None,
        "ci95": None,
        "n": 0,
        "reason": "no sample ran a tool_calls check",
    }
    assert silent["invalid_call_rate"]["reason"] == "no tool calls"
    assert silent["error_recovery_rate"]["reason"] == "no sample got an error from a mocked tool"
    assert silent["mean_steps"] == 1.0 and silent["n_calls"] == 0


def test_a_campaign_without_such_tasks_has_null_sections():
    b = Builder(["x", "y"])
    task = b.task("P1")
    for name in ("x", "y"):
        b.gen(task, name, 0, checks={"max_chars": True})
    report = build_report(b.frames(), meta(samples=1), n_boot=50, seed=1)
    assert report["tools"] is None and report["conversation"] is None


def test_frames_without_the_stage_2_columns_still_build():
    # older callers (bench/report.py's synthetic frames) carry no tools, turns or transcripts
    f = tool_campaign()
    f.tasks = f.tasks.drop(columns=["tools", "turns", "single_turn"])
    f.generations = f.generations.drop(columns=["single_turn", "transcript"])
    report = build_report(f, meta(), n_boot=50, seed=1)
    assert report["tools"] is None and report["conversation"] is None


# --- conversations: the turn curve and its decay ----------------------------------------------


def test_the_curve_shows_the_constraint_forgotten_after_turn_3_exactly():
    b, _ = turn_campaign()
    conv = build_report(b.frames(), meta(), n_boot=200, seed=1)["conversation"]
    steady, forgetful = conv["steady"], conv["forgetful"]
    assert [p["turn"] for p in forgetful["turn_curve"]] == list(range(1, FIVE_TURNS + 1))
    assert [p["mean"] for p in steady["turn_curve"]] == [1.0] * 5
    assert [p["mean"] for p in forgetful["turn_curve"]] == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert all(p["n"] == 12 for p in forgetful["turn_curve"])
    # every task says the same: an interval of identical resamples is "all equal", not 0 - 0
    assert forgetful["turn_curve"][3]["ci95"] is None
    assert forgetful["turn_curve"][3]["reason"] == "all equal (n=12)"
    assert forgetful["decay"]["value"] == -1.0 and steady["decay"]["value"] == 0.0
    assert (forgetful["decay"]["first_turn"], forgetful["decay"]["last_turn"]) == (1, 5)
    assert forgetful["basis"] == "turn_checks" and forgetful["single_vs_multi"] is None


def _partly_forgetful(n_tasks=12):
    """'forgetful' drops the constraint from turn 4 on the first 9 tasks only: turn 4 and 5
    mean 3 / 12 = 0.25, decay -0.75."""
    b = Builder(["steady", "forgetful"])
    for t in range(n_tasks):
        tid = b.task(f"C{t + 1:02d}", turns=5)
        b.gen(tid, "steady", 0, transcript=conversation([True] * 5))
        kept = [True] * 5 if t >= 9 else [True, True, True, False, False]
        b.gen(tid, "forgetful", 0, transcript=conversation(kept))
    return b.frames()


def test_the_decay_interval_comes_from_the_reports_own_seeded_bootstrap():
    report = build_report(_partly_forgetful(), meta(samples=1), n_boot=300, seed=7)
    d = report["conversation"]["forgetful"]["decay"]
    assert d["value"] == -0.75 and d["n"] == 12
    lo, hi = d["ci95"]
    # a resample's decay is minus its share of forgetting tasks (9 of 12 in the data)
    assert -1.0 <= lo < -0.75 < hi <= -0.5
    again = build_report(_partly_forgetful(), meta(samples=1), n_boot=300, seed=7)
    assert again["conversation"]["forgetful"]["decay"]["ci95"] == [lo, hi]
    # and it is the draw matrix every other interval of the report uses
    scores = turns.turn_scores_checks(
        _partly_forgetful().generations.assign(
            contender=lambda g: g["contender"].map({1: "steady", 2: "forgetful"})
        )
    ).assign(cluster=lambda s: s["task"] - 1)
    direct = turns.decay(joint.cluster_weights(12, 300, 7), scores, ["steady", "forgetful"])
    assert direct["forgetful"]["ci95"] == [lo, hi]


def test_people_s_per_turn_scores_are_the_basis_when_reviewed():
    b, gens = turn_campaign(n_tasks=3)
    # people scored 'forgetful' 5 5 4 2 1 on a 1..5 turn scale: normalized 1 1 .75 .25 0
    for task in (1, 2, 3):
        b.settled_item(
            task,
            0,
            {
                gens[task, "forgetful", 0]: {
                    f"turn_quality@{n}": v for n, v in enumerate((5, 5, 4, 2, 1), start=1)
                }
                | {"accuracy": 3},
                gens[task, "steady", 0]: {f"turn_quality@{n}": 5 for n in range(1, 6)}
                | {"accuracy": 5},
            },
        )
    st = {"dimension": "turn_quality", "min": 1, "max": 5}
    report = build_report(b.frames(), meta(score_turns=st), n_boot=100, seed=1)
    conv = report["conversation"]["forgetful"]
    assert conv["basis"] == "human"
    assert [p["mean"] for p in conv["turn_curve"]] == [1.0, 1.0, 0.75, 0.25, 0.0]
    assert conv["decay"]["value"] == -1.0
    assert conv["turn_curve"][0]["reason"] == "too few items (n=3)"
    # the per-turn scores stay out of the rubric's figures
    row = next(r for r in report["leaderboard"] if r["contender"] == "forgetful")
    assert set(row["scores"]) == {"accuracy"} and row["quality"] == 0.5


def test_per_turn_scoring_without_reviews_falls_back_to_the_turn_checks_and_says_so():
    b, _ = turn_campaign(n_tasks=3)
    st = {"dimension": "turn_quality", "min": 1, "max": 5}
    report = build_report(b.frames(), meta(score_turns=st), n_boot=50, seed=1)
    conv = report["conversation"]["forgetful"]
    assert conv["basis"] == "turn_checks" and "no item with them" in conv["basis_reason"]
    assert any(w.startswith("conversation: per-turn scores are on") for w in report["warnings"])


# --- conversations: single turn against the conversation --------------------------------------


def test_single_vs_multi_matches_the_hand_computation():
    report = build_report(single_multi_campaign(), meta(samples=4), n_boot=200, seed=1)
    lost = report["conversation"]["lost"]["single_vs_multi"]
    # per task, single: S1 .875, S2 1, S3 .625 -> .8333; conversation: .5, .75, .125 -> .4583
    assert (lost["single"], lost["multi"], lost["gap"], lost["n"]) == (0.833, 0.458, -0.375, 3)
    # 90th / 10th percentiles of 4 sorted scores sit at ranks 2.7 and 0.3:
    # S1 [0 .5 .5 1] -> .85 / .15; S2 [.5 .5 1 1] -> 1 / .5; S3 [0 0 0 .5] -> .35 / 0
    assert lost["aptitude"] == 0.733  # (.85 + 1 + .35) / 3
    assert lost["unreliability"] == 0.517  # (.7 + .5 + .35) / 3
    assert lost["single_aptitude"] == 0.95 and lost["single_unreliability"] == 0.233
    assert lost["ci95"] is None and lost["reason"] == "too few items (n=3)"
    even = report["conversation"]["even"]["single_vs_multi"]
    assert (even["gap"], even["aptitude"], even["unreliability"]) == (0.0, 1.0, 0.0)


def test_single_turn_rows_stay_out_of_every_other_figure():
    report = build_report(single_multi_campaign(), meta(samples=4), n_boot=50, seed=1)
    # 3 tasks x 4 conversation samples; the 12 single-turn rows are not pass-rate samples
    assert report["passes"]["lost"]["checks"]["n_samples"] == 12
    assert report["rates"]["lost"]["checks"]["must_include"]["n"] == 12
    # 'lost' conversation samples: must_include passes for scores >= .5: 3 + 4 + 1 = 8 of 12
    assert report["rates"]["lost"]["checks"]["must_include"]["rate"] == 0.667
