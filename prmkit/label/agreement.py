"""Agreement between labellers: Cohen's kappa (two raters) and Fleiss' kappa (any number), pure functions.

Both compare the observed agreement ``p_o`` with the agreement expected by chance ``p_e``:
``kappa = (p_o - p_e) / (1 - p_e)``. 1 is perfect agreement, 0 chance level, below 0 worse than chance.
When ``p_e == 1`` (everyone used one and the same category) kappa is undefined and these return ``nan``.

Cohen's kappa takes each rater's own category frequencies for ``p_e``. Fleiss' kappa takes the pooled
frequencies, and here allows a different number of raters per unit (at least two): unit ``i`` with
``n_i`` ratings, ``n_ij`` of them in category ``j``, agrees with
``P_i = (sum_j n_ij**2 - n_i) / (n_i (n_i - 1))``; ``p_o`` is the mean of ``P_i`` and
``p_e = sum_j p_j**2`` with ``p_j = sum_i n_ij / sum_i n_i``. With a constant ``n_i`` this is Fleiss (1971).

>>> cohen_kappa([1, 1, 0, -1], [1, 1, 0, -1])
1.0
>>> round(cohen_kappa([1] * 20 + [1] * 5 + [0] * 10 + [0] * 15, [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15), 3)
0.4
>>> round(fleiss_kappa([[2, 0], [0, 2], [1, 1]]), 3)
0.333
>>> unit_counts([[1, 1, 0], [-1, -1]])
[[0, 1, 2], [2, 0, 0]]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

CATEGORIES = (-1, 0, 1)


def percent_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """The share of items on which two raters gave the same category."""
    _check_pair(a, b)
    return sum(x == y for x, y in zip(a, b)) / len(a)


def _check_pair(a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise ValueError(f"the two raters rated {len(a)} and {len(b)} items; they must rate the same items")
    if not a:
        raise ValueError("no items to compare")


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters over the same items (``a[i]`` and ``b[i]`` rate item ``i``)."""
    _check_pair(a, b)
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in ca) / (n * n)
    if math.isclose(p_e, 1.0):
        return math.nan
    return (p_o - p_e) / (1 - p_e)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa from a units x categories table of counts; each unit needs two ratings or more."""
    if not counts:
        raise ValueError("no units to compare")
    width = len(counts[0])
    totals = [0] * width
    p_units, n_all = [], 0
    for i, row in enumerate(counts):
        if len(row) != width or any(c < 0 for c in row):
            raise ValueError(f"unit {i}: counts must be non-negative, {width} per unit")
        n_i = sum(row)
        if n_i < 2:
            raise ValueError(f"unit {i} has {n_i} rating(s); agreement needs two or more per unit")
        p_units.append((sum(c * c for c in row) - n_i) / (n_i * (n_i - 1)))
        totals = [t + c for t, c in zip(totals, row)]
        n_all += n_i
    p_o = sum(p_units) / len(p_units)
    p_e = sum((t / n_all) ** 2 for t in totals)
    if math.isclose(p_e, 1.0):
        return math.nan
    return (p_o - p_e) / (1 - p_e)


def unit_counts(units: Sequence[Sequence[Hashable]], categories: Sequence[Hashable] = CATEGORIES) -> list[list[int]]:
    """The count table of :func:`fleiss_kappa` from the ratings of each unit."""
    index = {c: j for j, c in enumerate(categories)}
    table = []
    for i, ratings in enumerate(units):
        row = [0] * len(categories)
        for r in ratings:
            if r not in index:
                raise ValueError(f"unit {i}: rating {r!r} is not one of {list(categories)}")
            row[index[r]] += 1
        table.append(row)
    return table
