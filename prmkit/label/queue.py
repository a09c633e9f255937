"""Selection strategies: which candidate solutions go to the labellers in a generation.

A strategy is a pure function ``(candidates, k, rng) -> chosen``: it picks at most ``k`` of the
candidate solutions, in the order they should be served. It sees whole :class:`~prmkit.schema.Solution`
records, so a PRM-driven strategy (PRM800K's "convincing wrong answers": high PRM score in
``solution.scores``, wrong final answer in ``solution.grade``) needs no more than this signature.
Strategies are registered by name because users write the name on the command line
(``prmkit label push --strategy random``).

>>> from random import Random
>>> from prmkit.schema import Solution
>>> pool = [Solution.from_steps(f"p{i}", ["x"]) for i in range(5)]
>>> [s.problem.problem for s in select("random", pool, 3, Random(0))]
['p3', 'p4', 'p0']
>>> sorted(STRATEGIES)
['convincing_wrong_answer', 'in_order', 'random', 'top_k', 'uncertainty']
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random

from prmkit.schema import Solution

Strategy = Callable[[list[Solution], int, Random], list[Solution]]
"""``strategy(candidates, k, rng)`` returns at most ``k`` candidates, in serving order."""

STRATEGIES: dict[str, Strategy] = {}


def register(name: str) -> Callable[[Strategy], Strategy]:
    """Decorator: make a strategy available under ``name``."""
    def add(fn: Strategy) -> Strategy:
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} is registered already")
        STRATEGIES[name] = fn
        return fn
    return add


@register("random")
def random_strategy(candidates: list[Solution], k: int, rng: Random) -> list[Solution]:
    """A uniform sample of ``k`` candidates without replacement, in random order."""
    return rng.sample(candidates, min(k, len(candidates)))


@register("in_order")
def in_order(candidates: list[Solution], k: int, rng: Random) -> list[Solution]:
    """The first ``k`` candidates as given (for curated sets: QC, screening, tests)."""
    return list(candidates[:k])


def select(name: str, candidates: list[Solution], k: int | None, rng: Random) -> list[Solution]:
    """Run the strategy registered as ``name``; ``k=None`` means all candidates."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown selection strategy {name!r} (known: {', '.join(sorted(STRATEGIES))})")
    if k is not None and k < 0:
        raise ValueError(f"cannot select {k} candidates")
    chosen = STRATEGIES[name](list(candidates), len(candidates) if k is None else k, rng)
    if k is not None and len(chosen) > k:
        raise ValueError(f"strategy {name!r} returned {len(chosen)} candidates, more than the {k} asked for")
    return chosen


def _register_selection_strategies() -> None:
    """The selection stage's strategies (:mod:`prmkit.select`) under their names, beside the app's own."""
    from prmkit.select import label_strategy

    for name in ("convincing_wrong_answer", "uncertainty", "top_k"):  # "random" is the app's own already
        STRATEGIES.setdefault(name, label_strategy(name))


_register_selection_strategies()
