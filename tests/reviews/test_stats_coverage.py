"""Coverage as a test: simulated campaigns with a known truth, at 15 and 60 test cases.

The report's 95% intervals (one seeded bootstrap over test cases, expanded percentile tails)
must hold the truth 90-98% of the time for quality, pass@1, ratings and alpha. Pure statistics
functions, no database; a fixed seed makes the test deterministic. With a few hundred
campaigns the estimate of a coverage is good to about +-2.5 points (two standard errors).
"""

import numpy as np
import pandas as pd
import pytest

from reviews.stats import joint, ratings, reliability

ROUNDS = 300
LOW, HIGH = 0.90, 0.98


def covered(ci, truth) -> bool:
    return ci is not None and ci[0] <= truth <= ci[1]


def mean_coverage(rng, n, draw, truth, campaigns=400):
    """Coverage of the mean of one value per test case (quality, a pass rate), as the report
    computes it: `joint.group_means` over the draws, then `joint.interval`."""
    hits = 0
    for _ in range(campaigns):
        values = draw(n)
        w = joint.cluster_weights(n, ROUNDS, int(rng.integers(2**31)))
        _, boot = joint.group_means(w, np.arange(n), np.zeros(n, int), values, 1)
        hits += covered(joint.interval(boot[:, 0], n)[0], truth)
    return hits / campaigns


@pytest.mark.parametrize("n", [15, 60])
def test_quality_intervals_cover(n):
    rng = np.random.default_rng(1000 + n)
    # per-task quality on 0..1, skewed (Beta(3.5, 1.5): mean 0.7), as good models' scores are
    coverage = mean_coverage(rng, n, lambda k: rng.beta(3.5, 1.5, size=k), 0.7)
    assert LOW <= coverage <= HIGH, coverage


@pytest.mark.parametrize("n", [15, 60])
def test_pass_at_1_intervals_cover(n):
    rng = np.random.default_rng(2000 + n)

    def draw(k):
        # tasks differ in difficulty (pass chance ~ Beta(2.8, 1.2), mean 0.7); 3 samples each:
        # a task's pass@1 is its share of passing samples
        chance = rng.beta(2.8, 1.2, size=k)
        return rng.binomial(3, chance) / 3

    coverage = mean_coverage(rng, n, draw, 0.7)
    assert LOW <= coverage <= HIGH, coverage


@pytest.mark.parametrize("n", [15, 60])
def test_rating_intervals_cover(n):
    rng = np.random.default_rng(3000 + n)
    names = ["A", "B", "C"]
    truth = 1000 + np.array([80.0, 0.0, -80.0])  # Elo, centred on 1000
    hits = total = 0
    for _ in range(250):
        rows = []
        for t in range(n):
            for i, j in ((0, 1), (1, 2), (0, 2)):
                p = 1 / (1 + 10 ** ((truth[j] - truth[i]) / 400))
                rows.append((t, names[i], names[j], float(rng.random() < p)))
        battles = pd.DataFrame(rows, columns=["task", "a", "b", "score"])
        battles = battles.assign(item=battles["task"], cluster=battles["task"])
        w = joint.cluster_weights(n, ROUNDS, int(rng.integers(2**31)))
        bt = ratings.joint_ratings(battles, names, w)
        for i, name in enumerate(names):
            ci = bt["ci95"][name]
            if ci is None or None in ci:
                continue  # an undefeated / winless draw: its bound is tested elsewhere
            total += 1
            hits += covered(ci, truth[i])
    assert total > 600
    assert LOW <= hits / total <= HIGH, hits / total


def rater_pairs(rng, n):
    """Two reviewers score n outputs on 1..5: the output's latent value plus each reviewer's
    noise, rounded and clipped."""
    latent = rng.normal(3, 1, size=n)
    return [np.clip(np.round(latent + rng.normal(0, 0.6, n)), 1, 5) for _ in range(2)]


def population_alpha(rng) -> float:
    # interval alpha of an infinite sample: 1 - E[(r1 - r2)^2] / E[(x - y)^2] with x, y drawn
    # independently from all ratings (= 2 Var); 400,000 outputs pin it to about +-0.002
    r1, r2 = rater_pairs(rng, 400_000)
    pooled = np.concatenate([r1, r2])
    return 1 - np.mean((r1 - r2) ** 2) / (2 * pooled.var())


@pytest.mark.parametrize("n", [15, 60])
def test_alpha_intervals_cover(n):
    rng = np.random.default_rng(4000 + n)
    truth = population_alpha(rng)
    hits = total = 0
    for _ in range(300):
        r1, r2 = rater_pairs(rng, n)
        rows = [(u, "r1", v, u) for u, v in enumerate(r1)]
        rows += [(u, "r2", v, u) for u, v in enumerate(r2)]
        frame = pd.DataFrame(rows, columns=["unit", "coder", "value", "cluster"])
        w = joint.cluster_weights(n, ROUNDS, int(rng.integers(2**31)))
        ci = reliability.agreement_figures(frame, "interval", w)["ci95"]
        if ci is None:
            continue
        total += 1
        hits += covered(ci, truth)
    assert total > 280
    assert LOW <= hits / total <= HIGH, hits / total
