"""Choosing what to label: selection strategies over a pool of scored solutions.

Each strategy is a pure function ``(candidates, k, rng, ...) -> chosen`` over
:class:`~prmkit.schema.Solution` records. It ranks them by one solution-level score column
(``solution.scores[score]``, for example ``prm_min`` as ``prmkit score`` writes it) and returns at most
``k`` of them, in serving order. It works on any scored pool, the lab's or a real one, and feeds the
labelling app's queue (:mod:`prmkit.label.queue`) and the lab's simulated labellers alike.

- :func:`convincing_wrong_answer`: the paper's active learning. A share ``wrong_share`` (0.8) of each
  set is the most convincing wrong-answer samples (highest score, final answer fails the check), the
  rest the most convincing of the samples that remain.
- :func:`uncertainty`: the scores nearest 0.5.
- :func:`top_k`: the highest scores.
- :func:`random_sample`: a uniform sample.

``per_problem=True`` takes ``k`` from each problem (grouped by ``problem.id``, else the problem
text), so a pool of P problems gives up to ``k * P``; ``per_problem=False`` takes ``k`` from the whole
pool. Ties in score are broken by input order, so every strategy is deterministic given the pool and
the ``rng`` (only :func:`random_sample` draws from it).

>>> from random import Random
>>> from prmkit.schema import Problem, Solution
>>> pool = [Solution.from_steps(Problem("1+1?", id="p1"), ["x"], id=f"s{i}", grade=g, scores={"prm_min": p})
...         for i, (g, p) in enumerate([("correct", 0.9), ("incorrect", 0.8), ("incorrect", 0.3),
...                                     ("unparseable", 0.6), ("correct", 0.5)])]
>>> [s.id for s in convincing_wrong_answer(pool, 3, Random(0), wrong_share=0.67)]  # s3: no verdict, not wrong
['s0', 's1', 's2']
>>> [s.id for s in top_k(pool, 2, Random(0))], [s.id for s in uncertainty(pool, 2, Random(0))]
(['s0', 's1'], ['s4', 's3'])
>>> select(pool, SelectConfig("top_k", score="prm_min", k=1))[0].id
's0'

The labelling app's registry (:mod:`prmkit.label.queue`) offers ``convincing_wrong_answer``,
``uncertainty`` and ``top_k`` from here (``prmkit label push --strategy convincing_wrong_answer``); see
:func:`label_strategy` for the score column and ``k`` those use. This module knows nothing of the app.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from random import Random

from prmkit.evaluate.pool import steps_lost_key, truncation_note
from prmkit.schema import Solution

STRATEGY_NAMES = ("convincing_wrong_answer", "uncertainty", "top_k", "random")
"""The strategies :func:`select` knows, by the names configs and ``prmkit select --strategy`` use."""

DEFAULT_SCORES = ("prm_min", "prm_product", "prm", "score")
"""Score columns tried, in this order, when none is named: the first one every candidate carries."""

WRONG_GRADE_CHOICES = ("incorrect", "unparseable")
"""Grades ``wrong_grades`` may name."""

WRONG_GRADES = ("incorrect",)
"""Grades that make a wrong answer, by default. A solution without an answer is graded ``incorrect``;
``unparseable`` means the grader could not decide (a timeout, an answer it failed to read), which is
no verdict on the solution, so by default it is not counted wrong (and :func:`summarise` counts it apart)."""


class SelectionError(ValueError):
    """A pool that a strategy cannot rank: a missing or non-numeric score, or a missing grade."""


@dataclass(frozen=True)
class SelectConfig:
    """What :func:`select` (and ``prmkit select``) does. Inert: validation only."""

    strategy: str = field(default="convincing_wrong_answer", metadata={
        "help": "selection strategy", "choices": STRATEGY_NAMES})
    score: str | None = field(default=None, metadata={
        "help": "solution score column ranked on (the PRM's score); default: the first of "
                + ", ".join(DEFAULT_SCORES) + " that every candidate carries"})
    k: int = field(default=8, metadata={"help": "how many to choose: per problem with per_problem, else in all",
                                        "flag": "--count", "was": "--k", "metavar": "N"})
    per_problem: bool = field(default=False, metadata={
        "help": "choose k from each problem (grouped by problem.id, else the problem text) instead of k in all"})
    wrong_share: float = field(default=0.8, metadata={
        "help": "convincing_wrong_answer: share of each set that is wrong-answer samples (the paper: 0.8)"})
    wrong_grades: tuple[str, ...] = field(default=WRONG_GRADES, metadata={
        "help": "convincing_wrong_answer: the grades that count as a wrong answer (a solution with no answer is "
                "incorrect; add unparseable to count those the grader could not decide as wrong too)"})
    answered_only: bool = field(default=False, metadata={
        "help": "convincing_wrong_answer: a wrong answer must be an answer (the paper's wrong-answer solutions): "
                "a solution cut off before its answer is not counted wrong; needs the records' extracted answer"})
    seed: int = field(default=0, metadata={"help": "seed of the random generator (only random draws from it)"})

    def __post_init__(self):
        if self.strategy not in STRATEGY_NAMES:
            raise ValueError(f"unknown selection strategy {self.strategy!r} (known: {', '.join(STRATEGY_NAMES)})")
        if self.k < 0:
            raise ValueError(f"k must be at least 0, not {self.k}")
        if not 0.0 <= self.wrong_share <= 1.0:
            raise ValueError(f"wrong_share must be in [0, 1], not {self.wrong_share}")
        object.__setattr__(self, "wrong_grades", check_wrong_grades(self.wrong_grades))


def check_wrong_grades(grades) -> tuple[str, ...]:
    """``grades`` as a tuple, checked: a non-empty subset of :data:`WRONG_GRADES`."""
    grades = tuple(grades)
    if not grades or not set(grades) <= set(WRONG_GRADE_CHOICES):
        raise ValueError(f"wrong_grades must be one or more of {', '.join(WRONG_GRADE_CHOICES)}, not {grades}")
    return grades


# --- reading a pool -------------------------------------------------------------------------------

def problem_key(solution: Solution) -> str:
    """The problem a solution belongs to: ``problem.id``, else the problem text (as :mod:`prmkit.evaluate`)."""
    return solution.problem.id if solution.problem.id is not None else solution.problem.problem


def _name(i: int, s: Solution) -> str:
    return f"candidate {i} (id {s.id or 'none'}, problem {problem_key(s)!r})"


def default_score(candidates: list[Solution]) -> str:
    """The first of :data:`DEFAULT_SCORES` that every candidate carries; :class:`SelectionError` if none.

    >>> from prmkit.schema import Solution
    >>> default_score([Solution.from_steps("q", ["x"], scores={"prm_product": 0.2, "orm": 0.1})])
    'prm_product'
    """
    for name in DEFAULT_SCORES:
        if all(name in s.scores for s in candidates):
            return name
    seen = sorted({k for s in candidates for k in s.scores})
    raise NoScoreColumn(f"no score column to rank on: no {', '.join(DEFAULT_SCORES)} on every candidate "
                        f"(columns seen: {', '.join(seen) or 'none'}); name one with --score")


class NoScoreColumn(SelectionError):
    """No score column was named and none of :data:`DEFAULT_SCORES` is on every candidate."""


def scores_of(candidates: list[Solution], score: str | None) -> list[float]:
    """Every candidate's ``scores[score]`` as a float (``score=None``: :func:`default_score`)."""
    column = score if score is not None else default_score(candidates)
    missing = [i for i, s in enumerate(candidates) if column not in s.scores]
    if missing:
        raise SelectionError(missing_score_message(candidates, missing, column))
    out = []
    for i, s in enumerate(candidates):
        value = s.scores[column]
        # bool is an int in Python; a score of `true` is a bug upstream, not 1.0.
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise SelectionError(f"{_name(i, s)}: score {column!r} is {value!r}, not a number")
        out.append(float(value))
    return out


def missing_score_message(candidates: list[Solution], missing: list[int], column: str) -> str:
    """Why ``column`` cannot rank ``candidates``: on none of them, or not on some (the first named), and
    whether truncation at scoring took it (``NAME_steps_lost``, :func:`prmkit.evaluate.pool.steps_lost_key`)."""
    first, n = candidates[missing[0]], len(missing)
    if n == len(candidates):
        seen = sorted({k for s in candidates for k in s.scores})
        text = f"no candidate has the score {column!r} (--score {column}); columns seen: {', '.join(seen) or 'none'}"
    else:
        text = (f"{n} of {len(candidates)} candidates {'has' if n == 1 else 'have'} no score {column!r} (--score "
                f"{column}), the first {_name(missing[0], first)}, which has: {', '.join(sorted(first.scores)) or 'none'}")
    lost = [key for i in missing if (key := steps_lost_key(candidates[i].scores, column))]
    if lost:
        who = "It" if n == 1 else "All of them" if len(lost) == n else f"{len(lost)} of them"
        text += f". {truncation_note(who, set(lost), column)}"
    return text


def wrong_answers(candidates: list[Solution], grades: tuple[str, ...] = WRONG_GRADES,
                  answered_only: bool = False) -> list[bool]:
    """Whether each candidate's final answer fails the check (its grade is one of ``grades``; with
    ``answered_only``, and it has an extracted ``answer``).

    A candidate with no grade is an error, never a guess: grade the pool first. So is ``answered_only`` on a
    pool where no candidate has an extracted answer (answers never extracted, not a pool of cut-off
    solutions): every wrong answer would silently count as right.

    >>> pool = [Solution.from_steps("q", ["x"], grade="incorrect", answer=a) for a in ("3", None)]
    >>> wrong_answers(pool), wrong_answers(pool, answered_only=True)
    ([True, True], [True, False])
    """
    out = []
    for i, s in enumerate(candidates):
        if s.grade is None:
            raise SelectionError(f"{_name(i, s)} has no grade; convincing_wrong_answer needs every "
                                 "candidate graded (correct, incorrect or unparseable)")
        out.append(s.grade in grades and (s.answer is not None or not answered_only))
    if answered_only and candidates and all(s.answer is None for s in candidates):
        raise SelectionError(f"answered_only: none of the {len(candidates)} candidates has an extracted answer "
                             "(the records' answer field); extract answers first, or count unanswered solutions "
                             "as wrong (answered_only false)")
    return out


def wrong_quota(k: int, wrong_share: float) -> int:
    """How many of a set of ``k`` are wrong-answer samples: ``round(wrong_share * k)`` (Python's round).

    >>> wrong_quota(10, 0.8), wrong_quota(3, 0.8), wrong_quota(1, 0.8)
    (8, 2, 1)
    """
    return round(wrong_share * k)


def wrong_quotas(groups: list[list[int]], wrong: list[bool], keys: list[float], k: int,
                 wrong_share: float) -> list[int]:
    """Per group (problem), how many wrong answers its set of ``k`` takes, so that *all sets together*
    hold :func:`wrong_quota` ``(k * groups, wrong_share)`` of them.

    Rounding each set alone would make a set of 1 all wrong answers (``round(0.8) = 1``) and the mix
    vanish at small ``k``. So every group takes ``floor(wrong_share * k)``, and the remaining quota goes
    one each to the groups whose next wrong answer is the most convincing (highest key), among the
    groups that have one.

    >>> wrong_quotas([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]], [True, False] * 5,
    ...              [0.9, 0.5, 0.2, 0.5, 0.8, 0.5, 0.7, 0.5, 0.6, 0.5], 1, 0.8)
    [1, 0, 1, 1, 1]
    """
    base = math.floor(wrong_share * k + 1e-9)
    extra = wrong_quota(k * len(groups), wrong_share) - base * len(groups)
    quotas = [base] * len(groups)
    if extra <= 0:
        return quotas
    next_wrong = []
    for gi, g in enumerate(groups):
        ranked = _highest([i for i in g if wrong[i]], keys, base + 1)
        if len(ranked) > base:
            next_wrong.append((-keys[ranked[base]], gi))
    for _, gi in sorted(next_wrong)[:extra]:
        quotas[gi] += 1
    return quotas


def _groups(candidates: list[Solution], per_problem: bool) -> list[list[int]]:
    """Candidate indices per problem, problems in order of first appearance (one group if not per problem)."""
    if not per_problem:
        return [list(range(len(candidates)))]
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(candidates):
        groups.setdefault(problem_key(s), []).append(i)
    return list(groups.values())


def _highest(indices: list[int], keys: list[float], n: int) -> list[int]:
    """The ``n`` indices with the highest ``keys``, highest first, ties in input order."""
    return sorted(indices, key=lambda i: (-keys[i], i))[:max(n, 0)]


def _check_k(k: int) -> None:
    if k < 0:
        raise ValueError(f"cannot select {k} candidates")


# --- the strategies -------------------------------------------------------------------------------

def top_k(candidates: list[Solution], k: int, rng: Random | None = None, *, score: str | None = None,
          per_problem: bool = False) -> list[Solution]:
    """The ``k`` highest-scored candidates (per problem, or in all), highest first."""
    _check_k(k)
    keys = scores_of(candidates, score)
    return [candidates[i] for g in _groups(candidates, per_problem) for i in _highest(g, keys, k)]


def uncertainty(candidates: list[Solution], k: int, rng: Random | None = None, *, score: str | None = None,
                per_problem: bool = False) -> list[Solution]:
    """The ``k`` candidates whose score is nearest 0.5 (per problem, or in all), most uncertain first.

    For one probability, nearest 0.5 is highest binary entropy. Step-level entropy is not used: a
    solution is labelled whole, and its solution score is what the PRM says about it.

    >>> from prmkit.schema import Solution
    >>> pool = [Solution.from_steps("q", ["x"], id=str(p), scores={"prm": p}) for p in (0.1, 0.45, 0.7, 0.52)]
    >>> [s.id for s in uncertainty(pool, 2)]
    ['0.52', '0.45']
    """
    _check_k(k)
    keys = [-abs(p - 0.5) for p in scores_of(candidates, score)]
    return [candidates[i] for g in _groups(candidates, per_problem) for i in _highest(g, keys, k)]


def random_sample(candidates: list[Solution], k: int, rng: Random, *, per_problem: bool = False) -> list[Solution]:
    """A uniform sample of ``k`` without replacement (per problem, or in all), in random order.

    Global sampling draws exactly as the labelling app's ``random`` strategy does.
    """
    _check_k(k)
    return [candidates[i] for g in _groups(candidates, per_problem) for i in rng.sample(g, min(k, len(g)))]


def convincing_wrong_answer(candidates: list[Solution], k: int, rng: Random | None = None, *,
                            score: str | None = None, wrong_share: float = 0.8,
                            per_problem: bool = False, wrong_grades: tuple[str, ...] = WRONG_GRADES,
                            answered_only: bool = False) -> list[Solution]:
    """The paper's active-learning mix: most convincing wrong answers, then the most convincing of the rest.

    Of the ``k`` (per problem, or in all), a share ``wrong_share`` are the highest-scored wrong-answer
    samples (grade in ``wrong_grades``, by default :data:`WRONG_GRADES`; with ``answered_only``, only those
    with an answer: :func:`wrong_answers`) and the others the
    highest-scored of all samples that remain (which may hold further wrong answers, as in the paper).
    Per problem, the share holds over all problems together (:func:`wrong_quotas`): at ``k = 1`` and
    0.8, 80% of the problems give their most convincing wrong answer and 20% their most convincing
    sample. When a set has too few wrong answers the remainder fills the gap, so a set is
    ``min(k, pool size)`` long. Every candidate must be graded. The chosen are returned highest score first (per problem, in order of appearance).

    >>> from prmkit.schema import Solution
    >>> pool = [Solution.from_steps("q", ["x"], id=f"{g[0]}{p}", grade=g, scores={"prm_min": p})
    ...         for g, p in [("correct", 0.9), ("correct", 0.8), ("incorrect", 0.7), ("incorrect", 0.2)]]
    >>> [s.id for s in convincing_wrong_answer(pool, 3, wrong_share=0.67)]
    ['c0.9', 'i0.7', 'i0.2']
    """
    _check_k(k)
    if not 0.0 <= wrong_share <= 1.0:
        raise ValueError(f"wrong_share must be in [0, 1], not {wrong_share}")
    keys = scores_of(candidates, score)
    wrong = wrong_answers(candidates, check_wrong_grades(wrong_grades), answered_only)
    chosen = []
    groups = _groups(candidates, per_problem)
    for g, quota in zip(groups, wrong_quotas(groups, wrong, keys, k, wrong_share)):
        picked = _highest([i for i in g if wrong[i]], keys, quota)
        taken = set(picked)
        picked += _highest([i for i in g if i not in taken], keys, min(k, len(g)) - len(picked))
        chosen += [candidates[i] for i in sorted(picked, key=lambda i: (-keys[i], i))]
    return chosen


# --- one entry point ------------------------------------------------------------------------------

def select(candidates: list[Solution], config: SelectConfig, rng: Random | None = None) -> list[Solution]:
    """Run ``config.strategy`` on ``candidates`` (``rng`` default: ``Random(config.seed)``)."""
    rng = rng if rng is not None else Random(config.seed)
    c = config
    if c.strategy == "random":
        return random_sample(candidates, c.k, rng, per_problem=c.per_problem)
    if c.strategy == "convincing_wrong_answer":
        return convincing_wrong_answer(candidates, c.k, rng, score=c.score, wrong_share=c.wrong_share,
                                       per_problem=c.per_problem, wrong_grades=c.wrong_grades,
                                       answered_only=c.answered_only)
    fn = {"top_k": top_k, "uncertainty": uncertainty}[c.strategy]
    return fn(candidates, c.k, rng, score=c.score, per_problem=c.per_problem)


def summarise(chosen: list[Solution], wrong_grades: tuple[str, ...] = WRONG_GRADES,
              candidates: list[Solution] | None = None) -> dict:
    """Counts of a selection: how many, the wrong-answer share (None if any is ungraded), how many per
    problem, and how many the grader could not decide (``ungradable``: grade ``unparseable``), among
    the chosen and, given ``candidates``, in the pool.

    >>> from prmkit.schema import Problem, Solution
    >>> summarise([Solution.from_steps(Problem("q", id="a"), ["x"], grade=g) for g in ("correct", "incorrect")])
    {'chosen': 2, 'problems': 1, 'wrong_share': 0.5, 'per_problem': {'a': 2}, 'ungradable': 0}
    """
    per_problem: dict[str, int] = {}
    for s in chosen:
        per_problem[problem_key(s)] = per_problem.get(problem_key(s), 0) + 1
    graded = all(s.grade is not None for s in chosen)
    share = sum(s.grade in wrong_grades for s in chosen) / len(chosen) if chosen and graded else None
    out = {"chosen": len(chosen), "problems": len(per_problem), "wrong_share": share, "per_problem": per_problem,
           "ungradable": sum(s.grade == "unparseable" for s in chosen)}
    if candidates is not None:
        out["ungradable_in_pool"] = sum(s.grade == "unparseable" for s in candidates)
    return out


# --- the labelling app's registry -----------------------------------------------------------------

def label_strategy(name: str) -> Callable[[list[Solution], int, Random], list[Solution]]:
    """``name`` as a labelling-app strategy ``(candidates, k, rng) -> chosen``.

    That signature has no score column and its ``k`` is a total (``prmkit label push --count``), so
    these rank on :func:`default_score` (the first of ``prm_min``, ``prm_product``, ``prm``, ``score``
    every candidate carries; an error if none) and choose ``k`` in all, with ``wrong_share`` 0.8.
    For another column or per-problem quotas, run ``prmkit select`` first and push its output with
    ``--strategy in_order``.
    """
    config = {"strategy": name, "score": None, "per_problem": False}

    def strategy(candidates: list[Solution], k: int, rng: Random) -> list[Solution]:
        try:
            return select(candidates, SelectConfig(**config, k=k), rng)
        except NoScoreColumn as e:  # this path has no --score: say how to rank on another column
            raise NoScoreColumn(f"{str(e).removesuffix('; name one with --score')}; to rank on another column, "
                                "choose with `prmkit select --score COL` and push its output with "
                                "--strategy in_order") from None

    strategy.__name__ = strategy.__qualname__ = f"label_{name}"
    strategy.__module__ = __name__
    strategy.__doc__ = f"{name}, on the default score column, k in all (see prmkit.select.label_strategy)."
    return strategy
