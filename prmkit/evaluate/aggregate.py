"""Step scores to a solution score: product, min, last, mean, as pure functions on arrays.

A PRM scores every step; best-of-N needs one number per solution. Which aggregation suits a PRM depends
on how it was trained (``docs/method.md``: product or min for human- or judge-labelled PRMs, last for
Monte-Carlo-trained ones), so it is always a setting, and every output names the one it used.

Two forms: :func:`aggregate` on one solution's step scores, and :func:`aggregate_ragged` on many
solutions stored flat (all step scores end to end, plus ``offsets``) without a Python loop.

>>> aggregate([0.9, 0.5, 0.8], "product")
0.36000000000000004
>>> aggregate([0.9, 0.5, 0.8], "min"), aggregate([0.9, 0.5, 0.8], "last")
(0.5, 0.8)
>>> aggregate_ragged([0.9, 0.5, 0.8, 0.7], [0, 3, 4], "min").tolist()
[0.5, 0.7]
"""

from __future__ import annotations

import numpy as np

AGGREGATIONS = ("product", "min", "last", "mean")
"""Names accepted by :func:`aggregate`, as they appear in score-column specs (``p_correct:min``)."""


def _check(how: str) -> None:
    if how not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {how!r} (expected one of {', '.join(AGGREGATIONS)})")


def aggregate(step_scores, how: str) -> float:
    """One solution score from its step scores; NaN for a solution without scored steps.

    >>> aggregate([], "mean")
    nan
    >>> aggregate([0.2, 0.4], "mean")
    0.30000000000000004
    """
    _check(how)
    scores = np.asarray(step_scores, dtype=float)
    if scores.size == 0:
        return float("nan")
    if how == "product":
        return float(np.prod(scores))
    if how == "min":
        return float(np.min(scores))
    if how == "last":
        return float(scores[-1])
    return float(np.mean(scores))


def aggregate_ragged(values, offsets, how: str) -> np.ndarray:
    """Aggregate solution ``i``'s step scores ``values[offsets[i]:offsets[i+1]]`` for every ``i`` at once.

    Solutions with no steps get NaN.

    >>> aggregate_ragged([0.5, 0.5, 0.9], [0, 2, 2, 3], "product").tolist()
    [0.25, nan, 0.9]
    """
    _check(how)
    offsets = np.asarray(offsets, dtype=np.int64)
    values = np.asarray(values, dtype=float)[: offsets[-1]]
    lengths = np.diff(offsets)
    out = np.full(lengths.size, np.nan)
    nonempty = lengths > 0
    if not nonempty.any():
        return out
    starts = offsets[:-1][nonempty]
    if how == "product":
        out[nonempty] = np.multiply.reduceat(values, starts)
    elif how == "min":
        out[nonempty] = np.minimum.reduceat(values, starts)
    elif how == "last":
        out[nonempty] = values[offsets[1:][nonempty] - 1]
    else:
        out[nonempty] = np.add.reduceat(values, starts) / lengths[nonempty]
    return out


def parse_score_spec(spec: str) -> tuple[str, str | None]:
    """Split a score-column spec: ``"orm"`` is a solution-level score, ``"p_correct:min"`` aggregates a step score.

    >>> parse_score_spec("orm"), parse_score_spec("p_correct:min")
    (('orm', None), ('p_correct', 'min'))
    """
    name, sep, how = spec.partition(":")
    if not name:
        raise ValueError(f"empty score column name in {spec!r}")
    if not sep:
        return name, None
    _check(how)
    return name, how
