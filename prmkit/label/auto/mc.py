"""Monte-Carlo step labels (Math-Shepherd): pure functions from rollout counts to ratings and values.

A prefix ``steps[:i + 1]`` is continued ``k`` times; ``c`` of the continuations reach the right answer.
The *soft* label of step ``i`` is the value estimate ``c / k``; the *hard* label is Math-Shepherd's: +1
when any continuation is right (``c > 0``), else -1. Both estimate whether the right answer is still
reachable from the prefix, not whether the step itself is right: a wrong step that a later step repairs
scores well, a right step on a problem the policy rarely solves scores badly. Rollouts never say
"neutral": a step is +1 or -1.

>>> mc_labels([8, 3, 0, None], k=8)
([1, 1, -1, None], [1.0, 0.375, 0.0, None])
>>> prefix_steps_to_roll(10, 4), prefix_steps_to_roll(3, 0)
([2, 4, 7, 9], [0, 1, 2])
"""

from __future__ import annotations

import math


def mc_labels(counts: list[int | None], k: int) -> tuple[list[int | None], list[float | None]]:
    """(hard ratings, soft values) of steps whose prefixes reached the right answer ``counts[i]`` times in
    ``k`` rollouts; None (not rolled out) stays unlabelled."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    for c in counts:
        if c is not None and not 0 <= c <= k:
            raise ValueError(f"a count of {c} right rollouts out of {k}")
    ratings = [None if c is None else (1 if c > 0 else -1) for c in counts]
    values = [None if c is None else c / k for c in counts]
    return ratings, values


def prefix_steps_to_roll(n_steps: int, max_prefixes: int) -> list[int]:
    """Indices ``i`` of the prefixes ``steps[:i + 1]`` to roll out: every step, or (``max_prefixes`` > 0)
    that many evenly spaced, the last step always among them."""
    if max_prefixes <= 0 or n_steps <= max_prefixes:
        return list(range(n_steps))
    return sorted({math.ceil((j + 1) * n_steps / max_prefixes) - 1 for j in range(max_prefixes)})


def first_wrong(ratings: list[int | None]) -> int | None:
    """Index of the first step rated -1 (None: no step is).

    >>> first_wrong([1, None, -1, -1]), first_wrong([1, 1])
    (2, None)
    """
    return next((i for i, r in enumerate(ratings) if r == -1), None)
