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


def draw_subsets(rng: np.random.Generator, m_pad: int, n: int, rounds: int) -> np.ndarray:
    """``rounds`` uniformly random ``n``-subsets of ``m_pad`` slots, one per row (``rounds`` x ``n``).

    Where a slot ordering holds at least :data:`BLOCKS_FROM` disjoint subsets, rows come in blocks cut from one
    random ordering (the ``n`` smallest of ``m_pad`` random keys, the next ``n``, ...): each row is still a
    uniformly random subset, and one ordering pays for ``m_pad // n`` of them, where a draw per row would pay
    ``m_pad`` keys for each. Rows of one ordering are disjoint, so their votes are dependent (negatively, in
    every case measured: ``tests/test_eval_vote.py``) and a standard error computed as if they were
    independent errs on the safe side.

    >>> rows = draw_subsets(np.random.default_rng(0), 10, 2, 5)
    >>> rows.shape, len(set(rows.ravel().tolist()))  # five disjoint pairs cut from one ordering of ten slots
    ((5, 2), 10)
    """
    if n >= m_pad:
        return np.broadcast_to(np.arange(m_pad), (rounds, m_pad))
    blocks = min(m_pad // n, rounds)
    if blocks < BLOCKS_FROM:
        return np.argpartition(rng.random((rounds, m_pad)), n - 1, axis=1)[:, :n]
    orderings, take = -(-rounds // blocks), blocks * n
    keys = rng.random((orderings, m_pad))
    first = np.argpartition(keys, take - 1, axis=1)[:, :take] if take < m_pad else np.argsort(keys, axis=1)
    ranked = np.take_along_axis(first, np.argsort(np.take_along_axis(keys, first, axis=1), axis=1), axis=1)
    return ranked.reshape(orderings * blocks, n)[:rounds]


BLOCKS_FROM = 4
"""Disjoint subsets one ordering must hold before :func:`draw_subsets` cuts blocks from it: sorting an ordering
costs about what four single draws do (measured on 1,860 slots)."""


@dataclass
class ProblemSlots:
    """One problem's ``M_pad`` slots as the tallies read them, for every curve drawn together.

    ``voters`` maps a voter set (samples with an answer and, for a weighted curve, a weight) to its slots'
    groups (non-voters and padding in the last column, ``n_groups``) and the curves that share it;
    ``share`` is each group's share of correct members where that is the same in every draw (a grader
    that grades a group alike), else None and the drawn members are tallied."""

    n_groups: int
    correct: np.ndarray
    share: np.ndarray | None
    voters: list[tuple[np.ndarray, list[str]]]
    weights: dict[str, np.ndarray | None]

    @classmethod
    def build(cls, group: np.ndarray, correct: np.ndarray, weights: dict[str, np.ndarray | None],
              m_pad: int) -> ProblemSlots:
        n_groups = int(group.max(initial=-1)) + 1
        slot_correct = np.zeros(m_pad)
        slot_correct[: group.size] = correct
        answered = group >= 0
        lo = np.full(n_groups, np.inf)
        hi = np.full(n_groups, -np.inf)
        np.minimum.at(lo, group[answered], slot_correct[: group.size][answered])
        np.maximum.at(hi, group[answered], slot_correct[: group.size][answered])
        share = np.where(np.isfinite(lo), lo, 0.0) if np.array_equal(lo[np.isfinite(lo)], hi[np.isfinite(hi)]) else None
        voters: dict[bytes, tuple[np.ndarray, list[str]]] = {}
        slot_weights = {}
        for name, w in weights.items():
            votes = answered if w is None else answered & ~np.isnan(w)
            slot_group = np.full(m_pad, n_groups)
            slot_group[: group.size] = np.where(votes, group, n_groups)
            voters.setdefault(votes.tobytes(), (slot_group, []))[1].append(name)
            if w is not None:
                slot_weights[name] = np.zeros(m_pad)
                slot_weights[name][: group.size] = np.nan_to_num(w)
            else:
                slot_weights[name] = None
        return cls(n_groups, slot_correct, share, list(voters.values()), slot_weights)

    def values(self, drawn: np.ndarray) -> dict[str, np.ndarray]:
        """Each curve's voted correctness in every drawn subset (a row of ``drawn``)."""
        rounds = drawn.shape[0]
        if self.n_groups == 0:
            return {name: np.zeros(rounds) for name in self.weights}
        width = self.n_groups + 1
        size = rounds * width
        out = {}
        for slot_group, names in self.voters:
            cells = (np.arange(rounds)[:, None] * width + slot_group[drawn]).ravel()

            def tally(w=None, cells=cells):
                return np.bincount(cells, weights=w, minlength=size).reshape(rounds, width)[:, : self.n_groups]

            count = tally()
            share = self.share if self.share is not None else tally(self.correct[drawn].ravel()) / np.maximum(count, 1)
            for name in names:
                w = self.weights[name]
                out[name] = winner_value(count if w is None else tally(w[drawn].ravel()), count > 0, share)
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
    slots = ProblemSlots.build(group, correct, {"w": weight}, m_pad)
    return slots.values(draw_subsets(rng, m_pad, n, rounds))["w"]


def vote_curves(pool: Pool, ns: list[int], weights: dict[str, np.ndarray | None], pad_to: int | None = None,
                target_se: float = 0.002, min_rounds: int = 100, max_rounds: int = 100_000, seed: int = 0,
                progress=None) -> dict[str, VoteEstimate]:
    """Monte-Carlo voting accuracy at every N for each named curve: majority where its weights are None,
    else weighted by them. The curves are tallied on the same draws (common random numbers: their
    differences are estimated more precisely than each alone), and each N draws from its own stream
    (``seed``, N), so a number does not depend on which other N are evaluated."""
    from prmkit.evaluate.bon import _padded_size

    m_pad = _padded_size(pool, pad_to)
    problems = [ProblemSlots.build(pool.group[lo:hi], pool.correct[lo:hi],
                                   {k: None if w is None else w[lo:hi] for k, w in weights.items()}, m_pad)
                for lo, hi in zip(pool.offsets[:-1], pool.offsets[1:])]
    out = {k: np.zeros((pool.n_problems, len(ns))) for k in weights}
    se = {k: np.zeros(len(ns)) for k in weights}
    used = np.zeros(len(ns), dtype=np.int64)
    for j, n in enumerate(ns):
        means, errors, used[j] = _one_n(problems, m_pad, n, target_se, min_rounds, max_rounds,
                                        np.random.default_rng([seed, n]))
        for k in weights:
            out[k][:, j], se[k][j] = means[k], errors[k]
        if progress is not None:
            progress.update(len(weights))
    return {k: VoteEstimate(out[k], se[k], used.copy()) for k in weights}


def vote_curve(pool: Pool, ns: list[int], weights: np.ndarray | None = None, pad_to: int | None = None,
               target_se: float = 0.002, min_rounds: int = 100, max_rounds: int = 100_000, seed: int = 0,
               progress=None) -> VoteEstimate:
    """Monte-Carlo voting accuracy at every N: majority when ``weights`` is None, else weighted."""
    return vote_curves(pool, ns, {"vote": weights}, pad_to, target_se, min_rounds, max_rounds, seed,
                       progress)["vote"]


def _one_n(problems: list[ProblemSlots], m_pad: int, n: int, target_se: float, min_rounds: int, max_rounds: int,
           rng) -> tuple[dict, dict, int]:
    """Pilot rounds, then more until every curve's standard error reaches ``target_se``: per curve the
    per-problem means and the standard error, and the rounds.

    The variance is re-estimated after every batch (a pilot's estimate is itself noisy), and each new
    batch aims 10% past the rounds the current estimate asks for.
    """
    pilot = 1 if n >= m_pad else min_rounds  # every sample drawn: the vote is deterministic
    sums, sq = _run(problems, m_pad, n, pilot, rng)
    rounds, p = pilot, len(problems)
    while True:
        var = {k: np.maximum(sq[k] / rounds - (s / rounds) ** 2, 0.0) * rounds / max(rounds - 1, 1)
               for k, s in sums.items()}
        se = {k: math.sqrt(v.sum() / rounds) / max(p, 1) for k, v in var.items()}
        worst = max(var.values(), key=lambda v: v.sum())
        if n >= m_pad or max(se.values()) <= target_se or rounds >= max_rounds:
            return {k: s / rounds for k, s in sums.items()}, se, rounds
        needed = math.ceil(1.1 * worst.sum() / (p * target_se) ** 2) if target_se > 0 else max_rounds
        more = min(max(needed, rounds + 1), max_rounds) - rounds
        more_sums, more_sq = _run(problems, m_pad, n, more, rng)
        sums = {k: s + more_sums[k] for k, s in sums.items()}
        sq = {k: s + more_sq[k] for k, s in sq.items()}
        rounds += more


_CELLS = 1 << 21  # random keys per batch of rounds (16 MB)


def _run(problems: list[ProblemSlots], m_pad: int, n: int, rounds: int, rng) -> tuple[dict, dict]:
    """Per curve, the sum and sum of squares over ``rounds`` rounds of every problem's voted correctness."""
    names = list(problems[0].weights) if problems else []
    sums = {k: np.zeros(len(problems)) for k in names}
    sq = {k: np.zeros(len(problems)) for k in names}
    batch = max(1, _CELLS // m_pad)
    for p, slots in enumerate(problems):
        for start in range(0, rounds, batch):
            for k, vals in slots.values(draw_subsets(rng, m_pad, n, min(batch, rounds - start))).items():
                sums[k][p] += vals.sum()
                sq[k][p] += (vals ** 2).sum()
    return sums, sq
