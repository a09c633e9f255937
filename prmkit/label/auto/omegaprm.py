"""OmegaPRM's binary search for the first error, with rollouts as the probe: a pure function.

OmegaPRM (Luo et al., 2024) estimates ``MC(s) = c / k`` for a prefix ``s`` and calls a step correct iff
``MC > 0``. A solution with a wrong final answer has an error somewhere; if the values are monotone
(once the right answer is out of reach it stays out), the first error is the first prefix with
``MC = 0``, and binary search finds it with about ``log2(n)`` probes instead of ``n``. Where the values
are not monotone (a later step repairs an error), the search still stops at a prefix with ``MC = 0``
whose predecessor has ``MC > 0``: a first error of the stretch it searched, which exhaustive rollouts
may place earlier.

>>> values = [True, True, False, False, False]   # MC > 0 of prefixes 0..4
>>> result = binary_first_error(5, lambda i: values[i])
>>> result.first_error, result.probes
(2, [(2, False), (1, True)])
>>> exhaustive_first_error(5, lambda i: values[i])
2
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Search:
    """The outcome of one search: the first error (None when the budget ran out first), every probe
    ``(prefix index, MC > 0)`` in order, and the settled stretch: steps before ``low`` are right."""

    first_error: int | None
    probes: list[tuple[int, bool]] = field(default_factory=list)
    low: int = 0

    @property
    def resolved(self) -> bool:
        return self.first_error is not None


def binary_first_error(n_steps: int, reachable: Callable[[int], bool], max_probes: int = 0,
                       last_known_wrong: bool = True) -> Search:
    """Search prefixes ``0 .. n_steps - 1`` for the first whose right answer is out of reach
    (``reachable(i)`` is ``MC(steps[:i + 1]) > 0``). ``last_known_wrong``: the whole solution is known to be
    wrong (its final answer is graded incorrect), so the last prefix is not probed. ``max_probes`` (0: no
    limit) cuts the search short: the result is then unresolved, with the stretch it settled."""
    if n_steps < 1:
        raise ValueError("a search needs at least one step")
    search = Search(None)
    low, high = 0, n_steps - 1

    def probe(i: int) -> bool | None:
        if max_probes and len(search.probes) >= max_probes:
            return None
        ok = bool(reachable(i))
        search.probes.append((i, ok))
        return ok

    if not last_known_wrong:
        ok = probe(high)
        if ok is None:
            return search
        if ok:  # the answer is still reachable after the last step: no error found
            search.low = n_steps
            return search
    while low < high:
        mid = (low + high) // 2
        ok = probe(mid)
        if ok is None:
            search.low = low
            return search
        low, high = (mid + 1, high) if ok else (low, mid)
    search.first_error, search.low = low, low
    return search


def exhaustive_first_error(n_steps: int, reachable: Callable[[int], bool]) -> int | None:
    """The first prefix with ``MC = 0``, probing every one in order (what ``mc`` measures)."""
    return next((i for i in range(n_steps) if not reachable(i)), None)


def search_labels(search: Search, n_steps: int) -> list[int | None]:
    """Ratings from a search: +1 before the first error, -1 at it, unlabelled after (the first error ends
    what the search says, as a PRM800K phase-2 labeller stops). A search that found no error rates every
    step +1; one cut short rates its settled stretch only.

    >>> search_labels(Search(2, [], 2), 4), search_labels(Search(None, [], 4), 4), search_labels(Search(None, [], 1), 3)
    ([1, 1, -1, None], [1, 1, 1, 1], [1, None, None])
    """
    if search.first_error is not None:
        i = search.first_error
        return [1] * i + [-1] + [None] * (n_steps - i - 1)
    settled = min(search.low, n_steps)
    return [1] * settled + [None] * (n_steps - settled)
