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
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from prmkit.evaluate.pool import Pool

WEIGHT_TRANSFORMS = ("auto", "raw", "sigmoid")
MIN_ROUNDS = 32
"""The pilot's rounds: enough to estimate the pooled variance the target standard error is set by (every
problem gets at least these)."""


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


def draw_subsets(rng: np.random.Generator, m_pad: int, n: int, rounds: int, problems: int = 1) -> np.ndarray:
    """For each of ``problems``, ``rounds`` uniformly random ``n``-subsets of ``m_pad`` slots
    (``problems`` x ``rounds`` x ``n``); each problem's from random orderings of its own.

    Where an ordering holds at least :data:`BLOCKS_FROM` disjoint subsets, a problem's rounds come in blocks
    cut from one ordering (the ``n`` smallest of ``m_pad`` random keys, the next ``n``, ...): each is still a
    uniformly random subset, and one ordering pays for ``m_pad // n`` of them, where a draw per round would
    pay ``m_pad`` keys for each. Rounds of one ordering are disjoint, so their votes are dependent
    (negatively, in every case measured: ``tests/test_eval_vote.py``) and a standard error computed as if
    they were independent errs on the safe side.

    >>> rows = draw_subsets(np.random.default_rng(0), 10, 2, 5)
    >>> rows.shape, len(set(rows.ravel().tolist()))  # five disjoint pairs cut from one ordering of ten slots
    ((1, 5, 2), 10)
    """
    if n >= m_pad:
        return np.broadcast_to(np.arange(m_pad), (problems, rounds, m_pad))
    blocks = min(m_pad // n, rounds)
    if blocks < BLOCKS_FROM:
        drawn = np.argpartition(rng.random((problems * rounds, m_pad)), n - 1, axis=1)[:, :n]
        return drawn.reshape(problems, rounds, n)
    orderings, take = -(-rounds // blocks), blocks * n
    keys = rng.random((problems * orderings, m_pad))
    first = np.argpartition(keys, take - 1, axis=1)[:, :take] if take < m_pad else np.argsort(keys, axis=1)
    ranked = np.take_along_axis(first, np.argsort(np.take_along_axis(keys, first, axis=1), axis=1), axis=1)
    return ranked.reshape(problems, orderings * blocks, n)[:, :rounds]


BLOCKS_FROM = 4
"""Disjoint subsets an ordering must hold before :func:`draw_subsets` cuts blocks from it: sorting an ordering
costs about what four single draws do (measured on 1,860 slots)."""


@dataclass
class Slots:
    """Every problem's ``M_pad`` slots as the tallies read them (problems x slots), for every curve drawn
    together.

    ``voters``: per voter set (samples with an answer and, for a weighted curve, a weight), the slots' groups
    (non-voters and padding in the last column, ``width - 1``) and the curves that share it. ``share``: each
    group's share of correct members (problems x groups) where that is the same in every draw (a grader that
    grades a group alike), else None and the drawn members' grades are tallied."""

    width: int
    correct: np.ndarray
    share: np.ndarray | None
    voters: list[tuple[np.ndarray, list[str]]]
    weights: dict[str, np.ndarray | None]

    @classmethod
    def build(cls, offsets: np.ndarray, group: np.ndarray, correct: np.ndarray,
              weights: dict[str, np.ndarray | None], m_pad: int) -> Slots:
        problem = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
        slot = np.arange(group.size) - offsets[problem]
        n_groups = int(group.max(initial=-1)) + 1

        def spread(values, fill, dtype):
            out = np.full((offsets.size - 1, m_pad), fill, dtype=dtype)
            out[problem, slot] = values
            return out

        answered = group >= 0
        cell = problem[answered] * max(n_groups, 1) + group[answered]
        right = np.bincount(cell, correct[answered], minlength=(offsets.size - 1) * n_groups)
        members = np.bincount(cell, minlength=(offsets.size - 1) * n_groups)
        alike = np.all((right == 0) | (right == members))
        voters: dict[bytes, tuple[np.ndarray, list[str]]] = {}
        for name, w in weights.items():
            votes = answered if w is None else answered & ~np.isnan(w)
            voters.setdefault(votes.tobytes(), (spread(np.where(votes, group, n_groups), n_groups, np.int64), []))[1].append(name)
        return cls(n_groups + 1, spread(correct, 0.0, float),
                   (right / np.maximum(members, 1)).reshape(offsets.size - 1, n_groups) if alike else None, list(voters.values()),
                   {k: None if w is None else spread(np.nan_to_num(w), 0.0, float) for k, w in weights.items()})

    def values(self, lo: int, drawn: np.ndarray) -> dict[str, np.ndarray]:
        """Each curve's voted correctness (problems x rounds) in the subsets ``drawn`` (problems x rounds x N)
        of problems ``lo``, ``lo + 1``, ..."""
        problems, rounds, n = drawn.shape
        hi, rows = lo + problems, problems * rounds
        if self.width == 1:  # no answer anywhere
            return {name: np.zeros((problems, rounds)) for name in self.weights}
        m_pad = self.correct.shape[1]
        index = (drawn + (np.arange(lo, hi) * m_pad)[:, None, None]).reshape(rows, n)  # into the flat slots

        def take(slots):
            return slots.ravel().take(index)

        out = {}
        for slot_group, names in self.voters:
            cells = (np.arange(rows)[:, None] * self.width + take(slot_group)).ravel()

            def tally(w=None, cells=cells):
                counts = np.bincount(cells, weights=None if w is None else w.ravel(), minlength=rows * self.width)
                return counts.reshape(rows, self.width)[:, :-1]

            count = tally()
            share = (np.repeat(self.share[lo:hi], rounds, axis=0) if self.share is not None
                     else tally(take(self.correct)) / np.maximum(count, 1))
            for name in names:
                w = self.weights[name]
                votes = count if w is None else tally(take(w))
                out[name] = winner_value(votes, count > 0, share).reshape(problems, rounds)
        return out


def winner_value(votes: np.ndarray, present: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Per round (a row): the winning group's share of correct members, ties split evenly, 0 with no vote."""
    votes = np.where(present, votes, -np.inf)
    tied = present & (votes == votes.max(axis=1, keepdims=True))
    n_tied = tied.sum(axis=1)
    return np.where(n_tied > 0, (tied * share).sum(axis=1) / np.maximum(n_tied, 1), 0.0)


def vote_rounds(group: np.ndarray, correct: np.ndarray, weight: np.ndarray, m_pad: int, n: int, rounds: int,
                rng: np.random.Generator) -> np.ndarray:
    """The voted correctness of ``rounds`` random ``n``-subsets of one problem (one value per round).

    ``group`` is -1 for samples that cannot vote (no answer; NaN weight); slots past ``len(group)`` are
    empty padding.
    """
    slots = Slots.build(np.array([0, group.size]), group, correct, {"w": weight}, m_pad)
    return slots.values(0, draw_subsets(rng, m_pad, n, rounds))["w"][0]


def vote_curves(pool: Pool, ns: list[int], weights: dict[str, np.ndarray | None], pad_to: int | None = None,
                target_se: float = 0.002, min_rounds: int = MIN_ROUNDS, max_rounds: int = 100_000, seed: int = 0,
                progress=None) -> dict[str, VoteEstimate]:
    """Monte-Carlo voting accuracy at every N for each named curve: majority where its weights are None,
    else weighted by them. The curves are tallied on the same draws (common random numbers: their
    differences are estimated more precisely than each alone), and each N draws from its own stream
    (``seed``, N), so a number does not depend on which other N are evaluated."""
    from prmkit.evaluate.bon import _padded_size

    m_pad = _padded_size(pool, pad_to)
    slots = Slots.build(pool.offsets, pool.group, pool.correct, weights, m_pad)
    out = {k: np.zeros((pool.n_problems, len(ns))) for k in weights}
    se = {k: np.zeros(len(ns)) for k in weights}
    used = np.zeros(len(ns), dtype=np.int64)

    def one(n: int):
        return _one_n(slots, pool.n_problems, m_pad, n, target_se, min_rounds, max_rounds, np.random.default_rng([seed, n]))

    # each N on its own stream, so they run side by side (numpy's sorts and draws release the GIL) and give
    # the numbers they give one after another; largest first, as they take longest
    order = sorted(range(len(ns)), key=lambda j: -ns[j])
    with ThreadPoolExecutor(max_workers=max(1, min(len(ns), len(os.sched_getaffinity(0))))) as executor:
        for j, (means, errors, rounds) in zip(order, executor.map(one, [ns[j] for j in order])):
            used[j] = rounds
            for k in weights:
                out[k][:, j], se[k][j] = means[k], errors[k]
            if progress is not None:
                progress.update(len(weights))
    return {k: VoteEstimate(out[k], se[k], used.copy()) for k in weights}


def vote_curve(pool: Pool, ns: list[int], weights: np.ndarray | None = None, pad_to: int | None = None,
               target_se: float = 0.002, min_rounds: int = MIN_ROUNDS, max_rounds: int = 100_000, seed: int = 0,
               progress=None) -> VoteEstimate:
    """Monte-Carlo voting accuracy at every N: majority when ``weights`` is None, else weighted."""
    return vote_curves(pool, ns, {"vote": weights}, pad_to, target_se, min_rounds, max_rounds, seed,
                       progress)["vote"]


def _one_n(slots: Slots, problems: int, m_pad: int, n: int, target_se: float, min_rounds: int, max_rounds: int,
           rng) -> tuple[dict, dict, int]:
    """Pilot rounds, then more until every curve's standard error reaches ``target_se``: per curve the
    per-problem means and the standard error, and the rounds.

    The variance is re-estimated after every batch (a pilot's estimate is itself noisy), and each new
    batch aims 10% past the rounds the current estimate asks for.
    """
    pilot = 1 if n >= m_pad else min_rounds  # every sample drawn: the vote is deterministic
    sums, sq = _run(slots, problems, m_pad, n, pilot, rng)
    rounds = pilot
    while True:
        var = {k: np.maximum(sq[k] / rounds - (s / rounds) ** 2, 0.0) * rounds / max(rounds - 1, 1)
               for k, s in sums.items()}
        se = {k: math.sqrt(v.sum() / rounds) / max(problems, 1) for k, v in var.items()}
        if n >= m_pad or max(se.values()) <= target_se or rounds >= max_rounds:
            return {k: s / rounds for k, s in sums.items()}, se, rounds
        worst = max(v.sum() for v in var.values())
        needed = math.ceil(1.1 * worst / (problems * target_se) ** 2) if target_se > 0 else max_rounds
        more = min(max(needed, rounds + 1), max_rounds) - rounds
        more_sums, more_sq = _run(slots, problems, m_pad, n, more, rng)
        sums = {k: s + more_sums[k] for k, s in sums.items()}
        sq = {k: s + more_sq[k] for k, s in sq.items()}
        rounds += more


_CELLS = 1 << 21  # slots a batch of draws and tallies holds (16 MB a float array)


def _run(slots: Slots, problems: int, m_pad: int, n: int, rounds: int, rng) -> tuple[dict, dict]:
    """Per curve, the sum and sum of squares over ``rounds`` rounds of every problem's voted correctness, in
    batches of problems and rounds that hold about :data:`_CELLS` slots."""
    sums = {k: np.zeros(problems) for k in slots.weights}
    sq = {k: np.zeros(problems) for k in slots.weights}
    per_round = max(m_pad, slots.width)
    batch = min(rounds, max(1, _CELLS // per_round))
    step = max(1, _CELLS // (batch * per_round))
    for lo in range(0, problems, step):
        hi = min(problems, lo + step)
        for start in range(0, rounds, batch):
            drawn = draw_subsets(rng, m_pad, n, min(batch, rounds - start), hi - lo)
            for k, vals in slots.values(lo, drawn).items():
                sums[k][lo:hi] += vals.sum(axis=1)
                sq[k][lo:hi] += (vals ** 2).sum(axis=1)
    return sums, sq
