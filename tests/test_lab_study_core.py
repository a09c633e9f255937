"""The studies' shared maths: best-of-N per problem, the log-linear fit and the slope ratio with its CI."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.lab.study.core import bon_per_problem, log_fit, mean_ci, slope_ratio, solution_scores
from prmkit.schema import Problem, Solution


def _pool(rows):
    """rows: per problem, a list of (score, correct)."""
    sols, scores = [], []
    for p, row in enumerate(rows):
        for i, (s, ok) in enumerate(row):
            sols.append(Solution.from_steps(Problem(f"q{p}", id=f"p{p}"), ["x"], id=f"p{p}-{i}",
                                            grade="correct" if ok else "incorrect", answer="1" if ok else str(2 + i)))
            scores.append(s)
    return sols, np.array(scores, float)


def _brute(row, n, m_pad):
    """Best-of-n by enumeration of every n-subset of the pool padded with empty slots to ``m_pad`` (the
    released protocol: empty slots are dropped, ties split evenly, nothing left counts as wrong)."""
    total = 0.0
    subsets = list(itertools.combinations(range(m_pad), n))
    for sub in subsets:
        real = [i for i in sub if i < len(row)]
        if real:
            top = max(row[i][0] for i in real)
            total += np.mean([row[i][1] for i in real if row[i][0] == top])
    return total / len(subsets)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=6), min_size=1, max_size=4),
       st.integers(1, 6))
def test_bon_per_problem_equals_enumeration(rows, n):
    sols, scores = _pool(rows)
    got = bon_per_problem(sols, scores, n)
    assert got.shape == (len(rows),)
    m_pad = max(len(r) for r in rows)
    for value, row in zip(got, rows):
        assert value == pytest.approx(_brute(row, min(n, m_pad), m_pad), abs=1e-9)


def test_solution_scores_min_and_empty():
    probs = [np.array([[0.9, 0.1], [0.3, 0.7]]), np.zeros((0, 2))]
    assert solution_scores(probs).tolist() == [0.3, -np.inf]
    assert solution_scores(probs, "last")[0] == pytest.approx(0.3)


def test_log_fit_recovers_a_line_and_needs_two_sizes():
    labels = [100, 200, 400, 800]
    slope, intercept = log_fit(labels, [0.1 + 0.05 * np.log(x) for x in labels])
    assert slope == pytest.approx(0.05) and intercept == pytest.approx(0.1)
    with pytest.raises(ValueError):
        log_fit([5, 5], [0.1, 0.2])


def _curves(slope, seeds=3, problems=400, seed=0, labels=(1, 2, 4, 8)):
    rng = np.random.default_rng(seed)
    p = np.array([0.3 + slope * np.log(x) for x in labels])
    return (rng.random((seeds, len(labels), problems)) < p[None, :, None]).astype(float)


def test_slope_ratio_measures_a_known_factor_and_covers_it():
    labels = [1, 2, 4, 8]
    out = slope_ratio(labels, _curves(0.10, seed=1), _curves(0.05, seed=2), n_boot=400)
    assert out["factor"] == pytest.approx(2.0, rel=0.35)
    assert out["ci95"][0] < 2.0 < out["ci95"][1]


def test_slope_ratio_interval_covers_one_for_equal_arms():
    # Coverage, not one lucky draw: 12 independent pairs of equal-slope arms; a 95% interval should
    # miss 1 about 0.6 times in 12, and 4 misses would be a broken interval.
    covered = 0
    for k in range(12):
        lo, hi = slope_ratio([1, 2, 4, 8], _curves(0.05, seed=100 + k), _curves(0.05, seed=200 + k), n_boot=200)["ci95"]
        covered += lo < 1.0 < hi
    assert covered >= 9


def test_slope_ratio_flat_baseline_is_infinite_not_an_error():
    labels = [1, 2, 4]
    flat = np.ones((2, 3, 10)) * 0.5
    out = slope_ratio(labels, _curves(0.1, seeds=2, problems=10, labels=labels), flat, n_boot=50)
    assert out["factor"] == np.inf and out["non_positive_baseline_share"] == 1.0
    with pytest.raises(ValueError, match="seeds, budgets"):
        slope_ratio(labels, flat, flat[:, :2])


def test_mean_ci_brackets_the_mean():
    x = _curves(0.0, seeds=3, problems=300, labels=(1,))[:, 0]
    out = mean_ci(x, n_boot=300)
    assert out["ci95"][0] <= out["mean"] <= out["ci95"][1] and len(out["per_seed"]) == 3
