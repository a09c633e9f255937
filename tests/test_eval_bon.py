"""Exact best-of-N and pass@N against brute-force enumeration and the released resampling protocol."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.evaluate.bon import (
    exact_bon,
    exact_bon_one,
    exact_pass,
    exact_pass_one,
    first_sample,
    resample_bon,
    subset_avoid_table,
)
from prmkit.evaluate.pool import Pool


def brute_bon(scores, correct, has, n, pad):
    """Mean over every n-subset of pad slots of the released rule, ties split evenly."""
    total, count = 0.0, 0
    for subset in itertools.combinations(range(pad), n):
        count += 1
        real = [i for i in subset if i < len(scores) and has[i] and not np.isnan(scores[i])]
        if real:
            top = max(scores[i] for i in real)
            tied = [i for i in real if scores[i] == top]
            total += np.mean([bool(correct[i]) for i in tied])
    return total / count


def brute_pass(correct, has, n, pad):
    subsets = list(itertools.combinations(range(pad), n))
    return np.mean([any(i < len(correct) and correct[i] and has[i] for i in s) for s in subsets])


@st.composite
def small_pool(draw):
    m = draw(st.integers(1, 7))
    pad = m + draw(st.integers(0, 3))
    scores = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, float("nan")]), min_size=m, max_size=m))
    correct = draw(st.lists(st.booleans(), min_size=m, max_size=m))
    has = draw(st.lists(st.booleans(), min_size=m, max_size=m))
    n = draw(st.integers(1, pad))
    return np.array(scores), np.array(correct), np.array(has), n, pad


@settings(max_examples=300, deadline=None)
@given(small_pool())
def test_exact_bon_equals_enumeration_of_all_subsets(case):
    scores, correct, has, n, pad = case
    assert exact_bon_one(scores, correct, n, pad, has)[0] == pytest.approx(brute_bon(scores, correct, has, n, pad), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(small_pool())
def test_exact_pass_equals_enumeration(case):
    _, correct, has, n, pad = case
    assert exact_pass_one(correct, n, pad, has) == pytest.approx(brute_pass(correct, has, n, pad), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=30), st.integers(0, 20))
def test_oracle_best_of_n_is_monotone_in_n(correct, extra):
    pad = len(correct) + extra
    values = [exact_pass_one(correct, n, pad) for n in range(1, pad + 1)]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(values))
    # the oracle is best-of-N by the correctness column
    scores = np.asarray(correct, dtype=float)
    assert exact_bon_one(scores, correct, pad, pad)[0] == pytest.approx(values[-1])


def test_rank_formula_without_ties():
    # top of a random N-subset at rank k (1-based) has probability C(M-k, N-1)/C(M, N)
    from math import comb
    m, n = 9, 4
    correct = np.zeros(m, dtype=bool)
    for k in range(1, m + 1):
        correct[:] = False
        correct[k - 1] = True
        scores = -np.arange(m, dtype=float)  # sample k-1 has rank k
        assert exact_bon_one(scores, correct, n)[0] == pytest.approx(comb(m - k, n - 1) / comb(m, n))


def test_subset_avoid_table_matches_binomials():
    from math import comb
    for m, n in [(5, 1), (5, 5), (12, 4), (1860, 10)]:
        h = subset_avoid_table(m, n)
        for a in [0, n - 1, n, m // 2, m]:
            assert h[a] == pytest.approx(comb(a, n) / comb(m, n), rel=1e-9, abs=1e-300)
    with pytest.raises(ValueError):
        subset_avoid_table(4, 5)


def random_pool(rng, problems, size, ties=True, uneven=False):
    sizes = rng.integers(1, size + 1, problems) if uneven else np.full(problems, size)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    total = int(offsets[-1])
    has = rng.random(total) < 0.9
    correct = (rng.random(total) < np.repeat(rng.random(problems), sizes)) & has
    scores = rng.normal(size=total) + correct
    if ties:
        scores = np.round(scores, 1)
    return Pool([str(i) for i in range(problems)], offsets, correct, has,
                np.where(has, 0, -1).astype(np.int32), {"s": scores})


def test_dense_and_ragged_sort_paths_agree():
    rng = np.random.default_rng(1)
    pool = random_pool(rng, 40, 30, uneven=True)
    dense = exact_bon(pool, "s", [1, 3, 30])
    one_by_one = np.array([[exact_bon_one(pool.scores["s"][lo:hi], pool.correct[lo:hi], n, 30, pool.has_answer[lo:hi])[0]
                            for n in (1, 3, 30)] for lo, hi in zip(pool.offsets[:-1], pool.offsets[1:])])
    np.testing.assert_allclose(dense, one_by_one, atol=1e-12)
    # one huge pool among small ones forces the flat (ragged) sort
    big = random_pool(rng, 3, 400)
    mixed = Pool(["a", "b"], np.array([0, 400, 402]), big.correct[:402], big.has_answer[:402], big.group[:402],
                 {"s": big.scores["s"][:402]})
    ragged = exact_bon(mixed, "s", [1, 50])
    each = [exact_bon_one(mixed.scores["s"][lo:hi], mixed.correct[lo:hi], n, 400, mixed.has_answer[lo:hi])[0]
            for lo, hi in [(0, 400), (400, 402)] for n in (1, 50)]
    np.testing.assert_allclose(ragged.ravel(), each, atol=1e-12)


@pytest.mark.parametrize("pad", [None, 60])
def test_exact_agrees_with_released_resampling_within_3_se(pad):
    rng = np.random.default_rng(7)
    pool = random_pool(rng, 30, 40)
    ns = [1, 5, 10, 25, 40]
    trials = 400
    resampled = resample_bon(pool, "s", ns, trials=trials, pad_to=pad, seed=3)
    se = resampled.std(axis=0, ddof=1) / np.sqrt(trials)
    exact = exact_bon(pool, "s", ns, pad).mean(axis=0)
    assert np.all(np.abs(exact - resampled.mean(axis=0)) <= 3 * se + 1e-12), (exact, resampled.mean(0), se)
    oracle = resample_bon(pool, None, ns, trials=trials, pad_to=pad, seed=4)
    se = oracle.std(axis=0, ddof=1) / np.sqrt(trials)
    assert np.all(np.abs(exact_pass(pool, ns, pad).mean(axis=0) - oracle.mean(axis=0)) <= 3 * se + 1e-12)


def test_answerless_samples_use_budget_but_are_never_picked():
    # one correct answered sample and one answerless top-scored "correct" sample: N=1 picks 1/2 of the time
    scores, correct, has = np.array([0.1, 9.0]), np.array([True, True]), np.array([True, False])
    assert exact_bon_one(scores, correct, 1, has_answer=has)[0] == pytest.approx(0.5)
    assert exact_bon_one(scores, correct, 2, has_answer=has)[0] == pytest.approx(1.0)
    # padding to 4: N=2 finds the answered sample with probability 1 - C(3,2)/C(4,2) = 1/2
    assert exact_bon_one(scores, correct, 2, pad_to=4, has_answer=has)[0] == pytest.approx(0.5)


def test_ties_are_split_in_expectation():
    scores, correct = np.array([1.0, 1.0, 1.0, 0.0]), np.array([True, False, False, True])
    assert exact_bon_one(scores, correct, 4)[0] == pytest.approx(1 / 3)


def test_first_sample_and_pad_errors():
    pool = Pool(["a", "b"], np.array([0, 2, 3]), np.array([False, True, True]), np.ones(3, bool),
                np.zeros(3, np.int32), {"s": np.zeros(3)})
    assert first_sample(pool).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="smaller than the largest pool"):
        exact_bon(pool, "s", [1], pad_to=1)
    with pytest.raises(ValueError, match="no score column"):
        exact_bon(pool, "nope", [1])
