"""The exact oracle: a rating and a reason for every step of a ledger solution, and the answer's grade.

It reads text only, the problem's and the steps' (never a generator's internal trace), so it labels
solutions written by any model. Step forms it understands::

    C - 6 : 14 - 6 = 8        restate transaction C, then compute from the previous result
    F set 10 : 10             a "set to" transaction
    check : 8                 restate the current value (true, but no progress)
    # Answer\\n\\n8             the final answer

A rating is *local*, as a labeller reading line by line would give it: +1 when the step takes the
next transaction, restates it right (``less 6`` is ``- 6``, ``twice`` is ``* 2``, ``again`` repeats the
previous effect), starts from the previous line's result and computes right; a step that faithfully
carries an earlier mistake forward is still +1 (the mistake was rated where it was made). A true
``check`` is 0. Anything else is -1, with the first failed check as the reason (:data:`REASONS`).

>>> from prmkit.schema import Problem, Solution
>>> p = Problem("Start at 12.\\nA + 2\\nB less 6\\nC again\\nWhat is the final value?", answer="2")
>>> s = Solution.from_steps(p, ["A + 2 : 12 + 2 = 14", "check : 14", "B + 6 : 14 + 6 = 20",
...                             "C - 6 : 20 - 6 = 14", "# Answer\\n\\n14"])
>>> [(l.rating, l.reason) for l in oracle_labels(s)]  # C "again" repeats B: "- 6", and 20 - 6 is right
[(1, 'correct'), (0, 'neutral check'), (-1, 'wrong restatement'), (1, 'correct'), (1, 'answer')]
>>> grade_answer(p, "14"), grade_answer(p, "2"), grade_answer(p, None)
('incorrect', 'correct', 'incorrect')
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from prmkit.lab.domain import TRIGGERS, Ledger, apply, parse_problem
from prmkit.schema import Problem, Solution

REASONS = {
    "correct": (1, "restates the next transaction right, from the previous result, computed right"),
    "answer": (1, "the final answer equals the last result, after the last transaction"),
    "neutral check": (0, "restates the current value: true, no progress"),
    "wrong check": (-1, "a check line whose value is not the current value"),
    "skipped transaction": (-1, "takes a later transaction, leaving out the next one"),
    "repeated transaction": (-1, "takes a transaction already taken"),
    "unknown transaction": (-1, "names a transaction the problem does not have"),
    "wrong restatement": (-1, "the restated operation is not what the problem says (a misreading)"),
    "inconsistent step": (-1, "the computation does not do what the step's own restatement says"),
    "wrong operand": (-1, "the left operand is not the previous line's result"),
    "wrong arithmetic": (-1, "the result of the computation is wrong"),
    "early answer": (-1, "an answer given before every transaction was taken"),
    "answer mismatch": (-1, "the answer differs from the last result"),
    "step after answer": (-1, "a line after the final answer"),
    "unparseable step": (-1, "a line of no known form"),
}
"""Every reason the oracle gives: (rating, meaning)."""


@dataclass(frozen=True)
class StepLabel:
    """The oracle's verdict on one step: ``rating`` (+1/0/-1), ``reason`` (a key of :data:`REASONS`),
    ``txn`` (index of the transaction the step takes, None for check, answer and unreadable lines)."""

    rating: int
    reason: str
    txn: int | None = None


_ARITH = re.compile(r"([A-Z]) ([-+*/]) (\d+) : (-?\d+) ([-+*/]) (\d+) = (-?\d+(?:\.\d+)?)")
_SET = re.compile(r"([A-Z]) set (-?\d+) : (-?\d+)")
_CHECK = re.compile(r"check : (-?\d+)")
_ANSWER = re.compile(r"# Answer\s*\n(.*)", re.DOTALL)


@functools.lru_cache(maxsize=4096)
def ledger_of(problem_text: str) -> Ledger:
    """The parsed problem (cached: many samples share one problem)."""
    return parse_problem(problem_text)


@dataclass
class _Walk:
    """Where a solution stands: next transaction expected, the last written result, answered yet."""

    expected: int
    prev: int | float
    answered: bool = False


def parse_transaction(text: str) -> tuple[str, tuple, int | float] | None:
    """(transaction name, the effect it restates, its result) of a transaction line, as the oracle reads it;
    None for any other line (a check, the answer, an unreadable one).

    >>> parse_transaction("C - 6 : 14 - 6 = 8"), parse_transaction("D set 4 : 4"), parse_transaction("check : 3")
    (('C', ('-', 6), 8), ('D', ('set', 4), 4), None)
    """
    text = text.strip()
    if (m := _SET.fullmatch(text)) is not None:
        return m.group(1), ("set", int(m.group(2))), int(m.group(3))
    if (m := _ARITH.fullmatch(text)) is not None:
        result = m.group(7)
        return m.group(1), (m.group(2), int(m.group(3))), float(result) if "." in result else int(result)
    return None


def label_texts(ledger: Ledger, texts: list[str]) -> list[StepLabel]:
    """Oracle labels of step ``texts`` for the problem ``ledger`` (see the module docstring)."""
    walk = _Walk(0, ledger.start)
    return [_label(ledger, text.strip(), walk) for text in texts]


def _label(ledger: Ledger, text: str, walk: _Walk) -> StepLabel:
    if walk.answered:
        return StepLabel(-1, "step after answer")
    if (m := _ANSWER.fullmatch(text)) is not None:
        walk.answered = True
        return _answer(ledger, m.group(1).strip(), walk)
    if (m := _CHECK.fullmatch(text)) is not None:
        return StepLabel(0, "neutral check") if int(m.group(1)) == walk.prev else StepLabel(-1, "wrong check")
    if (m := _SET.fullmatch(text)) is not None:
        name, k, result = m.group(1), int(m.group(2)), int(m.group(3))
        return _transaction(ledger, walk, name, ("set", k), ("set", k, walk.prev), result)
    if (m := _ARITH.fullmatch(text)) is not None:
        name, sym, k, left, sym2, k2, result = m.groups()
        number = float(result) if "." in result else int(result)
        return _transaction(ledger, walk, name, (sym, int(k)), (sym2, int(k2), int(left)), number)
    return StepLabel(-1, "unparseable step")


def _answer(ledger: Ledger, answer: str, walk: _Walk) -> StepLabel:
    if walk.expected < len(ledger.txns):
        return StepLabel(-1, "early answer")
    try:
        value = int(answer)
    except ValueError:
        return StepLabel(-1, "unparseable step")
    return StepLabel(1, "answer") if value == walk.prev else StepLabel(-1, "answer mismatch")


def _transaction(ledger: Ledger, walk: _Walk, name: str, restated: tuple, computed: tuple,
                 result: float) -> StepLabel:
    """Check one transaction step: order, restatement, consistency, operand, arithmetic (first failure wins)."""
    i = ledger.index(name)
    if i is None:
        return StepLabel(-1, "unknown transaction")
    expected, prev = walk.expected, walk.prev
    walk.expected, walk.prev = max(walk.expected, i + 1), result
    if i < expected:
        return StepLabel(-1, "repeated transaction", i)
    if i > expected:
        return StepLabel(-1, "skipped transaction", i)
    if restated != ledger.effect(i):
        return StepLabel(-1, "wrong restatement", i)
    symbol, k, left = computed
    if (symbol, k) != restated:
        return StepLabel(-1, "inconsistent step", i)
    if symbol != "set" and left != prev:
        return StepLabel(-1, "wrong operand", i)
    if apply(left, symbol, k) != result:
        return StepLabel(-1, "wrong arithmetic", i)
    return StepLabel(1, "correct", i)


def oracle_labels(solution: Solution) -> list[StepLabel]:
    """The oracle's label of every step ``solution`` took (one per entry of ``solution.texts``)."""
    return label_texts(ledger_of(solution.problem.problem), solution.texts)


def grade_answer(problem: Problem, answer: str | None) -> str:
    """``"correct"`` or ``"incorrect"`` (a wrong answer, no answer, or not an integer: the oracle is exact,
    so it always decides, and ``unparseable``, the grader failing to decide, never happens here)."""
    if answer is None or not answer.strip():
        return "incorrect"
    try:
        value = int(answer.strip())
    except ValueError:
        return "incorrect"
    return "correct" if value == ledger_of(problem.problem).answer else "incorrect"


def extract_answer(texts: list[str]) -> str | None:
    """The answer of a ledger solution: the text after ``# Answer`` in its last step, or None.

    >>> extract_answer(["A + 1 : 2 + 1 = 3", "# Answer\\n\\n3"]), extract_answer(["A + 1 : 2 + 1 = 3"])
    ('3', None)
    """
    m = _ANSWER.fullmatch(texts[-1].strip()) if texts else None
    return m.group(1).strip() or None if m else None


def misreadings(solution: Solution, labels: list[StepLabel]) -> Iterator[tuple[str, bool]]:
    """Every transaction of a trigger kind (:data:`~prmkit.lab.domain.TRIGGERS`) that ``solution`` reached,
    with whether it misread it: restated it wrong, or skipped it (``again``, ``undo``); ``labels`` are the
    oracle's (:func:`oracle_labels`).

    >>> from prmkit.schema import Step
    >>> s = Solution(Problem("Start at 5.\\nA less 2\\nWhat is the final value?"), [Step.of("A + 2 : 5 + 2 = 7")])
    >>> list(misreadings(s, oracle_labels(s)))
    [('less', True)]
    """
    taken = {lab.txn: lab.reason for lab in labels if lab.txn is not None}
    reached = max(taken, default=-1) + 1
    for i, t in enumerate(ledger_of(solution.problem.problem).txns[:reached]):
        if t.kind in TRIGGERS:
            skip = t.kind in ("again", "undo")
            yield t.kind, (i not in taken) if skip else taken.get(i) == "wrong restatement"
