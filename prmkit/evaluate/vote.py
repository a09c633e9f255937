"""Majority and reward-weighted voting over random N-subsets, by vectorised Monte Carlo.

Same setting as :mod:`prmkit.evaluate.bon`: a uniformly random N-subset of a problem's ``M_pad`` slots
(empty padding slots and answerless samples use up budget and never vote). Samples vote for their
answer-equivalence group (``Pool.group``, grouped by the grader, not by string equality): one vote
each for majority, their weight (a transformed score) for weighted voting. The group with the largest
tally wins; ties between groups are split in expectation (the mean correctness of the tied groups),
and a group's correctness is the share of its drawn members graded correct. No answer at all counts
as wrong.

Voting has no simple closed form, so every problem gets the same number of rounds, chosen so that the
standard error of the mean over problems reaches ``target_se``: a pilot of ``min_rounds`` estimates
each problem's variance, and ``rounds = sum(var_p) / (P * target_se)^2``.

>>> import numpy as np
>>> vals = vote_rounds(np.array([0, 0, 1]), np.array([True, True, False]), np.ones(3), 3, 3, 4,
...                    np.random.default_rng(0))
>>> vals.tolist()  # all three samples drawn every round: group 0 wins 2 votes to 1
[1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prmkit.evaluate.pool import Pool

WEIGHT_TRANSFORMS = ("auto", "raw", "sigmoid")


@dataclass
class VoteEstimate:
    """Per-problem Monte-Carlo means (problems, len(ns)), the overall standard error and rounds per N."""

    per_problem: np.ndarray
    se: np.ndarray
    rounds: np.ndarray


def vote_weights(scores: np.ndarray, transform: str = "auto") -> tuple[np.ndarray, str]:
    """Scores to non-negative vote weights; returns the weights and the transform actually used.

    ``auto`` keeps scores already in [0, 1] (probabilities) and applies a sigmoid otherwise (logits:
    summing raw logits would let a negative score count against its own answer).

    >>> vote_weights(np.array([0.2, 0.9]))[1], vote_weights(np.array([-3.0, 2.0]))[1]
    ('raw', 'sigmoid')
    """
    if transform not in WEIGHT_TRANSFORMS:
        raise ValueError(f"unknown weight transform {transform!r} (expected one of {', '.join(WEIGHT_TRANSFORMS)})")
    finite = scores[~np.isnan(scores)]
    if transform == "auto":
        transform = "raw" if finite.size == 0 or (finite.min() >= 0 and finite.max() <= 1) else "sigmoid"
    if transform == "sigmoid":
        return 1.0 / (1.0 + np.exp(-scores)), transform
    return scores.astype(float), transform


def vote_rounds(group: np.ndarray, correct: np.ndarray, weight: np.ndarray, m_pad: int, n: int, rounds: int,
                rng: np.random.Generator) -> np.ndarray:
    """The voted correctness of ``rounds`` random ``n``-subsets of one problem (one value per round).

    ``group`` is -1 for samples that cannot vote (no answer; NaN weight); slots past ``len(group)`` are
    empty padding.
    """
    n_groups = int(group.max(initial=-1)) + 1
    if n_groups == 0:
        return np.zeros(rounds)
    slot_group = np.full(m_pad, n_groups)
    slot_group[: group.size] = np.where((group >= 0) & ~np.isnan(weight), group, n_groups)
    slot_weight = np.zeros(m_pad)
    slot_weight[: group.size] = np.nan_to_num(weight)
    slot_correct = np.zeros(m_pad)
    slot_correct[: group.size] = correct
    if n >= m_pad:
        drawn = np.broadcast_to(np.arange(m_pad), (rounds, m_pad))
    else:
        drawn = np.argpartition(rng.random((rounds, m_pad)), n - 1, axis=1)[:, :n]
    width = n_groups + 1
    cells = (np.arange(rounds)[:, None] * width + slot_group[drawn]).ravel()
    size = rounds * width

    def tally(w=None):
        return np.bincount(cells, weights=w, minlength=size).reshape(rounds, width)[:, :n_groups]

    count = tally()
    votes = tally(slot_weight[drawn].ravel())
    share_correct = tally(slot_correct[drawn].ravel()) / np.maximum(count, 1)
    present = count > 0
    votes = np.where(present, votes, -np.inf)
    tied = present & (votes == votes.max(axis=1, keepdims=True))
    n_tied = tied.sum(axis=1)
    return np.where(n_tied > 0, (tied * share_correct).sum(axis=1) / np.maximum(n_tied, 1), 0.0)


def vote_curve(pool: Pool, ns: list[int], weights: np.ndarray | None = None, pad_to: int | None = None,
               target_se: float = 0.002, min_rounds: int = 100, max_rounds: int = 100_000, seed: int = 0,
               progress=None) -> VoteEstimate:
    """Monte-Carlo voting accuracy at every N: majority when ``weights`` is None, else weighted."""
    from prmkit.evaluate.bon import _padded_size

    m_pad = _padded_size(pool, pad_to)
    weight = np.ones(pool.n_samples) if weights is None else weights
    rng = np.random.default_rng(seed)
    out = np.zeros((pool.n_problems, len(ns)))
    se, used = np.zeros(len(ns)), np.zeros(len(ns), dtype=np.int64)
    for j, n in enumerate(ns):
        out[:, j], se[j], used[j] = _one_n(pool, weight, m_pad, n, target_se, min_rounds, max_rounds, rng)
        if progress is not None:
            progress.update(1)
    return VoteEstimate(out, se, used)


def _one_n(pool: Pool, weight, m_pad: int, n: int, target_se: float, min_rounds: int, max_rounds: int, rng):
    """Pilot rounds, then more until the standard error reaches ``target_se``: (per-problem means, se, rounds).

    The variance is re-estimated after every batch (a pilot's estimate is itself noisy), and each new
    batch aims 10% past the rounds the current estimate asks for.
    """
    pilot = 1 if n >= m_pad else min_rounds  # every sample drawn: the vote is deterministic
    sums, sq = _run(pool, weight, m_pad, n, pilot, rng)
    rounds, p = pilot, pool.n_problems
    while True:
        var = np.maximum(sq / rounds - (sums / rounds) ** 2, 0.0) * rounds / max(rounds - 1, 1)
        se = math.sqrt(var.sum() / rounds) / p
        if n >= m_pad or se <= target_se or rounds >= max_rounds:
            return sums / rounds, se, rounds
        needed = math.ceil(1.1 * var.sum() / (p * target_se) ** 2) if target_se > 0 else max_rounds
        more = min(max(needed, rounds + 1), max_rounds) - rounds
        more_sums, more_sq = _run(pool, weight, m_pad, n, more, rng)
        sums, sq, rounds = sums + more_sums, sq + more_sq, rounds + more


_CELLS = 1 << 21  # random keys per batch of rounds (16 MB)


def _run(pool: Pool, weight, m_pad: int, n: int, rounds: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Sum and sum of squares over ``rounds`` rounds of every problem's voted correctness."""
    sums, sq = np.zeros(pool.n_problems), np.zeros(pool.n_problems)
    batch = max(1, _CELLS // m_pad)
    for p in range(pool.n_problems):
        lo, hi = pool.offsets[p], pool.offsets[p + 1]
        args = pool.group[lo:hi], pool.correct[lo:hi], weight[lo:hi]
        for start in range(0, rounds, batch):
            vals = vote_rounds(*args, m_pad, n, min(batch, rounds - start), rng)
            sums[p] += vals.sum()
            sq[p] += (vals ** 2).sum()
    return sums, sq
