"""The maths of optimisation pressure: KL of best-of-n, the expected gold of the pick, Gao et al.'s fits."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.evaluate.bon import exact_bon
from prmkit.evaluate.pool import Pool
from prmkit.evaluate.pressure import (
    bon_expected,
    bootstrap_fit,
    exact_kl_bon,
    exact_kl_bon_with_replacement,
    fit_gao,
    gao_curve,
    gao_peak,
    kl_bon,
    where_peak,
)

# --- KL of best-of-n ---------------------------------------------------------------------------------

BIG_M = 200_000
POWERS = [2 ** i for i in range(13)]  # n = 1 .. 4096


@pytest.mark.parametrize("n", POWERS)
def test_exact_kl_converges_to_the_analytic_kl(n):
    # Tolerance: both finite-pool KLs lie within n/m of log n - (n-1)/n. Without replacement the
    # first-order excess is (n-1)/(2m) (n = m gives log m, a full nat above the formula); checking that
    # term to (n/m)^2 shows the convergence is the right one, not merely small.
    analytic, ratio = kl_bon(n), n / BIG_M
    without, with_ = exact_kl_bon(BIG_M, n), exact_kl_bon_with_replacement(BIG_M, n)
    assert abs(without - analytic) <= ratio
    assert abs(with_ - analytic) <= ratio
    assert abs(without - analytic - (n - 1) / (2 * BIG_M)) <= ratio ** 2


def brute_kl(m, n, replace):
    k = np.arange(1, m + 1)
    if replace:
        p = (k / m) ** n - ((k - 1) / m) ** n
    else:
        p = np.array([math.comb(int(j) - 1, n - 1) / math.comb(m, n) for j in k])
    p = p[p > 0]
    return float(np.sum(p * np.log(m * p)))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.data())
def test_exact_kl_matches_binomials_on_small_pools(m, data):
    n = data.draw(st.integers(1, m))
    assert exact_kl_bon(m, n) == pytest.approx(brute_kl(m, n, False), rel=1e-10, abs=1e-13)
    n = data.draw(st.integers(1, 3 * m))
    assert exact_kl_bon_with_replacement(m, n) == pytest.approx(brute_kl(m, n, True), rel=1e-10, abs=1e-13)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 100_000))
def test_best_of_one_is_free_and_best_of_all_is_log_m(m):
    assert exact_kl_bon(m, 1) == 0.0
    assert exact_kl_bon(m, m) == np.log(m)
    assert abs(exact_kl_bon_with_replacement(m, 1)) < 1e-12
    assert kl_bon(1) == 0.0


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 300))
def test_kl_increases_in_n(m):
    without = [exact_kl_bon(m, n) for n in range(1, m + 1)]
    with_ = [exact_kl_bon_with_replacement(m, n) for n in range(1, 2 * m + 1)]
    assert all(b > a for a, b in itertools.pairwise(without))
    assert all(b > a for a, b in itertools.pairwise(with_))
    assert all(b > a for a, b in itertools.pairwise(kl_bon(np.arange(1, m + 1))))


def test_kl_accepts_arrays_and_rejects_bad_sizes():
    assert kl_bon(np.array([1, 2, 8])).tolist() == [kl_bon(1), kl_bon(2), kl_bon(8)]
    assert exact_kl_bon(100_000, 50_000) > 0  # large n and m: no overflow, no NaN
    for bad in [lambda: kl_bon(0), lambda: exact_kl_bon(3, 4), lambda: exact_kl_bon(0, 1),
                lambda: exact_kl_bon_with_replacement(5, 1.5)]:
        with pytest.raises(ValueError):
            bad()


# --- the expected value of the pick ------------------------------------------------------------------

@st.composite
def pools(draw, max_problems=4, max_size=7):
    """Pools with tied scores, NaN scores, answerless samples, uneven sizes, padding, and float values."""
    sizes = draw(st.lists(st.integers(0, max_size), min_size=1, max_size=max_problems))
    if sum(sizes) == 0:
        sizes[0] = 1
    total = sum(sizes)
    scores = draw(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 1.0, float("nan")]), min_size=total, max_size=total))
    has = np.array(draw(st.lists(st.booleans(), min_size=total, max_size=total)))
    correct = np.array(draw(st.lists(st.booleans(), min_size=total, max_size=total))) & has
    values = draw(st.lists(st.floats(-2, 2, allow_nan=False), min_size=total, max_size=total))
    pad = max(sizes) + draw(st.integers(0, 3))
    pool = Pool([str(i) for i in range(len(sizes))], np.concatenate([[0], np.cumsum(sizes)]), correct, has,
                np.where(has, 0, -1).astype(np.int32), {"s": np.array(scores)})
    return pool, np.array(values), pad


def pickable(pool):
    return pool.has_answer & ~np.isnan(pool.scores["s"])


def brute_expected(pool, values, n, pad):
    """Mean over every n-subset of the padded slots of the picked value (ties averaged), per problem."""
    out = []
    ok = pickable(pool)
    for lo, hi in itertools.pairwise(pool.offsets):
        total = 0.0
        subsets = list(itertools.combinations(range(pad), n))
        for subset in subsets:
            real = [lo + i for i in subset if i < hi - lo and ok[lo + i]]
            if real:
                top = max(pool.scores["s"][i] for i in real)
                total += np.mean([values[i] for i in real if pool.scores["s"][i] == top])
        out.append(total / len(subsets))
    return np.array(out)


@settings(max_examples=200, deadline=None)
@given(pools(), st.data())
def test_bon_expected_of_correctness_is_exact_bon(case, data):
    pool, _, pad = case
    ns = sorted(set(data.draw(st.lists(st.integers(1, pad), min_size=1, max_size=4))))
    got = bon_expected(pool, "s", pool.correct.astype(float), ns, pad)
    assert got.shape == (pool.n_problems, len(ns))
    np.testing.assert_array_equal(got, exact_bon(pool, "s", ns, pad))  # bit for bit: the same code path


def test_bon_expected_equals_exact_bon_on_both_sort_paths():
    rng = np.random.default_rng(5)
    for sizes in ([30] * 20, [400, 2, 3]):  # equal pools (matrix sort) and one huge pool (flat sort)
        total = sum(sizes)
        has = rng.random(total) < 0.85
        correct = (rng.random(total) < 0.4) & has
        scores = np.round(rng.normal(size=total) + correct, 1)
        scores[rng.random(total) < 0.05] = np.nan
        pool = Pool([str(i) for i in range(len(sizes))], np.concatenate([[0], np.cumsum(sizes)]), correct, has,
                    np.where(has, 0, -1).astype(np.int32), {"s": scores})
        ns = [1, 2, 7, max(sizes)]
        np.testing.assert_array_equal(bon_expected(pool, "s", correct.astype(float), ns), exact_bon(pool, "s", ns))


@settings(max_examples=150, deadline=None)
@given(pools(max_problems=2, max_size=6), st.data())
def test_bon_expected_equals_enumeration_of_all_subsets(case, data):
    pool, values, pad = case
    n = data.draw(st.integers(1, pad))
    np.testing.assert_allclose(bon_expected(pool, "s", values, [n], pad)[:, 0], brute_expected(pool, values, n, pad),
                               atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(pools(), st.data())
def test_values_of_one_give_the_chance_that_something_is_pickable(case, data):
    pool, _, pad = case
    n = data.draw(st.integers(1, pad))
    got = bon_expected(pool, "s", np.ones(pool.n_samples), [n], pad)[:, 0]
    n_pickable = [pickable(pool)[lo:hi].sum() for lo, hi in itertools.pairwise(pool.offsets)]
    nothing = np.array([math.comb(pad - int(k), n) / math.comb(pad, n) for k in n_pickable])
    np.testing.assert_allclose(got, 1 - nothing, atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(pools())
def test_best_of_one_is_the_mean_over_slots_with_answerless_draws_as_zero(case):
    # exact_bon at N=1 is (correct pickable samples) / M_pad: an answerless, unscored or empty draw
    # scores 0. bon_expected must do the same with any values: sum over pickable values / M_pad.
    pool, values, pad = case
    got = bon_expected(pool, "s", values, [1], pad)[:, 0]
    sums = np.array([values[lo:hi][pickable(pool)[lo:hi]].sum() for lo, hi in itertools.pairwise(pool.offsets)])
    np.testing.assert_allclose(got, sums / pad, atol=1e-12)
    n_correct = np.array([pool.correct[lo:hi][pickable(pool)[lo:hi]].sum() for lo, hi in itertools.pairwise(pool.offsets)])
    np.testing.assert_allclose(exact_bon(pool, "s", [1], pad)[:, 0], n_correct / pad, atol=1e-12)


def test_bon_expected_agrees_with_drawing_random_subsets():
    # One small pool: ties, an answerless sample with a high score, an unscored sample, padding to 12.
    scores = np.array([2.0, 2.0, 1.5, 1.0, 1.0, 1.0, 0.5, 9.0, np.nan, 0.0])
    has = np.array([True] * 7 + [False, True, True])
    values = np.array([0.9, 0.1, 0.7, 0.3, 0.8, 0.2, 0.6, 5.0, 5.0, 0.4])
    pool = Pool(["p"], np.array([0, scores.size]), np.zeros(scores.size, bool), has,
                np.where(has, 0, -1).astype(np.int32), {"s": scores})
    pad, trials, rng = 12, 4000, np.random.default_rng(11)
    ns = [1, 3, 6, 12]
    exact = bon_expected(pool, "s", values, ns, pad)[0]
    ok = pickable(pool)
    for j, n in enumerate(ns):
        draws = np.zeros(trials)
        for t in range(trials):
            real = [i for i in rng.choice(pad, n, replace=False) if i < scores.size and ok[i]]
            if real:
                top = max(scores[i] for i in real)
                draws[t] = values[rng.choice([i for i in real if scores[i] == top])]  # ties by luck here
        se = draws.std(ddof=1) / np.sqrt(trials)
        assert abs(draws.mean() - exact[j]) <= 4 * se + 1e-12, (n, draws.mean(), exact[j], se)


def test_bon_expected_rejects_bad_values():
    pool = Pool(["p"], np.array([0, 3]), np.zeros(3, bool), np.array([True, True, False]),
                np.array([0, 0, -1], np.int32), {"s": np.array([1.0, np.nan, 2.0])})
    assert bon_expected(pool, "s", np.array([0.5, np.nan, np.nan]), [1])[0, 0] == pytest.approx(0.5 / 3)
    with pytest.raises(ValueError, match="finite"):
        bon_expected(pool, "s", np.array([np.nan, 0.0, 0.0]), [1])
    with pytest.raises(ValueError, match="shape"):
        bon_expected(pool, "s", np.zeros(2), [1])


# --- Gao et al.'s functional forms -------------------------------------------------------------------

D = np.sqrt(kl_bon(np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 1024])))  # starts at d = 0


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["bon", "rl"]), st.floats(-2, 2), st.floats(-1, 1))
def test_fit_recovers_noiseless_laws(form, alpha, beta):
    fit = fit_gao(D, gao_curve(D, alpha, beta, form), form)
    assert fit["alpha"] == pytest.approx(alpha, abs=1e-8)
    assert fit["beta"] == pytest.approx(beta, abs=1e-8)
    assert (fit["peak_d"], fit["peak_gain"]) == gao_peak(fit["alpha"], fit["beta"], form)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["bon", "rl"]), st.floats(0.05, 2), st.floats(0.05, 1))
def test_peak_formulae_are_the_maximum_of_the_curve(form, alpha, beta):
    peak_d, peak_gain = gao_peak(alpha, beta, form)
    expected_d = alpha / (2 * beta) if form == "bon" else math.exp(alpha / beta - 1)
    assert peak_d == pytest.approx(expected_d, rel=1e-12)
    assert peak_gain == pytest.approx(float(gao_curve(np.array([peak_d]), alpha, beta, form)[0]), rel=1e-9)
    grid = peak_d * np.linspace(0, 3, 3001)  # nothing on a grid around d* beats it
    assert np.all(gao_curve(grid, alpha, beta, form) <= peak_gain * (1 + 1e-12))


def test_peak_edge_cases():
    inf = float("inf")
    for form in ("bon", "rl"):
        assert gao_peak(1.0, -0.5, form) == (inf, inf)
        assert gao_peak(-1.0, -0.5, form) == (inf, inf)
        assert gao_peak(1.0, 0.0, form) == (inf, inf)
        assert gao_peak(-1.0, 0.0, form) == (0.0, 0.0)
    assert gao_peak(-1.0, 0.5, "bon") == (0.0, 0.0)  # falls from the start
    fit = fit_gao(D, 0.3 * D, "bon")
    assert fit["peak_d"] == inf and fit["r2"] == pytest.approx(1.0)
    assert math.isnan(fit_gao(D, np.zeros(D.size), "rl")["r2"])
    with pytest.raises(ValueError, match="unknown form"):
        fit_gao(D, D, "ppo")
    with pytest.raises(ValueError):
        fit_gao(D, D[:-1], "bon")


def noisy_units(form, alpha, beta, n_units=300, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.6, (n_units, 1))  # each unit's own gold(0): relative=True removes it
    return base + gao_curve(D, alpha, beta, form) + rng.normal(0, noise, (n_units, D.size)) * (D > 0)


@pytest.mark.parametrize("form,alpha,beta", [("bon", 0.4, 0.1), ("rl", 0.3, 0.12)])
def test_bootstrap_intervals_contain_the_truth(form, alpha, beta):
    units = noisy_units(form, alpha, beta)
    fit = bootstrap_fit(D, units, form, n_boot=1000, seed=1)
    true_peak = gao_peak(alpha, beta, form)[0]
    for name, truth in [("alpha", alpha), ("beta", beta), ("peak_d", true_peak)]:
        lo, hi = fit[f"{name}_ci"]
        assert lo <= truth <= hi, (name, lo, truth, hi)
        assert lo <= fit[name] <= hi
    assert fit["alpha_ci"][1] - fit["alpha_ci"][0] < 0.05  # 300 units: tight, not trivially wide
    assert not fit["peak_d_unbounded"] and fit["no_peak_frac"] == 0.0
    assert (fit["n_units"], fit["n_boot"], fit["level"]) == (300, 1000, 0.95)


def test_bootstrap_relative_flag_and_unbounded_peak():
    units = noisy_units("bon", 0.4, 0.1, n_units=50)
    gains = units - units[:, :1]
    a = bootstrap_fit(D, units, "bon", n_boot=200)
    b = bootstrap_fit(D, gains, "bon", n_boot=200, relative=False)
    assert a == b
    # a curve that keeps climbing (beta ~ 0): many resamples have no peak, the CI ends in inf
    flat = noisy_units("bon", 0.4, 0.0, n_units=50, noise=0.2)
    fit = bootstrap_fit(D, flat, "bon", n_boot=400)
    assert fit["peak_d_unbounded"] and fit["peak_d_ci"][1] == float("inf") and 0 < fit["no_peak_frac"] < 1
    with pytest.raises(ValueError, match="d == 0"):
        bootstrap_fit(D[1:], units[:, 1:], "bon")
    with pytest.raises(ValueError, match="units must be"):
        bootstrap_fit(D, units[:, 1:], "bon")


def test_where_peak_takes_the_first_maximum_and_skips_nan():
    assert where_peak([0, 1, 2, 3], [0.1, 0.4, 0.4, 0.2]) == (1.0, 0.4)
    assert where_peak([0, 1, 2], [np.nan, 0.2, 0.1]) == (1.0, 0.2)
    with pytest.raises(ValueError):
        where_peak([0, 1], [np.nan, np.nan])


def test_the_rl_fits_peak_interval_counts_fits_without_a_peak():
    """A fit without a peak is a peak at infinity in the interval (as best-of-N's is), so a gold curve that
    peaks on some resamples only reads as unbounded, never as a finite interval of the lucky resamples."""
    from prmkit.lab.study.pressure_pages import peak_reading
    from prmkit.lab.study.pressure_summary import rl_fit

    rng = np.random.default_rng(0)
    sqrt_kl = np.tile(np.linspace(0, 2, 6), (2, 1))  # [seeds, evaluations]
    flat = rng.binomial(1, 0.3, size=(2, 6, 24)).astype(float)  # gold with no trend: half the fits peak
    fit = rl_fit(sqrt_kl, flat, n_boot=200)
    assert 0.05 < fit["no_peak_frac"] < 0.95
    assert fit["peak_d_ci"][1] == float("inf")
    assert peak_reading(fit, 2.0).startswith("undetermined")
    rises = np.stack([np.stack([rng.binomial(1, p, 24) for p in (0.1, 0.3, 0.5, 0.6, 0.3, 0.1)])
                      for _ in range(2)]).astype(float)  # rises then falls inside the range
    fit = rl_fit(sqrt_kl, rises, n_boot=200)
    assert fit["no_peak_frac"] == 0 and fit["peak_d_ci"][1] < 2.0
    assert peak_reading(fit, 2.0).startswith("peaks at")
