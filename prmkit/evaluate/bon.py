"""Exact best-of-N and pass@N by order statistics, and the released resampling protocol to check them.

The setting (the released PRM800K evaluation): a problem has ``M`` samples, padded with empty slots to
``M_pad`` (``pad_to``). A uniformly random ``N``-subset of the ``M_pad`` slots is drawn; empty slots,
answerless samples and samples without a score use up budget but are never picked; the sample with
the top score among the rest is the answer; a subset with nothing pickable counts as wrong.

Closed form. Let ``h(A) = C(A, N) / C(M_pad, N)``, the chance that a random ``N``-subset avoids a given
set of ``M_pad - A`` slots. Sort a problem's pickable samples by score and group equal scores into
levels; a level holds ``g`` samples, ``c`` of them correct, with ``b`` pickable samples strictly above
it. The top of the subset is in this level with probability ``h(M_pad - b) - h(M_pad - b - g)`` (no
better sample drawn, at least one of the level drawn), and then, by symmetry, it is correct with
probability ``c / g`` (ties split in expectation, not by luck)::

    bon_acc@N = sum over levels of  c/g * (h(M_pad - b) - h(M_pad - b - g))
    pass@N    = 1 - h(M_pad - n_correct)

Without ties this is the order-statistics formula: the top of the subset sits at rank ``k`` with
probability ``C(M_pad - k, N - 1) / C(M_pad, N)``.

>>> import numpy as np
>>> scores, correct = np.array([0.9, 0.5, 0.1]), np.array([False, True, True])
>>> [round(x, 4) for x in exact_bon_one(scores, correct, n=2)]  # subsets {0,1},{0,2},{1,2}
[0.3333]
>>> round(exact_pass_one(correct, n=2), 4)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prmkit.evaluate.pool import Pool


def subset_avoid_table(m_pad: int, n: int) -> np.ndarray:
    """``h[A] = C(A, n) / C(m_pad, n)`` for ``A = 0..m_pad``: a random n-subset lies inside a given A slots.

    Built as a product of ratios ``C(A-1, n) / C(A, n) = (A - n) / A`` from ``h[m_pad] = 1`` down,
    which stays exact to rounding for any pool size (no huge binomials).

    >>> subset_avoid_table(4, 2).tolist()  # C(A,2)/C(4,2) = 0, 0, 1/6, 3/6, 1
    [0.0, 0.0, 0.16666666666666666, 0.5, 1.0]
    """
    if not 1 <= n <= m_pad:
        raise ValueError(f"N={n} must be between 1 and the padded pool size {m_pad}")
    h = np.zeros(m_pad + 1)
    a = np.arange(m_pad, n, -1, dtype=float)  # A = m_pad .. n+1: h[A-1] = h[A] * (A-n)/A
    h[m_pad] = 1.0
    h[n:m_pad] = np.cumprod((a - n) / a)[::-1]
    return h


@dataclass
class Levels:
    """Score levels of every problem's pickable samples, best first: ``g`` samples, ``c`` correct, ``b`` above.

    ``c`` is the sum over the level of the per-sample values given to :func:`score_levels` (correctness
    by default, so the number of correct samples).
    """

    problem: np.ndarray
    g: np.ndarray
    c: np.ndarray
    b: np.ndarray


def score_levels(pool: Pool, column: str, values: np.ndarray | None = None) -> Levels:
    """Group equal scores of each problem's pickable samples into levels, best first.

    ``values`` (one float per sample, pool order; default ``pool.correct``) are summed into each
    level's ``c``, so that :func:`level_expectation` gives the expected value of the picked sample.
    """
    scores = pool.column(column)
    keep = pool.has_answer & ~np.isnan(scores)
    prob, s, cor = _sorted_by_problem_then_score(pool, scores, keep, pool.correct if values is None else values)
    new = np.ones(prob.size, dtype=bool)
    new[1:] = (prob[1:] != prob[:-1]) | (s[1:] != s[:-1])
    level = np.cumsum(new) - 1
    g = np.bincount(level)
    c = np.bincount(level, weights=cor)
    level_prob = prob[new]
    above_all = np.cumsum(g) - g  # pickable samples before this level, over all problems
    first_of_problem = np.ones(g.size, dtype=bool)
    first_of_problem[1:] = level_prob[1:] != level_prob[:-1]
    start = np.maximum.accumulate(np.where(first_of_problem, above_all, 0))
    return Levels(level_prob, g, c, above_all - start)


def _sorted_by_problem_then_score(pool: Pool, scores: np.ndarray, keep: np.ndarray, values: np.ndarray):
    """(problem, score, value) of the kept samples, by problem, then score descending.

    Pools of similar sizes are sorted row by row in a (problems, largest pool) matrix, which is several
    times faster than one flat sort on two keys; very uneven pools fall back to the flat sort.
    """
    sizes, width = pool.sizes, int(pool.sizes.max(initial=0))
    if pool.n_problems * width > 2 * pool.n_samples:
        prob = pool.problem_index()[keep]
        s, cor = scores[keep], values[keep]
        order = np.argsort(-s, kind="stable")
        order = order[np.argsort(prob[order], kind="stable")]
        return prob[order], s[order], cor[order]
    big = np.finfo(float).max  # a score of -inf is still a score: keep it finite so that inf marks "not kept"
    keyed = np.where(keep, -np.clip(scores, -big, big), np.inf)
    if pool.n_samples == pool.n_problems * width:  # equal pools: the flat array already is the matrix
        matrix = keyed.reshape(pool.n_problems, width)
    else:
        col = np.arange(pool.n_samples) - np.repeat(pool.offsets[:-1], sizes)
        matrix = np.full((pool.n_problems, width), np.inf)
        matrix[pool.problem_index(), col] = keyed
    order = np.argsort(matrix, axis=1)
    kept = np.isfinite(np.take_along_axis(matrix, order, axis=1))
    prob = np.broadcast_to(np.arange(pool.n_problems)[:, None], matrix.shape)[kept]
    flat = (pool.offsets[:-1, None] + order)[kept]
    return prob, scores[flat], values[flat]


def exact_bon(pool: Pool, column: str, ns: list[int], pad_to: int | None = None) -> np.ndarray:
    """Expected best-of-N accuracy of every problem for every N: an array (problems, len(ns)).

    ``pad_to`` is the padded pool size ``M_pad`` (default: the largest pool in ``pool``).
    """
    return level_expectation(score_levels(pool, column), pool.n_problems, _padded_size(pool, pad_to), ns)


def level_expectation(levels: Levels, n_problems: int, m_pad: int, ns: list[int]) -> np.ndarray:
    """Expected ``c / g`` of the level that holds the top of a random N-subset: (problems, len(ns)).

    With the default levels this is best-of-N accuracy; with levels built from other per-sample
    values, the expected value of the picked sample. A subset with nothing pickable contributes 0.
    """
    if levels.g.size == 0:  # nothing pickable anywhere: every subset is wrong
        return np.zeros((n_problems, len(ns)))
    share = levels.c / np.maximum(levels.g, 1)
    # Telescoping: a level's "lo" is the next level's "hi", so sum_k share_k (h[hi_k] - h[lo_k])
    # = sum_k (share_k - share_{k-1}) h[hi_k] - share_last h[lo_last], per problem.
    first = np.r_[True, levels.problem[1:] != levels.problem[:-1]]
    last = np.r_[levels.problem[1:] != levels.problem[:-1], True]
    dshare = share - np.where(first, 0.0, np.r_[0.0, share[:-1]])
    at = np.concatenate([m_pad - levels.b, (m_pad - levels.b - levels.g)[last]])
    weight = np.concatenate([dshare, -share[last]])
    rows = np.concatenate([levels.problem, levels.problem[last]])
    return _weighted_tables(rows, at, weight, n_problems, m_pad, ns)


def _weighted_tables(rows, at, weight, n_rows: int, m_pad: int, ns: list[int]) -> np.ndarray:
    """``out[r, j] = sum of weight * h_j[at]`` over entries of row ``r``, as (rows x slots) @ (slots x ns).

    The dense (rows, m_pad + 1) weight matrix is built a block of rows at a time to bound memory.
    """
    table = np.stack([subset_avoid_table(m_pad, n) for n in ns], axis=1)  # (m_pad + 1, len(ns))
    out = np.zeros((n_rows, len(ns)))
    block = max(1, _BLOCK_CELLS // (m_pad + 1))
    order = np.argsort(rows, kind="stable")
    rows, at, weight = rows[order], at[order], weight[order]
    bounds = np.searchsorted(rows, np.arange(0, n_rows + block, block))
    for i, r0 in enumerate(range(0, n_rows, block)):
        part = slice(bounds[i], bounds[i + 1])
        n_block = min(block, n_rows - r0)
        dense = np.bincount((rows[part] - r0) * (m_pad + 1) + at[part], weights=weight[part],
                            minlength=n_block * (m_pad + 1)).reshape(n_block, m_pad + 1)
        out[r0:r0 + n_block] = dense @ table
    return out


_BLOCK_CELLS = 1 << 22  # 32 MB of float64 per block of the weight matrix


def exact_pass(pool: Pool, ns: list[int], pad_to: int | None = None, good: np.ndarray | None = None) -> np.ndarray:
    """Expected pass@N (an oracle picks a correct sample if the subset has one): (problems, len(ns)).

    ``good`` (a bool per sample, default ``pool.correct``) replaces correctness: with the samples whose
    every step is valid, it is the step-judge limit (a perfect step judge finds one if the subset has one).
    """
    m_pad = _padded_size(pool, pad_to)
    good = pool.correct if good is None else good & pool.has_answer
    n_correct = np.add.reduceat(good.astype(np.int64), pool.offsets[:-1]) if pool.n_samples else 0
    n_correct = np.where(pool.sizes > 0, n_correct, 0)
    return np.stack([1.0 - subset_avoid_table(m_pad, n)[m_pad - n_correct] for n in ns], axis=1)


def first_sample(pool: Pool) -> np.ndarray:
    """Correctness of each problem's first sample (file order), as 0/1 floats."""
    starts = pool.offsets[:-1]
    return np.where(pool.sizes > 0, pool.correct[np.minimum(starts, max(pool.n_samples - 1, 0))], False).astype(float)


def _padded_size(pool: Pool, pad_to: int | None) -> int:
    largest = int(pool.sizes.max(initial=0))
    if pad_to is None:
        return largest
    if pad_to < largest:
        raise ValueError(f"pad_to={pad_to} is smaller than the largest pool ({largest} samples)")
    return pad_to


def exact_bon_one(scores, correct, n: int, pad_to: int | None = None, has_answer=None) -> list[float]:
    """Best-of-``n`` expectation for a single pool given as plain sequences (a convenience for tests)."""
    pool = _single_pool(scores, correct, has_answer)
    return exact_bon(pool, "score", [n], pad_to)[0].tolist()


def exact_pass_one(correct, n: int, pad_to: int | None = None, has_answer=None) -> float:
    """pass@``n`` expectation for a single pool."""
    pool = _single_pool(np.zeros(len(correct)), correct, has_answer)
    return float(exact_pass(pool, [n], pad_to)[0, 0])


def _single_pool(scores, correct, has_answer) -> Pool:
    scores = np.asarray(scores, dtype=float)
    has = np.ones(scores.size, bool) if has_answer is None else np.asarray(has_answer, bool)
    cor = np.asarray(correct, bool) & has
    return Pool(["0"], np.array([0, scores.size]), cor, has, np.where(has, 0, -1).astype(np.int32),
                {"score": scores}, "lists")


# --- the released protocol, re-implemented -----------------------------------------------------------

def resample_bon(pool: Pool, column: str | None, ns: list[int], trials: int = 400, pad_to: int | None = None,
                 seed: int = 0) -> np.ndarray:
    """The released protocol: per trial, pad to ``M_pad``, shuffle, take N, drop empty and answerless, pick top.

    Returns the accuracy of every trial at every N, shape (trials, len(ns)): average over problems.
    ``column=None`` is the oracle (pass@N). Vectorised over trials; the top of each prefix of the
    shuffled slots is tracked with a running argmax, so all N come from one shuffle per trial.
    """
    m_pad = _padded_size(pool, pad_to)
    rng = np.random.default_rng(seed)
    total = np.zeros((trials, len(ns)))
    cols = np.asarray(ns) - 1
    for p in range(pool.n_problems):
        lo, hi = pool.offsets[p], pool.offsets[p + 1]
        slots_score, slots_ok = _slots(pool, column, lo, hi, m_pad)
        perm = rng.permuted(np.broadcast_to(np.arange(m_pad), (trials, m_pad)), axis=1)
        total += _prefix_top_correct(slots_score[perm], slots_ok[perm])[:, cols]
    return total / max(pool.n_problems, 1)


def _slots(pool: Pool, column: str | None, lo: int, hi: int, m_pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores (NaN = never picked: empty slot, answerless or unscored) and correctness of the padded slots."""
    score = np.full(m_pad, np.nan)
    ok = np.zeros(m_pad, dtype=bool)
    real = pool.column(column)[lo:hi] if column is not None else pool.correct[lo:hi].astype(float)
    score[: hi - lo] = np.where(pool.has_answer[lo:hi], real, np.nan)
    ok[: hi - lo] = pool.correct[lo:hi]
    return score, ok


def _prefix_top_correct(score: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """For every row and prefix length, whether the first top-scoring pickable slot of the prefix is correct."""
    pickable = ~np.isnan(score)
    finite = np.where(pickable, np.clip(score, -np.finfo(float).max, np.finfo(float).max), -np.inf)
    best = np.maximum.accumulate(finite, axis=1)
    previous = np.concatenate([np.full((score.shape[0], 1), -np.inf), best[:, :-1]], axis=1)
    is_new = pickable & (finite > previous)  # strict: among equal scores the first in shuffled order wins
    idx = np.arange(score.shape[1])
    top = np.maximum.accumulate(np.where(is_new, idx, -1), axis=1)
    any_pickable = top >= 0
    return any_pickable & np.take_along_axis(ok, np.maximum(top, 0), axis=1)
