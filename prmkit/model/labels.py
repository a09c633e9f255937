"""Step labels to training targets, and class probabilities back to step scores: pure functions.

A target is a probability distribution over the head's outputs, so hard and soft labels share one
loss (soft cross-entropy) and Monte-Carlo values stay floats. Output order is fixed:

- 3 classes: ``(positive, negative, neutral)``; 2 classes: ``(positive, negative)``;
- the regression head has one output, the probability that the step is correct: target ``[p]``.

Neutral policy (``0`` ratings): ``"positive"`` or ``"negative"`` folds them into that class (the
paper's ablation: neutral-as-positive is its default), ``"class"`` keeps them as a third class.
Supervision: ``"first_error"`` (default, the paper's) supervises steps up to and including the first
wrong one and leaves the rest out; ``"all"`` supervises every labelled step. An unlabelled step is
always left out (``None``).

>>> step_targets([1, 0, -1, 1], n_outputs=2, neutral="positive")
[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], None]
>>> step_targets([1, 0, -1], n_outputs=3, neutral="class", supervise="all")
[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
>>> step_targets([None, None], values=[0.75, 0.0], n_outputs=1, source="value")
[[0.75], [0.0]]
"""

from __future__ import annotations

import math

NEUTRAL_POLICIES = ("positive", "negative", "class")
SUPERVISION = ("first_error", "all")
LABEL_SOURCES = ("rating", "value")
CLASS_NAMES = ("pos", "neg", "neu")
"""Short names of the outputs in order; step scores are written as ``p_pos``, ``p_neg``, ``p_neu``."""


def check_policy(n_outputs: int, neutral: str, source: str = "rating") -> None:
    """Raise ValueError for a head / neutral policy / label source combination that cannot work."""
    if n_outputs not in (1, 2, 3):
        raise ValueError(f"a head has 1 (regression), 2 or 3 outputs, not {n_outputs}")
    if neutral not in NEUTRAL_POLICIES:
        raise ValueError(f"unknown neutral policy {neutral!r} (expected one of {', '.join(NEUTRAL_POLICIES)})")
    if (neutral == "class") != (n_outputs == 3):
        raise ValueError("neutral policy 'class' needs exactly 3 outputs, and 3 outputs need neutral policy 'class' "
                         f"(got {n_outputs} outputs, neutral={neutral!r})")
    if source not in LABEL_SOURCES:
        raise ValueError(f"unknown label source {source!r} (expected one of {', '.join(LABEL_SOURCES)})")
    if source == "value" and n_outputs == 3:
        raise ValueError("soft values (label source 'value') have no neutral class: use 1 or 2 outputs")


def first_error(ratings: list, values: list | None = None, threshold: float | None = None) -> int | None:
    """Index of the first wrong step: rated -1, or with a soft value of exactly 0 (unrated steps), or with
    ``threshold`` set, a value at or below it (every valued step: the hard reading of the values).

    >>> first_error([1, 1, -1, -1]), first_error([None, None], [0.5, 0.0]), first_error([1])
    (2, 1, None)
    >>> first_error([1, 1], [0.5, 0.25], threshold=0.3)
    1
    """
    values = values or [None] * len(ratings)
    for i, (r, v) in enumerate(zip(ratings, values)):
        if threshold is not None and v is not None:
            if v <= threshold:
                return i
        elif r == -1 or (r is None and v is not None and v == 0.0):
            return i
    return None


def hard_target(rating: int, n_outputs: int, neutral: str) -> list[float]:
    """The one-hot (or, for one output, 0/1) target of a rating."""
    if rating == 0:
        if neutral == "class":
            return [0.0, 0.0, 1.0]
        rating = 1 if neutral == "positive" else -1
    p = 1.0 if rating == 1 else 0.0
    return soft_target(p, n_outputs) if n_outputs < 3 else [p, 1.0 - p, 0.0]


def soft_target(p_correct: float, n_outputs: int) -> list[float]:
    """The target of a probability that the step is correct: ``[p]`` or ``[p, 1 - p]``."""
    if not 0.0 <= p_correct <= 1.0 or math.isnan(p_correct):
        raise ValueError(f"soft label {p_correct!r} is outside [0, 1]")
    return [float(p_correct)] if n_outputs == 1 else [float(p_correct), 1.0 - float(p_correct)]


def step_targets(ratings: list, values: list | None = None, *, n_outputs: int = 2, neutral: str = "positive",
                 supervise: str = "first_error", source: str = "rating",
                 threshold: float | None = None) -> list[list[float] | None]:
    """One target (or None: not supervised) per step. ``source="value"`` reads soft values, falling back to
    the rating where a step has none; ``"rating"`` reads ratings only. ``threshold`` (with ``"value"``) makes
    a value hard: correct above it, wrong at or below it (Math-Shepherd's hard label is ``threshold=0``:
    any rollout right).

    >>> step_targets([None, None], [0.25, 0.0], n_outputs=1, source="value", threshold=0.0)
    [[1.0], [0.0]]
    """
    check_policy(n_outputs, neutral, source)
    if supervise not in SUPERVISION:
        raise ValueError(f"unknown supervision {supervise!r} (expected one of {', '.join(SUPERVISION)})")
    values = list(values) if values is not None else [None] * len(ratings)
    if len(values) != len(ratings):
        raise ValueError(f"{len(ratings)} ratings but {len(values)} values")
    if threshold is not None and source != "value":
        raise ValueError("a value threshold reads soft values: it needs label source 'value'")
    cut = threshold if source == "value" else None
    stop = first_error(ratings, values, cut) if supervise == "first_error" else None
    out: list[list[float] | None] = []
    for i, (r, v) in enumerate(zip(ratings, values)):
        if stop is not None and i > stop:
            out.append(None)
        elif source == "value" and v is not None:
            out.append(soft_target(v if cut is None else float(v > cut), n_outputs))
        elif r is not None:
            out.append(hard_target(r, n_outputs, neutral))
        else:
            out.append(None)
    return out


UNGRADABLE_POLICIES = ("skip", "negative")
"""What an ORM makes of a solution the grader could not decide (grade ``unparseable``: a timeout, an
answer it failed to parse). ``skip`` (the default): no target, the solution is left out and counted;
``negative``: a target of 0, as prmkit did before it told such a grade from a missing answer (a
solution with no answer is graded ``incorrect`` and is a negative either way)."""


def outcome_target(solution, source: str = "auto", ungradable: str = "skip") -> float | None:
    """The ORM target of a solution: its ``outcome`` label, else its ``grade`` (correct 1, incorrect 0,
    unparseable by ``ungradable``: see :data:`UNGRADABLE_POLICIES`); with ``source="grade"`` or
    ``"outcome"`` only that field. None when unknown.

    >>> from prmkit.schema import Solution
    >>> outcome_target(Solution.from_steps("q", ["a"], grade="correct")), outcome_target(Solution.from_steps("q", ["a"]))
    (1.0, None)
    >>> [outcome_target(Solution.from_steps("q", ["a"], grade="unparseable"), ungradable=p) for p in UNGRADABLE_POLICIES]
    [None, 0.0]
    """
    if source not in ("auto", "grade", "outcome"):
        raise ValueError(f"unknown outcome source {source!r} (expected auto, grade or outcome)")
    if ungradable not in UNGRADABLE_POLICIES:
        raise ValueError(f"unknown ungradable policy {ungradable!r} (expected {' or '.join(UNGRADABLE_POLICIES)})")
    if source in ("auto", "outcome") and solution.outcome is not None:
        return float(solution.outcome)
    if source in ("auto", "grade") and solution.grade is not None:
        if solution.grade == "unparseable":
            return None if ungradable == "skip" else 0.0
        return 1.0 if solution.grade == "correct" else 0.0
    return None


def p_correct(probs: list[float], neutral: str) -> float:
    """P(step correct) from one step's output probabilities under a neutral policy.

    >>> p_correct([0.6, 0.1, 0.3], "positive"), p_correct([0.6, 0.1, 0.3], "negative")
    (0.8999999999999999, 0.6)
    """
    if len(probs) == 3:
        if neutral not in ("positive", "negative"):
            raise ValueError("scoring a 3-class model needs neutral policy 'positive' or 'negative'")
        return probs[0] + probs[2] if neutral == "positive" else probs[0]
    return probs[0]


def step_scores(probs: list[float], neutral: str, prefix: str = "") -> dict[str, float]:
    """The ``Step.scores`` entries of one step: every class probability and ``p_correct``.

    >>> step_scores([0.25], "positive")
    {'p_pos': 0.25, 'p_neg': 0.75, 'p_correct': 0.25}
    """
    full = [probs[0], 1.0 - probs[0]] if len(probs) == 1 else list(probs)
    out = {f"{prefix}p_{name}": float(p) for name, p in zip(CLASS_NAMES, full)}
    out[f"{prefix}p_correct"] = float(p_correct(full, neutral))
    return out
