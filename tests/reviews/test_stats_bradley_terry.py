"""Bradley-Terry on the Elo scale against the published values (docs/statistics.md)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.stats.bradley_terry import RIDGE, bradley_terry, mle_exists, ranks, win_matrix


def battles(spec) -> pd.DataFrame:
    """spec: [(a, b, wins_of_a, losses_of_a, ties)] -> one row per battle, one item each."""
    rows, item = [], 0
    for a, b, wins, losses, ties in spec:
        for score, count in ((1.0, wins), (0.0, losses), (0.5, ties)):
            for _ in range(count):
                rows.append((item, a, b, score))
                item += 1
    return pd.DataFrame(rows, columns=["item", "a", "b", "score"])


def test_it_matches_the_two_contender_reference():
    result = bradley_terry(battles([("A", "B", 3, 1, 0)]), ["A", "B"], n_boot=100)
    assert result["ratings"]["A"] == pytest.approx(1095.42, abs=0.005)
    assert result["ratings"]["B"] == pytest.approx(904.58, abs=0.005)
    assert result["ridge"] is None
    assert result["record"]["A"] == {"wins": 3, "losses": 1, "ties": 0}


def test_it_matches_the_three_contender_reference():
    data = battles([("A", "B", 2, 1, 0), ("B", "C", 2, 1, 0), ("A", "C", 4, 1, 0)])
    ratings = bradley_terry(data, ["A", "B", "C"], n_boot=100)["ratings"]
    assert ratings["A"] == pytest.approx(1120.41, abs=0.005)
    assert ratings["B"] == pytest.approx(1000.00, abs=0.005)
    assert ratings["C"] == pytest.approx(879.59, abs=0.005)


def test_it_rates_all_ties_equal():
    data = battles([("A", "B", 0, 0, 4), ("B", "C", 0, 0, 3), ("A", "C", 0, 0, 1)])
    result = bradley_terry(data, ["A", "B", "C"], n_boot=100)
    assert all(r == pytest.approx(1000.0, abs=1e-6) for r in result["ratings"].values())
    assert result["record"]["B"]["ties"] == 7
    assert set(result["rank"].values()) == {1}


def test_flipped_battles_give_identical_ratings():
    spec = [("A", "B", 2, 1, 1), ("B", "C", 2, 1, 0), ("A", "C", 4, 1, 2)]
    flipped = [(b, a, losses, wins, ties) for a, b, wins, losses, ties in spec]
    first = bradley_terry(battles(spec), ["A", "B", "C"], n_boot=0)["ratings"]
    second = bradley_terry(battles(flipped), ["A", "B", "C"], n_boot=0)["ratings"]
    assert first == pytest.approx(second, abs=1e-9)


def test_counting_every_battle_twice_gives_identical_ratings():
    spec = [("A", "B", 2, 1, 1), ("B", "C", 2, 1, 0), ("A", "C", 4, 1, 2)]
    doubled = [(a, b, 2 * won, 2 * lost, 2 * tied) for a, b, won, lost, tied in spec]
    first = bradley_terry(battles(spec), ["A", "B", "C"], n_boot=0)["ratings"]
    second = bradley_terry(battles(doubled), ["A", "B", "C"], n_boot=0)["ratings"]
    assert first == pytest.approx(second, abs=1e-9)


def test_a_tie_counts_half_a_win_each():
    w = win_matrix(battles([("A", "B", 1, 0, 2)]), ["A", "B"])
    assert w.tolist() == [[2.0, 1.0], [1.0, 0.0]] or w.tolist() == [[0.0, 2.0], [1.0, 0.0]]
    # one win + two ties = 2 "wins" for A, 1 for B: same fit as 2:1
    tied = bradley_terry(battles([("A", "B", 1, 0, 2)]), ["A", "B"], n_boot=0)["ratings"]
    plain = bradley_terry(battles([("A", "B", 2, 1, 0)]), ["A", "B"], n_boot=0)["ratings"]
    assert tied == pytest.approx(plain, abs=1e-9)


def test_the_rank_rule_matches_the_reference():
    lower = {"A": 1100, "B": 1090, "C": 1000}
    upper = {"A": 1150, "B": 1120, "C": 1080}
    assert ranks(list(lower.values()), list(upper.values())) == [1, 1, 3]


def test_an_undefeated_contender_gets_a_reported_ridge():
    data = battles([("A", "B", 5, 0, 0), ("B", "C", 2, 1, 0)])
    result = bradley_terry(data, ["A", "B", "C"], n_boot=200)
    assert result["ridge"] == RIDGE
    assert result["undefeated"] == ["A"]
    assert result["winless"] == []
    ratings = result["ratings"]
    assert ratings["A"] > ratings["B"] > ratings["C"]
    assert sum(ratings.values()) == pytest.approx(3000.0)
    assert all(abs(r) < 10_000 for r in ratings.values())  # finite, not diverged


def test_a_winless_contender_is_reported():
    data = battles([("A", "B", 2, 1, 0), ("A", "C", 3, 0, 0), ("B", "C", 1, 0, 0)])
    result = bradley_terry(data, ["A", "B", "C"], n_boot=50)
    assert result["winless"] == ["C"] and result["ridge"] == RIDGE


def test_a_disconnected_comparison_graph_is_reported_not_rated():
    data = battles([("A", "B", 2, 1, 0), ("C", "D", 1, 1, 0)])
    result = bradley_terry(data, ["A", "B", "C", "D"], n_boot=50)
    assert result["components"] == [["A", "B"], ["C", "D"]]
    assert all(v is None for v in result["ratings"].values())
    assert all(v is None for v in result["rank"].values())
    assert "disconnected" in result["reason"]


def test_mle_existence_is_strong_connectivity():
    import numpy as np

    assert mle_exists(np.array([[0, 1], [1, 0]]))
    assert not mle_exists(np.array([[0, 1], [0, 0]]))
    # A beat B, B beat C, C beat A: a cycle, strongly connected
    assert mle_exists(np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]]))


def test_the_bootstrap_is_reproducible_and_brackets_the_ratings():
    data = battles([("A", "B", 30, 20, 5), ("B", "C", 25, 20, 3), ("A", "C", 35, 15, 2)])
    first = bradley_terry(data, ["A", "B", "C"], seed=11)
    assert first == bradley_terry(data, ["A", "B", "C"], seed=11)
    for name, (lo, hi) in first["ci95"].items():
        assert lo < first["ratings"][name] < hi
    assert first["rank"]["A"] == 1


def test_too_little_data_is_null_with_a_reason():
    empty = pd.DataFrame(columns=["item", "a", "b", "score"])
    result = bradley_terry(empty, ["A", "B"])
    assert result["ratings"] == {"A": None, "B": None}
    assert result["reason"]
    assert bradley_terry(empty, ["A"])["reason"] == "fewer than two contenders"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0])),
        min_size=3,
        max_size=25,
    ).filter(lambda rows: all(a != b for a, b, _ in rows))
)
def test_ratings_do_not_depend_on_names_order_or_ids(rows):
    names = ["A", "B", "C", "D"]
    data = pd.DataFrame(
        [(i, names[a], names[b], s) for i, (a, b, s) in enumerate(rows)],
        columns=["item", "a", "b", "score"],
    )
    first = bradley_terry(data, names, n_boot=30, seed=1)
    # other contender order, other item ids, rows shuffled: the same figures per name
    relabelled = data.assign(item=data["item"] * 7 + 1000).iloc[::-1]
    second = bradley_terry(relabelled, names[::-1], n_boot=30, seed=1)
    assert first["components"] == (None if second["components"] is None else first["components"])
    for name in names:
        if first["ratings"][name] is None:
            assert second["ratings"][name] is None
            continue
        assert first["ratings"][name] == pytest.approx(second["ratings"][name], abs=1e-6)
        assert first["ci95"][name] == pytest.approx(second["ci95"][name], abs=1e-6)
    rated = [r for r in first["ratings"].values() if r is not None]
    if rated:
        assert sum(rated) / len(rated) == pytest.approx(1000.0)


def test_a_contender_without_comparisons_is_left_out_and_the_others_are_rated():
    # C failed every generation: it was never in an item, so it has no battles at all
    data = battles([("A", "B", 3, 1, 0)])
    result = bradley_terry(data, ["A", "C", "B"], n_boot=100)
    assert result["ratings"]["A"] == pytest.approx(1095.42, abs=0.005)
    assert result["ratings"]["B"] == pytest.approx(904.58, abs=0.005)
    assert result["ratings"]["C"] is None and result["ci95"]["C"] is None
    assert result["rank"]["C"] is None
    assert result["unrated"] == [
        {
            "contender": "C",
            "reason": "no comparisons: none of its outputs was compared "
            "in an item with a final outcome",
        }
    ]
    assert result["components"] is None and result["reason"] is None
    assert result["bootstrap"]["rounds"] == 100
    assert result["rank"]["A"] is not None and result["rank"]["B"] is not None
    for name in ("A", "B"):
        lo, hi = result["ci95"][name]
        assert lo <= result["ratings"][name] <= hi
    assert result["record"]["C"] == {"wins": 0, "losses": 0, "ties": 0}
    assert list(result["ratings"]) == ["A", "C", "B"]


def test_a_disconnected_graph_beside_an_unrated_contender_is_still_reported():
    data = battles([("A", "B", 2, 1, 0), ("C", "D", 1, 1, 0)])
    result = bradley_terry(data, ["E", "A", "B", "C", "D"], n_boot=50)
    assert result["components"] == [["A", "B"], ["C", "D"]]
    assert "disconnected" in result["reason"]
    assert [u["contender"] for u in result["unrated"]] == ["E"]
    assert all(v is None for v in result["ratings"].values())


def test_nobody_is_listed_unrated_when_there_are_no_battles_at_all():
    empty = pd.DataFrame(columns=["item", "a", "b", "score"])
    result = bradley_terry(empty, ["A", "B"])
    assert result["unrated"] == [] and result["reason"]


def test_the_bootstrap_resamples_items_not_votes():
    # The k reviews of an item are correlated, so items are resampled. Three identical
    # votes per item carry no more information than one: the intervals stay as wide (up to
    # Monte Carlo noise). Resampling votes would narrow them by about 1/sqrt(3), as the same
    # votes filed as separate items do.
    rng = np.random.default_rng(7)
    rows = []
    for item in range(40):
        for a, b, p in (("A", "B", 0.65), ("B", "C", 0.6), ("A", "C", 0.75)):
            u = rng.random()
            rows.append((item, a, b, 1.0 if u < p else 0.0 if u > p + 0.1 else 0.5))
    once = pd.DataFrame(rows, columns=["item", "a", "b", "score"])
    thrice = pd.concat([once] * 3, ignore_index=True)
    as_items = thrice.assign(item=range(len(thrice)))

    def widths(data):
        result = bradley_terry(data, ["A", "B", "C"], seed=1)
        assert result["ridge"] is None
        return np.array([hi - lo for lo, hi in result["ci95"].values()])

    base = widths(once)
    assert np.all((widths(thrice) / base > 0.85) & (widths(thrice) / base < 1.2))
    assert np.all(widths(as_items) / base < 0.75)
