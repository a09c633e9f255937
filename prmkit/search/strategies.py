"""Search strategies with a PRM, each over many problems at once: best-of-N, weighted best-of-N, beam search,
DVTS, lookahead and particle filtering (:data:`STRATEGIES`; :class:`SearchConfig` picks one).

- ``best_of_n``: N whole samples, the one the PRM scores highest (its aggregation, ``min`` by default).
- ``weighted``: N whole samples; answers grouped by the grader's equivalence (``1/2`` and ``0.5`` one group),
  each group's scores summed (or its best, ``vote="max"``); the best sample of the winning group.
- ``beam``: N first steps; each round the N/M highest-scoring unfinished prefixes are kept and each is extended
  by M one-step continuations, until N solutions have ended or ``max_depth`` rounds. ``lookahead`` k > 0 ranks a
  prefix by its score after k greedy steps more (those steps are scored: search-and-learn generated them and
  scored the prefix without them, so its lookahead cost compute and changed nothing); k = 0 is plain beam search.
- ``dvts``: N/M subtrees from N/M first steps; each subtree extends its one prefix by M steps and keeps the best,
  greedily, until it ends; the final pick is by ``final`` (weighted by default, as DVTS's authors did).
- ``particles``: N particles, each extended by one step a round and resampled in proportion to the PRM's score of
  its newest step. Particles are resampled only against particles of the same depth (its_hub compared a
  reference particle's whole-solution weight with the others' partial ones, #54); one that ends leaves the
  population for the final pick.

Every strategy's final pick is among the solutions that ended (``final``: ``best`` or ``weighted``). The
trace records every candidate (its parent, round, step, whether it was kept) and the cost its making took.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from prmkit.evaluate.aggregate import AGGREGATIONS, aggregate
from prmkit.generate.backend import problem_key, sample_seed
from prmkit.schema import Problem
from prmkit.search.core import Candidate, SearchResult, Tracker

STRATEGIES = ("best_of_n", "weighted", "beam", "dvts", "particles")


@dataclass(frozen=True)
class SearchConfig:
    """One search. Inert; the defaults search 16 samples' worth by beam search."""

    strategy: str = field(default="beam", metadata={"help": f"one of {', '.join(STRATEGIES)}"})
    n: int = field(default=16, metadata={"help": "samples, beams or particles (the budget)"})
    m: int = field(default=4, metadata={"help": "beam search and DVTS: continuations per kept prefix (N/M kept)"})
    lookahead: int = field(default=0, metadata={"help": "beam search and DVTS: greedy steps scored ahead of a "
                                                       "prefix when ranking it (0: none)"})
    aggregation: str = field(default="min", metadata={"help": f"a prefix's score from its steps' ({', '.join(AGGREGATIONS)})"})
    final: str = field(default="", metadata={"help": "the final pick: best or weighted (default: weighted for "
                                                     "weighted and dvts, best otherwise)"})
    vote: str = field(default="sum", metadata={"help": "weighted pick: a group's sum of scores or its max"})
    max_depth: int = field(default=40, metadata={"help": "most steps a solution may take"})
    seed: int = field(default=0, metadata={"help": "seed of particle resampling"})

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r} (expected one of {', '.join(STRATEGIES)})")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {self.aggregation!r} (expected one of {', '.join(AGGREGATIONS)})")
        if self.final not in ("", "best", "weighted") or self.vote not in ("sum", "max"):
            raise ValueError("final must be best or weighted; vote sum or max")
        if min(self.n, self.m, self.max_depth) < 1 or self.lookahead < 0:
            raise ValueError("n, m and max_depth must be at least 1, lookahead 0 or more")
        if self.strategy in ("beam", "dvts") and self.n % self.m:
            raise ValueError(f"{self.strategy}: n ({self.n}) must be a multiple of m ({self.m})")

    @property
    def final_pick(self) -> str:
        return self.final or ("weighted" if self.strategy in ("weighted", "dvts") else "best")


def search(problems: list[Problem], expander, scorer, cfg: SearchConfig) -> list[SearchResult]:
    """Search every problem with ``cfg.strategy``; one :class:`SearchResult` per problem, in order."""
    run = Run(problems, expander, scorer, cfg)
    {"best_of_n": run.sampled, "weighted": run.sampled, "beam": run.beam, "dvts": run.dvts,
     "particles": run.particles}[cfg.strategy]()
    return run.results()


class Run:
    """One search over ``problems``: the tracker, the batched calls, and each strategy's loop."""

    def __init__(self, problems, expander, scorer, cfg: SearchConfig):
        self.problems, self.expander, self.scorer, self.cfg = problems, expander, scorer, cfg
        self.tracker = Tracker(problems)
        self.done: list[list[Candidate]] = [[] for _ in problems]
        if cfg.final_pick == "weighted":  # the grader's symbolic worker starts (sympy's import) while the search runs
            from prmkit.grade.symbolic import default_pool

            default_pool().prestart()

    # --- the batched calls -----------------------------------------------------------------------------

    def extend(self, asks: list[tuple[int, Candidate, int]], round_: int, greedy: bool = False) -> list[tuple[int, Candidate]]:
        """Each ``(problem, parent, k)``: ``k`` children, scored, in the order asked. Parents with the same steps
        are asked once for the sum: a backend seeds sample ``j`` of a prefix by its text, so two asks would grow
        the same children; the samples are then dealt out to the parents in order."""
        merged: dict[tuple[int, tuple[str, ...]], list] = {}
        for p, parent, k in asks:
            merged.setdefault((p, tuple(parent.steps)), []).append((parent, k))
        order = list(merged.items())
        outs = self.expander.extend([(self.problems[p], list(steps), sum(k for _, k in group), greedy)
                                     for (p, steps), group in order])
        made: dict[int, list[Candidate]] = {}
        for ((p, _), group), exts in zip(order, outs, strict=True):
            if len(exts) != sum(k for _, k in group):
                raise ValueError(f"the expander returned {len(exts)} continuations for a request of "
                                 f"{sum(k for _, k in group)}")
            dealt = iter(exts)
            for parent, k in group:
                for ext in itertools.islice(dealt, k):
                    child = Candidate([*parent.steps, *ext.steps], list(parent.scores), ext.finished,
                                      parent=parent.id if parent.id >= 0 else None)
                    made.setdefault(id(parent), []).append(self.tracker.made(p, child, round_, ext.tokens))
        children = [(p, made[id(parent)].pop(0)) for p, parent, k in asks for _ in range(k)]
        self.score(children)
        return children

    def score(self, cands: list[tuple[int, Candidate]]) -> None:
        """The PRM's P(correct) of every step of each candidate's prefix. A prefix the PRM truncated (it scored
        fewer steps than it has) is marked: it cannot be judged, and ranks last."""
        outs = self.scorer.score([(self.problems[p], c.steps) for p, c in cands])
        for (p, c), (probs, tokens) in zip(cands, outs, strict=True):
            c.scores = [float(x) for x in probs]
            c.truncated = len(c.scores) < len(c.steps)
            if c.truncated:
                self.tracker.trace[p][c.id]["truncated"] = True
            self.tracker.scored(p, tokens)

    def value(self, c: Candidate) -> float:
        return value_of(c, self.cfg.aggregation)

    def ranked(self, cands: list[tuple[int, Candidate]], round_: int) -> list[tuple[int, Candidate, float]]:
        """Each candidate with the value it is ranked by: its own score, or with ``lookahead`` k its score
        after k greedy steps more (those scored; the candidate keeps its own steps)."""
        values = {id(c): self.value(c) for _, c in cands}
        ahead = [(p, c) for p, c in cands if not c.finished] if self.cfg.lookahead else []
        tips = {id(c): (p, c) for p, c in ahead}
        for _ in range(self.cfg.lookahead):
            open_ = [(key, p, c) for key, (p, c) in tips.items() if not c.finished]
            if not open_:
                break
            for (key, p, _), (_, child) in zip(open_, self.extend([(p, c, 1) for _, p, c in open_], round_, greedy=True)):
                tips[key] = (p, child)
        values.update({key: self.value(c) for key, (_, c) in tips.items()})
        return [(p, c, values[id(c)]) for p, c in cands]

    # --- the strategies ----------------------------------------------------------------------------------

    def sampled(self) -> None:
        outs = self.expander.rollout([(p, [], self.cfg.n) for p in self.problems])
        cands = []
        for p, exts in enumerate(outs):
            for ext in exts:
                cands.append((p, self.tracker.made(p, Candidate(list(ext.steps), finished=True), 0, ext.tokens)))
        self.score(cands)
        for p, c in cands:
            self.done[p].append(c)

    def beam(self) -> None:
        keep = self.cfg.n // self.cfg.m
        frontier = {p: [Candidate([])] for p in range(len(self.problems))}
        for depth in range(self.cfg.max_depth):
            asks = [(p, c, self.cfg.n if depth == 0 else self.cfg.m) for p, front in frontier.items() for c in front
                    if len(self.done[p]) < self.cfg.n]
            if not asks:
                break
            frontier = self.settle(self.extend(asks, depth), depth, keep)

    def dvts(self) -> None:
        trees, m, last = self.cfg.n // self.cfg.m, self.cfg.m, self.cfg.max_depth
        tips = self.extend([(p, Candidate([]), trees) for p in range(len(self.problems))], 0)
        for depth in range(1, last + 1):
            for p, c in tips:
                if c.finished or depth == last:
                    self.done[p].append(c)
            tips = [(p, c) for p, c in tips if not c.finished and depth < last]
            if not tips:
                break
            ranked = self.ranked(self.extend([(p, c, m) for p, c in tips], depth), depth)
            tips = []
            for k in range(0, len(ranked), m):  # each tip's m children, in the order asked: its subtree's best
                p, best, _ = max(ranked[k:k + m], key=lambda t: t[2])
                self.tracker.kept(p, best)
                tips.append((p, best))

    def particles(self) -> None:
        # each problem's own stream, by its key: a problem resamples alike whatever else is searched beside it
        rngs = [np.random.default_rng(sample_seed(self.cfg.seed, "particles", [problem_key(q)], 0))
                for q in self.problems]
        alive = {p: [Candidate([])] * self.cfg.n for p in range(len(self.problems))}
        for depth in range(self.cfg.max_depth):
            asks = [(p, c, 1) for p, pop in alive.items() for c in pop]
            if not asks:
                break
            children = self.extend(asks, depth)
            grown: dict[int, list[Candidate]] = {p: [] for p in alive}
            for p, c in children:
                (self.done[p] if c.finished or depth == self.cfg.max_depth - 1 else grown[p]).append(c)
            alive = {p: self.resample(pop, rngs[p], p) for p, pop in grown.items() if pop}

    # --- shared steps ------------------------------------------------------------------------------------

    def settle(self, children, depth: int, keep: int) -> dict[int, list[Candidate]]:
        """Ended children to the final pick; of the rest, the ``keep`` best per problem carried on."""
        frontier: dict[int, list] = {}
        for p, c, value in self.ranked(children, depth):
            if c.finished or depth == self.cfg.max_depth - 1:
                self.done[p].append(c)
            else:
                frontier.setdefault(p, []).append((value, c))
        out = {}
        for p, scored in frontier.items():
            best = sorted(scored, key=lambda t: -t[0])[:keep]  # stable: ties keep the order they were made in
            for _, c in best:
                self.tracker.kept(p, c)
            out[p] = [c for _, c in best]
        return out

    def resample(self, pop: list[Candidate], rng, p: int) -> list[Candidate]:
        """``len(pop)`` particles drawn from ``pop`` (all of one depth) in proportion to their newest step's score."""
        w = np.array([c.scores[-1] if c.scores and not c.truncated else 0.0 for c in pop], dtype=float)
        w = np.full(len(pop), 1.0 / len(pop)) if w.sum() <= 0 else w / w.sum()
        drawn = [pop[i] for i in rng.choice(len(pop), size=len(pop), p=w)]
        for c in {id(c): c for c in drawn}.values():
            self.tracker.kept(p, c)
        return drawn

    def results(self) -> list[SearchResult]:
        return [SearchResult(problem, pick(self.done[p], self.cfg), self.tracker.trace[p], self.tracker.cost[p])
                for p, problem in enumerate(self.problems)]


def pick(cands: list[Candidate], cfg: SearchConfig, grouper=None) -> Candidate | None:
    """The final pick among solutions that ended: the best by the aggregated score, or (``weighted``) the best
    member of the answer group with the largest summed (or max) score; answerless solutions vote for nothing."""
    ended = [c for c in cands if c.finished] or list(cands)
    if not ended:
        return None

    def value(c: Candidate) -> float:
        return value_of(c, cfg.aggregation)

    if cfg.final_pick == "best":
        return max(ended, key=value)
    answers = [answer_of(c) for c in ended]
    voters = [i for i, a in enumerate(answers) if a is not None]
    if not voters:
        return max(ended, key=value)
    groups = (grouper or default_grouper())([answers[i] for i in voters])
    tally: Counter = Counter()
    for i, g in zip(voters, groups):
        v = max(value(ended[i]), 0.0)
        tally[g] = max(tally[g], v) if cfg.vote == "max" else tally[g] + v
    top = max(tally.values())
    winner = min(g for g, v in tally.items() if v == top)  # ties: the group seen first
    return max((ended[i] for i, g in zip(voters, groups) if g == winner), key=value)


def value_of(c: Candidate, how: str) -> float:
    """A candidate's score: its steps' P(correct) aggregated; -inf when the PRM scored none or not all of them."""
    return aggregate(c.scores, how) if c.scores and not c.truncated else float("-inf")


def answer_of(c: Candidate) -> str | None:
    """The final answer a candidate wrote (its ``# Answer`` step), or None."""
    from prmkit.grade import extract_answer

    return extract_answer("\n".join(c.steps)) if c.steps else None


def default_grouper():
    """Answers grouped as ``prmkit eval bon`` groups them: by the grader's equivalence."""
    from prmkit.evaluate.pool import answer_grouper

    return answer_grouper("grader")


__all__ = ["STRATEGIES", "Run", "SearchConfig", "answer_of", "pick", "search", "value_of"]
