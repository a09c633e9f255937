"""Optimisation pressure: the KL of best-of-N, the gold value it buys, and Gao et al.'s fitted laws.

Gao, Schulman & Hilton (2022), "Scaling laws for reward model overoptimization" (arXiv:2210.10760),
measure optimisation against a proxy reward by the KL from the base policy and find that the gold
reward gained follows, with ``d = sqrt(KL)``::

    best-of-n:  gold(d) - gold(0) = d (alpha - beta d)
    RL:         gold(d) - gold(0) = d (alpha - beta ln d)

Best-of-n from a continuous base distribution has the analytic KL (:func:`kl_bon`)::

    KL_bon(n) = log n - (n - 1) / n

Our best-of-N is exact over a finite pool (:mod:`prmkit.evaluate.bon`): ``n`` of ``m`` samples drawn
without replacement, the top score picked. With distinct scores the pick sits at ascending rank ``k``
with probability ``p_k = C(k-1, n-1) / C(m, n)`` and its KL from the uniform pick is
``sum_k p_k log(m p_k)`` (:func:`exact_kl_bon`), which is ``log m`` at ``n = m``; with replacement
``p_k = (k/m)^n - ((k-1)/m)^n`` (:func:`exact_kl_bon_with_replacement`). Both tend to ``KL_bon(n)`` as
``m`` grows; without replacement the excess is about ``(n-1)/(2m)`` for ``n`` much below ``m``, and at
``n = m`` the KL from the *pool* is ``log m`` (4.16 for 64, against ``KL_bon(64) = 3.17``). That is the KL
from the empirical pool, not from the policy: an ``n``-subset of ``m`` independent samples is ``n``
independent samples, so the exact estimator's expectation over pools is true best-of-``n`` of the policy,
whose KL from it is ``KL_bon(n)``; curves of that estimate are drawn against ``sqrt(KL_bon(n))``, as
Gao et al. draw theirs. :func:`bon_expected` gives the expected value of any
per-sample quantity under the pick (the gold curve), :func:`fit_gao` and :func:`bootstrap_fit` fit the
laws, :func:`where_peak` reads the measured peak.

>>> round(kl_bon(16), 4), round(exact_kl_bon(100_000, 16), 4)  # finite m adds about (n-1)/(2m)
(1.8351, 1.8352)
>>> d = np.sqrt(kl_bon(np.array([1, 2, 4, 8, 16, 32])))
>>> fit = fit_gao(d, d * (0.5 - 0.2 * d), "bon")
>>> round(fit["alpha"], 6), round(fit["beta"], 6), round(fit["peak_d"], 6)
(0.5, 0.2, 1.25)
"""

from __future__ import annotations

import numpy as np

from prmkit.evaluate.bon import _padded_size, level_expectation, score_levels
from prmkit.evaluate.bootstrap import bootstrap_means
from prmkit.evaluate.pool import Pool

FORMS = ("bon", "rl")


# --- KL of best-of-n --------------------------------------------------------------------------------

def kl_bon(n):
    """Analytic KL(best-of-n || base) for a continuous base distribution: ``log n - (n-1)/n``.

    Accepts a scalar (returns a float) or an array (returns an array).

    >>> kl_bon(1), round(kl_bon(2), 6)
    (0.0, 0.193147)
    >>> kl_bon(np.array([1, 4])).round(4).tolist()
    [0.0, 0.6363]
    """
    n = np.asarray(n, dtype=float)
    if np.any(n < 1):
        raise ValueError("best-of-n needs n >= 1")
    out = np.log(n) - (n - 1) / n
    return float(out) if out.ndim == 0 else out


def exact_kl_bon(m: int, n: int) -> float:
    """Exact KL(best-of-n || uniform) for ``n`` of ``m`` distinct-scored samples drawn without replacement.

    ``p_k = C(k-1, n-1) / C(m, n)`` for ascending rank ``k = n..m``. It is built from ``p_m = n/m`` down
    by the ratio ``p_{k-1} / p_k = (k-n) / (k-1)`` in log space, so no binomial is ever formed and
    ``n = 1`` gives 0 and ``n = m`` gives ``log m`` exactly.

    >>> exact_kl_bon(10, 1), bool(exact_kl_bon(10, 10) == np.log(10))
    (0.0, True)
    >>> round(exact_kl_bon(3, 2), 6)  # p = (0, 1/3, 2/3): (2/3) log 2
    0.462098
    """
    m, n = _check_mn(m, n)
    if n > m:
        raise ValueError(f"cannot draw n={n} of m={m} samples without replacement")
    k = np.arange(n + 1, m + 1, dtype=float)  # ranks whose step down gives rank k-1
    steps = np.log1p(-(n - 1) / (k - 1))
    below = np.concatenate([np.cumsum(steps[::-1])[::-1], [0.0]])  # log(p_k / p_m) for k = n..m
    log_p = (np.log(n) - np.log(m)) + below  # kept apart from log(m p) so that n = m gives p = 1 exactly
    return float(np.sum(np.exp(log_p) * (np.log(n) + below)))


def exact_kl_bon_with_replacement(m: int, n: int) -> float:
    """Exact KL(best-of-n || uniform) for ``n`` draws with replacement from ``m`` distinct-scored samples.

    ``p_k = (k/m)^n - ((k-1)/m)^n``, computed as ``(k/m)^n (1 - (1 - 1/k)^n)`` with ``expm1``/``log1p``
    so that neither large ``n`` nor large ``m`` cancels catastrophically. Any ``n >= 1`` is allowed.

    >>> abs(exact_kl_bon_with_replacement(50, 1)) < 1e-12
    True
    >>> round(exact_kl_bon_with_replacement(2, 2), 6)  # p = (1/4, 3/4)
    0.130812
    """
    m, n = _check_mn(m, n)
    k = np.arange(1, m + 1, dtype=float)
    with np.errstate(divide="ignore"):  # k = 1: log1p(-1) = -inf, and 1 - 0^n = 1 is right
        top_gap = np.log(-np.expm1(n * np.log1p(-1 / k)))
    log_mp = np.log(m) + n * np.log(k / m) + top_gap
    return float(np.sum(np.exp(log_mp - np.log(m)) * log_mp))


def _check_mn(m, n) -> tuple[int, int]:
    if int(m) != m or int(n) != n or m < 1 or n < 1:
        raise ValueError(f"m={m} and n={n} must be positive integers")
    return int(m), int(n)


# --- the gold curve ---------------------------------------------------------------------------------

def bon_expected(pool: Pool, column: str, values, ns: list[int], pad_to: int | None = None) -> np.ndarray:
    """Expected ``values`` of the sample best-of-N picks by ``column``, per problem: (problems, len(ns)).

    ``values`` holds one float per sample in pool order (gold correctness, the fraction of steps an
    oracle rates valid, the proxy score itself). The protocol is :func:`~prmkit.evaluate.bon.exact_bon`'s
    to the letter: a uniform N-subset of the ``pad_to`` slots, ties split in expectation, answerless
    and unscored samples (and empty slots) use budget but are never picked, and a subset with nothing
    pickable contributes 0. Like ``exact_bon`` the result is per problem: average over axis 0 for the
    curve. ``bon_expected(pool, col, pool.correct.astype(float), ns)`` equals ``exact_bon(pool, col, ns)``.
    Values of samples that can never be picked are ignored (they may be NaN).

    >>> from prmkit.evaluate.bon import _single_pool
    >>> pool = _single_pool([0.9, 0.5, 0.1], [False, True, True], None)
    >>> bon_expected(pool, "score", np.array([0.0, 0.5, 1.0]), [1, 2, 3]).round(4).tolist()  # N=2: (0+0+.5)/3
    [[0.5, 0.1667, 0.0]]
    """
    values = np.asarray(values, dtype=float)
    if values.shape != (pool.n_samples,):
        raise ValueError(f"values has shape {values.shape}; the pool has {pool.n_samples} samples")
    pickable = pool.has_answer & ~np.isnan(pool.column(column))
    if not np.all(np.isfinite(values[pickable])):
        raise ValueError("values must be finite wherever a sample can be picked (answered and scored)")
    levels = score_levels(pool, column, values)
    return level_expectation(levels, pool.n_problems, _padded_size(pool, pad_to), ns)


# --- Gao et al.'s functional forms ------------------------------------------------------------------

def gao_curve(d, alpha: float, beta: float, form: str):
    """The gain ``gold(d) - gold(0)`` of a Gao et al. law at ``d = sqrt(KL)`` (``d ln d`` is 0 at 0).

    >>> gao_curve(np.array([0.0, 1.0, 2.0]), 1.0, 0.25, "bon").tolist()
    [0.0, 0.75, 1.0]
    >>> gao_curve(np.array([0.0, 1.0]), 1.0, 0.25, "rl").tolist()
    [0.0, 1.0]
    """
    return _features(np.asarray(d, dtype=float), form) @ np.array([alpha, beta])


def _features(d: np.ndarray, form: str) -> np.ndarray:
    """Design matrix [d, -d^2] ("bon") or [d, -d ln d] ("rl"): the signs make the coefficients alpha, beta."""
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r} (expected one of {', '.join(FORMS)})")
    if np.any(d < 0) or not np.all(np.isfinite(d)):
        raise ValueError("d = sqrt(KL) must be finite and >= 0")
    if form == "bon":
        second = d * d
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            second = np.where(d > 0, d * np.log(np.where(d > 0, d, 1.0)), 0.0)
    return np.stack([d, -second], axis=-1)


def gao_peak(alpha: float, beta: float, form: str) -> tuple[float, float]:
    """(d*, gain at d*): the maximum of the fitted law over ``d >= 0``; (inf, inf) when it grows for ever.

    "bon": ``d* = alpha / (2 beta)``, gain ``alpha^2 / (4 beta)``, when ``beta > 0`` (clamped to
    (0, 0) if ``alpha <= 0``: the curve only falls). "rl": ``d* = exp(alpha/beta - 1)``, gain
    ``beta d*``, when ``beta > 0``. With ``beta < 0`` (or ``beta = 0 < alpha``) there is no peak in
    sight; ``beta = 0 >= alpha`` never rises, so (0, 0).

    >>> gao_peak(1.0, 0.25, "bon"), gao_peak(1.0, 1.0, "rl"), gao_peak(1.0, -0.1, "bon")
    ((2.0, 1.0), (1.0, 1.0), (inf, inf))
    """
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r} (expected one of {', '.join(FORMS)})")
    if beta < 0 or (beta == 0 and alpha > 0):
        return np.inf, np.inf
    if beta == 0:
        return 0.0, 0.0
    if form == "bon":
        return (alpha / (2 * beta), alpha * alpha / (4 * beta)) if alpha > 0 else (0.0, 0.0)
    with np.errstate(over="ignore"):  # a tiny beta puts the peak beyond any float: inf is the honest answer
        peak = float(np.exp(alpha / beta - 1))
    return peak, beta * peak


def fit_gao(d, delta_gold, form: str) -> dict:
    """Least-squares fit, no intercept, of a Gao et al. law to a measured gain curve.

    ``d`` = sqrt(KL) per point, ``delta_gold`` = gold(d) - gold(0); features ``[d, -d^2]`` for "bon",
    ``[d, -d ln d]`` for "rl" (points at d = 0 carry no information and are harmless). Returns
    ``alpha``, ``beta``, ``peak_d`` and ``peak_gain`` (:func:`gao_peak`; inf when no peak) and ``r2``,
    the usual centred ``1 - SS_res / SS_tot`` (NaN when the measured curve is flat).

    >>> d = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    >>> fit = fit_gao(d, gao_curve(d, 0.3, 0.1, "rl"), "rl")
    >>> round(fit["alpha"], 8), round(fit["beta"], 8), round(fit["peak_d"], 6), round(fit["r2"], 8)
    (0.3, 0.1, 7.389056, 1.0)
    """
    d, y = np.asarray(d, dtype=float), np.asarray(delta_gold, dtype=float)
    if d.shape != y.shape or d.ndim != 1:
        raise ValueError(f"d {d.shape} and delta_gold {y.shape} must be 1-D and of the same length")
    x = _features(d, form)
    (alpha, beta), *_ = np.linalg.lstsq(x, y, rcond=None)
    peak_d, peak_gain = gao_peak(float(alpha), float(beta), form)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1 - float(np.sum((y - x @ [alpha, beta]) ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return {"alpha": float(alpha), "beta": float(beta), "peak_d": peak_d, "peak_gain": peak_gain, "r2": r2}


def bootstrap_fit(d, units, form: str, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                  relative: bool = True) -> dict:
    """Fit a Gao law to the mean of per-unit curves, with percentile CIs from resampling the units.

    ``units`` is (U, len(d)): one gold curve per unit (a problem for best-of-N, a seed x problem for
    RL). ``relative=True`` means the curves are raw gold and each is made a gain by subtracting its
    value at the point where ``d == 0`` (which must exist); ``relative=False`` means they already are
    gains. Units are resampled with replacement (:func:`~prmkit.evaluate.bootstrap.bootstrap_means`)
    and the mean curve refitted ``n_boot`` times. Returns :func:`fit_gao`'s point fit plus
    ``alpha_ci``, ``beta_ci``, ``peak_d_ci`` as (low, high) tuples; a resample with ``beta <= 0`` has
    ``peak_d = inf``, so ``peak_d_ci`` may end in inf: ``no_peak_frac`` is the share of such resamples
    and ``peak_d_unbounded`` whether the CI's upper end is inf.

    >>> d = np.array([0.0, 1.0, 2.0, 3.0])
    >>> units = 0.2 + gao_curve(d, 1.0, 0.25, "bon") + np.array([[0.1], [-0.1]]) * d
    >>> fit = bootstrap_fit(d, units, "bon", n_boot=200)
    >>> round(fit["alpha"], 6), fit["alpha_ci"][0] <= 1.0 <= fit["alpha_ci"][1], fit["peak_d_unbounded"]
    (1.0, True, False)
    """
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} must be between 0 and 1")
    d, units = np.asarray(d, dtype=float), np.asarray(units, dtype=float)
    if units.ndim != 2 or units.shape[1] != d.size:
        raise ValueError(f"units must be (units, {d.size}) to match d; got {units.shape}")
    if relative:
        zero = np.flatnonzero(d == 0)
        if zero.size == 0:
            raise ValueError("relative=True needs a point at d == 0 to measure each unit's gain from")
        units = units - units[:, zero[:1]]
    point = fit_gao(d, units.mean(axis=0), form)
    means = bootstrap_means(units, n_boot, seed)  # (n_boot, len(d)) resampled mean curves
    coef = np.linalg.pinv(_features(d, form)) @ means.T  # the same least squares, all resamples at once
    peaks = np.array([gao_peak(a, b, form)[0] for a, b in coef.T])
    tail = (1 - level) / 2 * 100
    peak_ci = percentiles_with_inf(peaks, tail)
    return point | {
        "alpha_ci": tuple(np.percentile(coef[0], [tail, 100 - tail]).tolist()),
        "beta_ci": tuple(np.percentile(coef[1], [tail, 100 - tail]).tolist()),
        "peak_d_ci": peak_ci,
        "no_peak_frac": float(np.mean(np.isinf(peaks))),
        "peak_d_unbounded": bool(np.isinf(peak_ci[1])),
        "n_units": units.shape[0], "n_boot": n_boot, "level": level,
    }


def percentiles_with_inf(x: np.ndarray, tail: float) -> tuple[float, float]:
    """Linear-interpolated (tail, 100 - tail) percentiles where +inf is allowed.

    numpy interpolates inf - inf into NaN, so inf stands in as the largest float and any percentile
    that leans on it at all (exceeds every finite sample) is reported as inf.
    """
    finite = x[np.isfinite(x)]
    q = np.percentile(np.where(np.isinf(x), np.finfo(float).max, x), [tail, 100 - tail])
    ceiling = finite.max() if finite.size else -np.inf
    return tuple(float(v) if v <= ceiling else np.inf for v in q)


def where_peak(d, y) -> tuple[float, float]:
    """(d at the maximum, the maximum) of a measured curve; the first point wins ties, NaNs are skipped.

    >>> where_peak([0.0, 0.5, 1.0, 1.5], [0.0, 0.3, 0.3, 0.1])
    (0.5, 0.3)
    """
    d, y = np.asarray(d, dtype=float), np.asarray(y, dtype=float)
    if d.shape != y.shape or d.ndim != 1:
        raise ValueError(f"d {d.shape} and y {y.shape} must be 1-D and of the same length")
    if np.all(np.isnan(y)):
        raise ValueError("the curve has no measured point")
    i = int(np.nanargmax(y))
    return float(d[i]), float(y[i])
