"""Majority and weighted voting: Monte Carlo against brute-force enumeration; weights; bootstrap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.evaluate.bootstrap import bootstrap_ci, bootstrap_means
from prmkit.evaluate.pool import Pool
from prmkit.evaluate.vote import draw_subsets, vote_curve, vote_curves, vote_rounds, vote_weights


def brute_vote(group, correct, weight, n, pad):
    """Exact expectation of the vote over every n-subset of pad slots (ties split evenly)."""
    total, count = 0.0, 0
    for subset in itertools.combinations(range(pad), n):
        count += 1
        tally, members = {}, {}
        for i in subset:
            if i < len(group) and group[i] >= 0:
                tally[group[i]] = tally.get(group[i], 0.0) + weight[i]
                members.setdefault(group[i], []).append(correct[i])
        if tally:
            best = max(tally.values())
            tied = [g for g, v in tally.items() if v == best]
            total += np.mean([np.mean(members[g]) for g in tied])
    return total / count


@st.composite
def vote_case(draw):
    m = draw(st.integers(1, 7))
    pad = m + draw(st.integers(0, 2))
    group = draw(st.lists(st.integers(-1, 2), min_size=m, max_size=m))
    # grades agree within a group, as for a consistent grader
    group_ok = draw(st.lists(st.booleans(), min_size=3, max_size=3))
    correct = [g >= 0 and group_ok[g] for g in group]
    weight = draw(st.lists(st.sampled_from([0.25, 0.5, 1.0]), min_size=m, max_size=m))
    return np.array(group), np.array(correct), np.array(weight), draw(st.integers(1, pad)), pad


@settings(max_examples=60, deadline=None)
@given(vote_case(), st.booleans())
def test_vote_monte_carlo_agrees_with_enumeration(case, weighted):
    group, correct, weight, n, pad = case
    w = weight if weighted else np.ones(group.size)
    exact = brute_vote(group, correct, w, n, pad)
    rounds = 4000
    vals = vote_rounds(group, correct, w, pad, n, rounds, np.random.default_rng(0))
    se = vals.std(ddof=1) / np.sqrt(rounds)
    assert abs(vals.mean() - exact) <= 4 * se + 1e-9


def _pool(groups, correct, weights=None):
    sizes = [len(g) for g in groups]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    flat_g = np.concatenate(groups).astype(np.int32)
    return Pool([str(i) for i in range(len(groups))], offsets, np.concatenate(correct).astype(bool), flat_g >= 0,
                flat_g, {"w": np.concatenate(weights) if weights else np.ones(flat_g.size)})


def test_vote_curve_reaches_target_se_and_matches_enumeration():
    rng = np.random.default_rng(0)
    groups = [rng.integers(-1, 3, 6) for _ in range(20)]
    ok = [rng.random(3) < 0.5 for _ in range(20)]
    correct = [np.array([g >= 0 and o[g] for g in grp]) for grp, o in zip(groups, ok)]
    pool = _pool(groups, correct)
    est = vote_curve(pool, [1, 3, 6], target_se=0.004, seed=1)
    exact = np.array([[brute_vote(g, c, np.ones(6), n, 6) for n in (1, 3, 6)] for g, c in zip(groups, correct)]).mean(0)
    assert np.all(est.se <= 0.004 + 1e-9)
    assert np.all(np.abs(est.per_problem.mean(0) - exact) <= 4 * est.se + 1e-9)
    assert est.rounds[-1] == 1 and est.se[-1] == 0  # N = M: every sample drawn, the vote is deterministic


@pytest.mark.parametrize("m,n", [(8, 2), (8, 1), (9, 3)])  # blocks of one ordering; (9, 3): a draw per row
def test_drawn_subsets_are_uniform(m, n):
    rows = draw_subsets(np.random.default_rng(0), m, n, 20_000)[0]
    assert rows.shape == (20_000, n) and all(len(set(r)) == n for r in rows[:500].tolist())
    subsets = list(itertools.combinations(range(m), n))
    counts = np.zeros(len(subsets))
    index = {s: i for i, s in enumerate(subsets)}
    for r in np.sort(rows, axis=1).tolist():
        counts[index[tuple(r)]] += 1
    expected = 20_000 / len(subsets)
    assert np.abs(counts - expected).max() <= 5 * np.sqrt(expected)


def test_rows_cut_from_one_ordering_are_disjoint():
    rows = draw_subsets(np.random.default_rng(1), 100, 5, 20)[0]  # 20 blocks of one ordering
    assert len(set(rows.ravel().tolist())) == 100


def _random_pool(rng, problems, m, k):
    groups = [rng.integers(-1, k, m) for _ in range(problems)]
    ok = [rng.random(k) < 0.4 for _ in range(problems)]
    correct = [np.array([g >= 0 and o[g] for g in grp]) for grp, o in zip(groups, ok)]
    return _pool(groups, correct, [rng.random(m) for _ in range(problems)])


def test_standard_error_errs_on_the_safe_side():
    """Rows of one ordering are disjoint, and the standard error is computed as if they were independent:
    across seeds the estimates spread by no more than it says."""
    pool = _random_pool(np.random.default_rng(5), 10, 40, 4)
    ns = [1, 2, 4, 8, 16]
    runs = [vote_curves(pool, ns, {"maj": None, "w": pool.column("w")}, target_se=0.0, min_rounds=50,
                        max_rounds=50, seed=s) for s in range(60)]
    for name in ("maj", "w"):
        spread = np.array([r[name].per_problem.mean(0) for r in runs]).std(0, ddof=1)
        said = np.array([r[name].se for r in runs]).mean(0)
        assert np.all(spread <= 1.25 * said), (name, spread / said)


def test_a_number_does_not_depend_on_the_other_curves_or_ns():
    pool = _random_pool(np.random.default_rng(2), 6, 30, 3)
    fixed = dict(target_se=0.0, min_rounds=40, max_rounds=40, seed=3)
    alone = vote_curve(pool, [4], **fixed).per_problem[:, 0]
    together = vote_curves(pool, [1, 4, 16], {"maj_acc": None, "w": pool.column("w")}, **fixed)
    assert np.array_equal(together["maj_acc"].per_problem[:, 1], alone)
    # common random numbers: at N = 1 one sample decides, whatever its weight
    assert np.array_equal(together["maj_acc"].per_problem[:, 0], together["w"].per_problem[:, 0])


def test_majority_groups_by_group_not_string():
    # answers "1/2" and "0.5" share a group: together they outvote two "3"s
    pool = _pool([np.array([0, 0, 1, 1, 0])], [np.array([1, 1, 0, 0, 1])])
    assert vote_curve(pool, [5]).per_problem[0, 0] == 1.0


def test_weighted_vote_sums_weights_and_ignores_absent_groups():
    # negative raw weights: an absent group (sum 0) must not win
    group, correct, weight = np.array([0, 1]), np.array([True, False]), np.array([-1.0, -3.0])
    vals = vote_rounds(group, correct, weight, 2, 1, 200, np.random.default_rng(0))
    assert set(np.unique(vals)) <= {0.0, 1.0} and 0 < vals.mean() < 1
    assert vote_rounds(group, correct, weight, 2, 2, 1, np.random.default_rng(0)).tolist() == [1.0]


def test_vote_weights_transforms():
    w, used = vote_weights(np.array([-2.0, 0.0, np.nan]), "auto")
    assert used == "sigmoid" and w[1] == pytest.approx(0.5) and np.isnan(w[2])
    with pytest.raises(ValueError):
        vote_weights(np.array([0.5]), "softmax")


def test_bootstrap_ci_covers_the_mean_and_shrinks_with_problems():
    rng = np.random.default_rng(0)
    small, large = rng.random((50, 1)), rng.random((5000, 1))
    lo_s, hi_s = bootstrap_ci(small, n_boot=1000)
    lo_l, hi_l = bootstrap_ci(large, n_boot=1000)
    assert lo_s[0] < small.mean() < hi_s[0] and lo_l[0] < large.mean() < hi_l[0]
    assert hi_l[0] - lo_l[0] < hi_s[0] - lo_s[0]
    # normal approximation: width ~ 2 * 1.96 * sd / sqrt(P)
    assert hi_l[0] - lo_l[0] == pytest.approx(2 * 1.96 * large.std() / np.sqrt(5000), rel=0.15)
    assert bootstrap_means(small, n_boot=7, seed=1).shape == (7, 1)
