"""What every search strategy works with: candidates, their cost, and the two things a search asks of the world.

- An :class:`Expander` samples next steps: ``extend(requests)`` gives, per ``(problem, prefix_steps, k, greedy)``,
  ``k`` one-step continuations (:class:`Extension`); ``rollout(requests)`` whole continuations to the end.
  :class:`~prmkit.search.adapters.BackendExpander` puts any ``prmkit generate`` backend behind it.
- A :class:`PrefixScorer` scores prefixes: ``score(items)`` gives, per ``(problem, steps)``, the PRM's
  P(correct) of every step and the tokens it read. :class:`~prmkit.search.adapters.PRMScorer` puts a
  ``prmkit train`` PRM behind it.

Every call is batched across the problems searched together, and every answer is matched back to its request
by position, never by text (search-and-learn #28: interleaved prompts sent completions to other problems).
:class:`Cost` counts what a search spent: generated tokens, PRM calls (prefixes scored) and the tokens the PRM
read, so strategies are compared at equal compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from prmkit.schema import Problem


@dataclass
class Extension:
    """New steps after a prefix: ``steps`` (one for ``extend``), whether the solution ended with them
    (``finished``), and the tokens generated for them."""

    steps: list[str]
    finished: bool
    tokens: int


class Expander(Protocol):
    def extend(self, requests: list[tuple[Problem, list[str], int, bool]]) -> list[list[Extension]]:
        """Per ``(problem, prefix_steps, k, greedy)``: ``k`` one-step continuations (``greedy``: the most
        likely step, the same for every one of the ``k``)."""

    def rollout(self, requests: list[tuple[Problem, list[str], int]]) -> list[list[Extension]]:
        """Per ``(problem, prefix_steps, k)``: ``k`` continuations to the end."""


class PrefixScorer(Protocol):
    def score(self, items: list[tuple[Problem, list[str]]]) -> list[tuple[np.ndarray, int]]:
        """Per ``(problem, steps)``: P(correct) of each step, and the tokens read."""


@dataclass
class Cost:
    """What a search spent on one problem."""

    generated_tokens: int = 0
    prm_calls: int = 0
    prm_tokens: int = 0

    def add(self, other: Cost) -> Cost:
        return Cost(self.generated_tokens + other.generated_tokens, self.prm_calls + other.prm_calls,
                    self.prm_tokens + other.prm_tokens)


@dataclass
class Candidate:
    """A partial or whole solution in a search: its steps, the PRM's P(correct) of each, whether it ended, its
    id in the problem's trace and its parent's (None for a first step), and whether the PRM truncated it (scored
    fewer steps than it has: it cannot be judged)."""

    steps: list[str]
    scores: list[float] = field(default_factory=list)
    finished: bool = False
    id: int = -1
    parent: int | None = None
    truncated: bool = False


@dataclass
class SearchResult:
    """One problem's search: the chosen solution (one that ended where any did, else the best unfinished one;
    None only when nothing was made), every candidate made (the trace, each with the round it was made in and
    whether it was kept), and the cost."""

    problem: Problem
    chosen: Candidate | None
    trace: list[dict]
    cost: Cost

    def record(self) -> dict:
        """The result as a JSON record."""
        chosen = None if self.chosen is None else {"steps": self.chosen.steps, "scores": self.chosen.scores,
                                                    "id": self.chosen.id, "finished": self.chosen.finished}
        return {"problem": self.problem.problem, "answer": self.problem.answer, "chosen": chosen,
                "trace": self.trace, "cost": vars(self.cost)}


class Tracker:
    """Per problem: numbers each candidate, keeps the trace and adds up the cost."""

    def __init__(self, problems: list[Problem]):
        self.trace: list[list[dict]] = [[] for _ in problems]
        self.cost = [Cost() for _ in problems]

    def made(self, p: int, cand: Candidate, round_: int, tokens: int) -> Candidate:
        cand.id = len(self.trace[p])
        self.trace[p].append({"id": cand.id, "parent": cand.parent, "round": round_, "step": cand.steps[-1] if
                              cand.steps else "", "finished": cand.finished, "kept": False})
        self.cost[p].generated_tokens += tokens
        return cand

    def kept(self, p: int, cand: Candidate) -> None:
        self.trace[p][cand.id]["kept"] = True

    def scored(self, p: int, tokens: int) -> None:
        self.cost[p].prm_calls += 1
        self.cost[p].prm_tokens += tokens


__all__ = ["Candidate", "Cost", "Expander", "Extension", "PrefixScorer", "SearchResult", "Tracker"]
