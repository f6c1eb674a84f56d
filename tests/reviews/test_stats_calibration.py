"""Calibration statistics on hand-built frames: published alpha values, hand-computed
leave-one-out pairs, confusion table, bias, position consistency and the verdict rule."""

import numpy as np
import pandas as pd
import pytest
from krippendorff import alpha as package_alpha

from reviews.stats import calibration, joint

# The published two-reviewer reference (ten items, 1-5 scale; docs/statistics.md).
R1 = [5, 4, 4, 3, 2, 5, 1, 3, 4, 2]
R2 = [4, 4, 5, 3, 2, 5, 2, 3, 3, 2]


def units(judge, panel, items=None):
    items = items or list(range(len(judge)))
    return pd.DataFrame(
        {"unit": range(len(judge)), "item": items, "panel": panel, "judge": judge, "spread": 0.0}
    )


def no_reviews():
    return pd.DataFrame(columns=["unit", "item", "reviewer", "value"])


@pytest.mark.parametrize(
    "level, expected", [("ordinal", 0.888), ("interval", 0.865), ("nominal", 0.506)]
)
def test_it_reproduces_the_published_alpha_of_judge_against_panel(level, expected):
    out = calibration.dimension_calibration(
        units(R1, R2), no_reviews(), {"min": 1, "max": 5, "level": level}, n_boot=200
    )
    assert out["judge_vs_panel"]["alpha"] == pytest.approx(expected, abs=5e-4)
    assert out["exact"] == pytest.approx(0.6)
    assert out["n"] == 10


def test_paired_alpha_matches_the_package_on_pairs():
    pairs = pd.DataFrame({"a": R1, "b": R2, "cluster": range(10)})
    weights = joint.cluster_weights(10, 50, 1)
    point, boot = calibration.paired_alpha(pairs, "interval", weights)
    assert point == pytest.approx(0.865, abs=5e-4)
    assert boot.shape == (50,)


def test_leave_one_out_pairs_are_each_reviewer_against_the_others():
    # Unit 0: reviewers 4, 2, 3 and the judge 5; unit 1: one reviewer only (left out).
    reviews = pd.DataFrame(
        {
            "unit": [0, 0, 0, 1],
            "item": [7, 7, 7, 8],
            "reviewer": ["a", "b", "c", "a"],
            "value": [4.0, 2.0, 3.0, 1.0],
        }
    )
    judged = pd.DataFrame({"unit": [0, 1], "value": [5.0, 1.0]})
    judge, people = calibration.loo_pairs(reviews, judged)
    # By hand: a against mean(2, 3) = 2.5, b against mean(4, 3) = 3.5, c against 3.0.
    assert people[["a", "b"]].values.tolist() == [[4.0, 2.5], [2.0, 3.5], [3.0, 3.0]]
    assert judge[["a", "b"]].values.tolist() == [[5.0, 2.5], [5.0, 3.5], [5.0, 3.0]]
    assert list(people["item"]) == [7, 7, 7]


def test_the_advantage_is_the_difference_of_the_two_sides_alphas():
    # Two reviewers on 12 items; the judge equals reviewer 2 except on two items.
    r1 = [5, 4, 4, 3, 2, 5, 1, 3, 4, 2, 1, 5]
    r2 = [4, 4, 5, 3, 2, 5, 2, 3, 3, 2, 1, 4]
    judge = [4, 4, 5, 3, 2, 5, 2, 3, 3, 2, 3, 2]
    reviews = pd.DataFrame(
        {
            "unit": list(range(12)) * 2,
            "item": list(range(12)) * 2,
            "reviewer": ["x"] * 12 + ["y"] * 12,
            "value": [float(v) for v in r1 + r2],
        }
    )
    panel = [(a + b) / 2 for a, b in zip(r1, r2, strict=True)]
    out = calibration.dimension_calibration(
        units(judge, panel), reviews, {"min": 1, "max": 5, "level": "interval"}, n_boot=300
    )
    # Written out by hand: the leave-one-out panel of x is y's score and the reverse.
    people = np.array([r1 + r2, r2 + r1], dtype=float)
    judged = np.array([judge + judge, r2 + r1], dtype=float)
    expected_people = package_alpha(reliability_data=people, level_of_measurement="interval")
    expected_judge = package_alpha(reliability_data=judged, level_of_measurement="interval")
    adv = out["advantage"]
    assert adv["reviewer_alpha"] == pytest.approx(expected_people, abs=1e-9)
    assert adv["judge_alpha"] == pytest.approx(expected_judge, abs=1e-9)
    assert adv["value"] == pytest.approx(expected_judge - expected_people, abs=1e-9)
    assert adv["ci95"][0] <= adv["value"] <= adv["ci95"][1]
    assert out["verdict"] == "insufficient"  # 12 items < 30
    assert "12 settled items" in out["reason"]


def test_the_verdict_follows_the_lower_bound_of_the_advantage():
    assert calibration.verdict(40, {"value": 0.0, "ci95": [-0.05, 0.04]})[0] == "calibrated"
    assert calibration.verdict(40, {"value": -0.1, "ci95": [-0.2, 0.0]})[0] == "not_calibrated"
    # The bound must be strictly above -epsilon.
    assert calibration.verdict(40, {"value": 0.0, "ci95": [-0.1, 0.1]})[0] == "not_calibrated"
    assert calibration.verdict(29, {"value": 0.3, "ci95": [0.2, 0.4]})[0] == "insufficient"
    name, reason = calibration.verdict(40, {"value": None, "ci95": None, "reason": "no variation"})
    assert name == "not_calibrated" and "no variation" in reason


def test_the_confusion_table_splits_a_value_between_two_points():
    table = calibration.confusion([1, 2, 2.5, 5, 4], [1, 3, 3, 4, 4], range(1, 6))
    assert table == [
        [1, 0, 0, 0, 0],
        [0, 0, 1.5, 0, 0],
        [0, 0, 0.5, 0, 0],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 1, 0],
    ]


def test_bias_is_the_mean_signed_difference_with_an_item_interval():
    judge = [min(v + 1, 5) for v in R2] * 3
    panel = R2 * 3
    out = calibration.dimension_calibration(
        units(judge, panel), no_reviews(), {"min": 1, "max": 5, "level": "ordinal"}, n_boot=300
    )
    diffs = np.array(judge) - np.array(panel)
    assert out["bias"]["value"] == pytest.approx(diffs.mean())
    assert out["bias"]["ci95"][0] > 0
    assert out["exact"] == pytest.approx((diffs == 0).mean())


def test_position_consistency_is_the_share_of_swapped_pairs_that_agree():
    pairs = pd.DataFrame({"first": ["1", "1", "2", "tie"], "second": ["1", "2", "2", "1"]})
    out = calibration.position_consistency(pairs)
    assert out["rate"] == 0.5 and out["n"] == 4
    assert out["ci95"][0] < 0.5 < out["ci95"][1]


def test_majority_is_the_most_frequent_choice_and_a_draw_is_a_tie():
    assert calibration.majority(["1", "1", "2"]) == "1"
    assert calibration.majority(["1", "2"]) == "tie"
    assert calibration.majority([]) is None


def test_an_advantage_equal_in_every_resample_is_judged_on_its_value():
    same = {"value": 0.0, "ci95": None, "reason": "all equal (n=40)"}
    assert calibration.verdict(40, same)[0] == "calibrated"
    worse = {"value": -0.2, "ci95": None, "reason": "all equal (n=40)"}
    assert calibration.verdict(40, worse)[0] == "not_calibrated"


def test_a_nominal_scale_has_no_bias():
    out = calibration.dimension_calibration(
        units([1, 2, 2, 3] * 10, [2, 2, 3, 3] * 10),
        no_reviews(),
        {"min": 1, "max": 3, "level": "nominal"},
        n_boot=50,
    )
    assert out["bias"]["value"] is None and "no direction" in out["bias"]["reason"]
    assert "systematically" not in out["reason"]
    assert out["within_one"] is None
