"""Dispute rules on plain data (no database)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.disputes.rules import ReviewData, disputed_cells, settle

RUBRIC = [
    {"key": "accuracy", "min": 1, "max": 5},  # default max_gap 1
    {"key": "style", "min": 1, "max": 5, "max_gap": 2},
]
OUTS = ["11", "12"]


def review(acc=(4, 4), style=(3, 3), preference="", flags=None) -> ReviewData:
    return ReviewData(
        scores={o: {"accuracy": a, "style": s} for o, a, s in zip(OUTS, acc, style, strict=True)},
        preference=preference,
        flags=flags or {},
    )


def run(*reviews, flags_dispute=False):
    return settle(rubric=RUBRIC, outputs=OUTS, reviews=list(reviews), flags_dispute=flags_dispute)


def disputed_parts(outcome):
    return sorted((r["part"], r["output"]) for r in outcome.reasons if r["disputes"])


def test_it_agrees_when_the_gap_equals_the_allowed_gap_and_takes_the_mean():
    outcome = run(review(acc=(4, 2), style=(1, 5)), review(acc=(5, 3), style=(3, 3)))
    assert not outcome.disputed
    assert outcome.state == "agreed"
    assert outcome.reasons == []
    assert outcome.final["scores"] == {
        "11": {"accuracy": 4.5, "style": 2.0},
        "12": {"accuracy": 2.5, "style": 4.0},
    }


def test_it_disputes_a_gap_one_above_the_allowed_gap():
    outcome = run(review(acc=(4, 2), style=(1, 5)), review(acc=(2, 2), style=(4, 5)))
    assert outcome.disputed and outcome.state == "disputed"
    assert disputed_parts(outcome) == [("accuracy", "11"), ("style", "11")]
    # Disputed cells wait for the arbiter; agreed ones are the mean.
    assert outcome.final["scores"]["11"] == {"accuracy": None, "style": None}
    assert outcome.final["scores"]["12"] == {"accuracy": 2.0, "style": 5.0}
    acc = next(r for r in outcome.reasons if r["part"] == "accuracy")
    assert acc["detail"] == "scores 4, 2 differ by 2 (allowed 1)"


def test_it_honours_a_zero_gap_and_fractional_gaps():
    rubric = [{"key": "exact", "max_gap": 0}, {"key": "fine", "max_gap": 0.5}]
    agreed = settle(
        rubric=rubric,
        outputs=["1"],
        reviews=[
            ReviewData(scores={"1": {"exact": 3, "fine": 3.5}}),
            ReviewData(scores={"1": {"exact": 3, "fine": 3.0}}),
        ],
    )
    assert not agreed.disputed
    assert agreed.final["scores"]["1"] == {"exact": 3.0, "fine": 3.25}
    disputed = settle(
        rubric=rubric,
        outputs=["1"],
        reviews=[
            ReviewData(scores={"1": {"exact": 3, "fine": 4.0}}),
            ReviewData(scores={"1": {"exact": 4, "fine": 3.0}}),
        ],
    )
    assert sorted(r["part"] for r in disputed.reasons) == ["exact", "fine"]


def test_it_disputes_na_against_a_score_and_agrees_on_na_from_everyone():
    outcome = run(review(acc=(None, None)), review(acc=(None, 3)))
    assert disputed_parts(outcome) == [("accuracy", "12")]
    assert outcome.final["scores"]["11"]["accuracy"] is None
    reason = outcome.reasons[0]
    assert reason["detail"] == "N/A against a score (N/A, 3)"
    both_na = run(review(acc=(None, 4)), review(acc=(None, 4)))
    assert not both_na.disputed
    assert both_na.final["scores"]["11"]["accuracy"] is None


def test_it_treats_a_missing_score_like_na():
    outcome = settle(
        rubric=RUBRIC,
        outputs=["1"],
        reviews=[
            ReviewData(scores={"1": {"accuracy": 4, "style": 3}}),
            ReviewData(scores={"1": {"accuracy": 4}}),
        ],
    )
    assert disputed_parts(outcome) == [("style", "1")]


@pytest.mark.parametrize(
    ("first", "second", "disputed", "final"),
    [
        ("11", "11", False, "11"),
        ("11", "12", True, None),
        ("tie", "tie", False, "tie"),
        ("both_bad", "both_bad", False, "both_bad"),
        ("tie", "11", True, None),
        ("11", "tie", True, None),
        ("both_bad", "12", True, None),
        ("tie", "both_bad", True, None),
        ("", "", False, None),  # nobody gave a preference (rubric mode)
        ("", "12", False, "12"),  # an abstention is not compared
    ],
)
def test_it_compares_every_preference_combination(first, second, disputed, final):
    outcome = run(review(preference=first), review(preference=second))
    assert outcome.disputed is disputed
    assert outcome.final["preference"] == final
    assert (("preference", None) in disputed_cells(outcome.reasons)) is disputed


def test_it_records_a_one_sided_flag_without_disputing_by_default():
    a = review(flags={"11": ["hallucination", "refusal"]})
    b = review(flags={"11": ["refusal"]})
    outcome = run(a, b)
    assert not outcome.disputed
    assert outcome.reasons == [
        {
            "part": "flag",
            "output": "11",
            "flag": "hallucination",
            "disputes": False,
            "detail": "hallucination raised by 1 of 2 reviewers",
        }
    ]
    assert outcome.final["flags"] == {"11": ["refusal"], "12": []}
    assert disputed_cells(outcome.reasons) == set()


def test_it_disputes_a_one_sided_flag_when_the_campaign_says_so():
    outcome = run(review(flags={"12": ["unsafe"]}), review(), flags_dispute=True)
    assert outcome.disputed
    assert disputed_cells(outcome.reasons) == {("flag:unsafe", "12")}
    assert outcome.final["flags"] == {"11": [], "12": []}


def test_it_uses_the_pairwise_max_gap_with_three_reviewers():
    # 3, 4, 5: every neighbouring pair is within 1 but the extremes are 2 apart.
    outcome = run(review(acc=(3, 4)), review(acc=(4, 4)), review(acc=(5, 5)))
    assert disputed_parts(outcome) == [("accuracy", "11")]
    assert outcome.final["scores"]["12"]["accuracy"] == pytest.approx(13 / 3)
    agreed = run(
        review(acc=(4, 4), preference="tie"),
        review(acc=(5, 4), preference="tie"),
        review(acc=(4, 5), preference="tie"),
    )
    assert not agreed.disputed and agreed.final["preference"] == "tie"
    split = run(review(preference="11"), review(preference="11"), review(preference="12"))
    assert disputed_parts(split) == [("preference", None)]
    flag = run(review(flags={"11": ["unsafe"]}), review(flags={"11": ["unsafe"]}), review())
    assert flag.reasons[0]["detail"] == "unsafe raised by 2 of 3 reviewers"


def test_it_settles_a_single_review_as_agreed():
    outcome = run(review(acc=(2, 5), preference="12"))
    assert not outcome.disputed
    assert outcome.final["preference"] == "12"
    assert outcome.final["scores"]["11"]["accuracy"] == 2.0


def test_it_refuses_to_settle_without_reviews():
    with pytest.raises(ValueError):
        run()


cell = st.one_of(st.none(), st.integers(min_value=1, max_value=5))
choice = st.sampled_from(["", "11", "12", "tie", "both_bad"])


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(st.tuples(cell, cell), min_size=1, max_size=4),
    prefs=st.lists(choice, min_size=4, max_size=4),
    gap=st.integers(min_value=0, max_value=3),
)
def test_it_follows_the_rules_for_any_scores_and_in_any_review_order(cells, prefs, gap):
    """k = len(cells) reviewers; cells[i] = reviewer i's accuracy for outputs 11 and 12."""
    rubric = [{"key": "accuracy", "min": 1, "max": 5, "max_gap": gap}]
    reviews = [
        ReviewData(scores={"11": {"accuracy": a}, "12": {"accuracy": b}}, preference=p)
        for (a, b), p in zip(cells, prefs, strict=False)
    ]
    outcome = settle(rubric=rubric, outputs=OUTS, reviews=reviews)
    cells_disputed = disputed_cells(outcome.reasons)
    for index, output in enumerate(OUTS):
        values = [c[index] for c in cells]
        rated = [v for v in values if v is not None]
        expected = bool(rated) and (len(rated) < len(values) or max(rated) - min(rated) > gap)
        assert (("accuracy", output) in cells_disputed) is expected
        final = outcome.final["scores"][output]["accuracy"]
        if expected or not rated:
            assert final is None
        else:
            assert final == pytest.approx(sum(rated) / len(rated))
            assert min(rated) <= final <= max(rated)
    given_prefs = {p for p in prefs[: len(cells)] if p}
    assert (("preference", None) in cells_disputed) is (len(given_prefs) > 1)
    assert outcome.disputed is bool(cells_disputed)
    # The order in which reviews arrive never changes the decision or the final outcome.
    flipped = settle(rubric=rubric, outputs=OUTS, reviews=list(reversed(reviews)))
    assert disputed_cells(flipped.reasons) == cells_disputed
    assert flipped.final == outcome.final
