"""Krippendorff's alpha and agreement against the published values (docs/statistics.md)."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.stats.agreement import band, categorical_codes, coincidence_alpha, krippendorff_alpha

# Krippendorff's textbook example (3 coders x 15 units), also on Wikipedia; "." = missing.
TEXTBOOK = """\
. . . . . 3 4 1 2 1 1 3 3 . 3
1 . 2 1 3 3 4 3 . . . . . . .
. . 2 1 3 4 4 . 2 1 1 3 3 . 4"""
R1 = [5, 4, 4, 3, 2, 5, 1, 3, 4, 2]
R2 = [4, 4, 5, 3, 2, 5, 2, 3, 3, 2]


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["unit", "coder", "value"])


def textbook() -> pd.DataFrame:
    return frame(
        (u, c, np.nan if v == "." else float(v))
        for c, line in enumerate(TEXTBOOK.splitlines())
        for u, v in enumerate(line.split())
    )


def two_reviewers() -> pd.DataFrame:
    return frame(
        [(u, "r1", v) for u, v in enumerate(R1)] + [(u, "r2", v) for u, v in enumerate(R2)]
    )


@pytest.mark.parametrize(("level", "expected"), [("nominal", 0.691), ("interval", 0.811)])
def test_it_matches_the_textbook_reference(level, expected):
    result = krippendorff_alpha(textbook(), level, n_boot=200)
    assert result["alpha"] == pytest.approx(expected, abs=5e-4)
    assert result["level"] == level
    # Units 2 and 14 have no pairable ratings, unit 1 only one rating.
    assert result["n_units"] == 12


@pytest.mark.parametrize(
    ("level", "expected"), [("nominal", 0.506), ("ordinal", 0.888), ("interval", 0.865)]
)
def test_it_matches_the_two_reviewer_reference(level, expected):
    result = krippendorff_alpha(two_reviewers(), level, n_boot=200)
    assert result["alpha"] == pytest.approx(expected, abs=5e-4)
    assert result["exact"] == pytest.approx(0.6)
    # every pair differs by at most one point
    assert result["within_one"] == pytest.approx(1.0)
    assert result["n_units"] == 10 and result["n_ratings"] == 20


def test_it_matches_krippendorffs_2011_ordinal_example():
    # Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), 4 coders x 12 units:
    # ordinal alpha 0.815 (also the krippendorff package's documented example).
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    ratings = frame(
        (u, c, np.nan if v is None else v) for c, row in enumerate(data) for u, v in enumerate(row)
    )
    assert krippendorff_alpha(ratings, "ordinal", n_boot=100)["alpha"] == pytest.approx(
        0.815, abs=5e-4
    )


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_its_bootstrap_formula_agrees_with_the_package(level):
    # The bootstrap re-implements the coincidence formula; at the point estimate it must
    # give the package's value exactly.
    for data in (textbook(), two_reviewers()):
        assert coincidence_alpha(data, level) == pytest.approx(
            krippendorff_alpha(data, level, n_boot=0)["alpha"]
        )


def test_its_confidence_interval_is_reproducible_and_brackets_alpha():
    data = two_reviewers()
    first = krippendorff_alpha(data, "interval", seed=3)
    assert first == krippendorff_alpha(data, "interval", seed=3)
    lo, hi = first["ci95"]
    assert lo < first["alpha"] < hi
    assert krippendorff_alpha(data, "interval", seed=4)["ci95"] != first["ci95"]


def test_its_interval_narrows_with_more_units():
    rng = np.random.default_rng(0)

    def sample(n):
        truth = rng.integers(1, 6, n)
        noisy = np.clip(truth + rng.integers(-1, 2, n), 1, 5)
        return frame(
            [(u, "a", float(t)) for u, t in enumerate(truth)]
            + [(u, "b", float(v)) for u, v in enumerate(noisy)]
        )

    small = krippendorff_alpha(sample(30), "ordinal")["ci95"]
    large = krippendorff_alpha(sample(3000), "ordinal")["ci95"]
    assert large[1] - large[0] < (small[1] - small[0]) / 4


def test_it_bands_alpha_as_the_spec_says():
    assert band(0.800) == "reliable"
    assert band(0.7999) == "tentative"
    assert band(0.667) == "tentative"
    assert band(0.6669) == "unreliable"
    assert band(None) is None


def test_it_returns_null_with_a_reason_when_no_unit_was_rated_twice():
    data = frame([(0, "a", 3.0), (1, "b", 4.0), (2, "a", np.nan)])
    result = krippendorff_alpha(data, "ordinal")
    assert result["alpha"] is None and result["ci95"] is None
    assert "two or more reviewers" in result["reason"]
    assert result["n_units"] == 0


def test_it_returns_null_with_a_reason_when_there_is_no_variation():
    data = frame([(u, c, 4.0) for u in range(5) for c in ("a", "b")])
    result = krippendorff_alpha(data, "interval")
    assert result["alpha"] is None
    assert "same value" in result["reason"]
    assert result["exact"] == 1.0


def test_paired_ratings_without_variation_give_a_reason_and_no_warning():
    # Every pair agrees; only a unit rated once holds another value.
    data = frame([(u, c, 4.0) for u in range(4) for c in ("a", "b")] + [(9, "a", 2.0)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = krippendorff_alpha(data, "ordinal")
    assert result["alpha"] is None
    assert "no variation" in result["reason"]
    assert [str(w.message) for w in caught] == []


def test_it_returns_null_for_an_empty_frame():
    result = krippendorff_alpha(frame([]), "nominal")
    assert result["alpha"] is None and result["reason"]


def test_it_rejects_an_unknown_level():
    with pytest.raises(ValueError):
        krippendorff_alpha(two_reviewers(), "likert")


def test_preference_alpha_is_nominal_on_the_choice():
    # Three items; both reviewers pick the same contender twice, disagree once (tie vs x).
    choices = pd.Series(["model-x", "model-x", "tie", "model-y", "model-y", "model-y"])
    coded = categorical_codes(choices)
    ratings = frame(
        [
            (0, "a", coded[0]),
            (0, "b", coded[1]),
            (1, "a", coded[3]),
            (1, "b", coded[4]),
            (2, "a", coded[2]),
            (2, "b", coded[5]),
        ]
    )
    result = krippendorff_alpha(ratings, "nominal", n_boot=100, numeric=False)
    assert result["exact"] == pytest.approx(2 / 3)
    assert result["within_one"] is None
    # Hand computation: coincidences x-x 2, y-y 2, tie-y 1, y-tie 1; n = 6;
    # D_o = 2/6, D_e = (6*6 - (4 + 9 + 1)) / (6 * 5) = 22/30 -> alpha = 1 - (1/3) / (22/30)
    assert result["alpha"] == pytest.approx(1 - (1 / 3) / (22 / 30))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.sampled_from(["r1", "r2", "r3"]), st.integers(1, 5)),
        min_size=4,
        max_size=60,
        unique_by=lambda t: (t[0], t[1]),
    )
)
def test_alpha_and_its_interval_do_not_depend_on_ids_or_row_order(rows):
    data = frame([(u, c, float(v)) for u, c, v in rows])
    first = krippendorff_alpha(data, "ordinal", n_boot=50, seed=2)
    renamed = data.assign(unit=data["unit"] * 13 + 5, coder="x" + data["coder"]).iloc[::-1]
    assert krippendorff_alpha(renamed, "ordinal", n_boot=50, seed=2) == first
