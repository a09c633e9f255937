"""The exact oracle of the plans family: a rating and a reason for every step, and the answer's grade.

It reads text only (the problem's and the steps'), so it labels solutions written by any model. Step
forms it understands::

    Day 2: B, C            the tasks done on day 2 (the days in order, one step each)
    Day 3: rest            a day without tasks
    Left: D, E             restates the tasks not done yet (true, but no progress)
    # Answer\\n\\n4          the day the plan finishes

Ratings follow PRM800K's semantics, judged against the best plan still possible *before* the step (so
a step is rated where a mistake is made, and a later step that carries it forward is not blamed again):

- +1 ``on track``: the day is valid and the earliest finish reachable is what it was before the step.
- 0 ``rest`` (a valid rest day that costs nothing: only once every task is done, since resting while
  a task is left always delays the finish) and ``neutral check``: valid, no progress.
- -1 for a broken constraint, visible in the step itself (``unknown task``, ``repeated task``,
  ``dependency unmet``, ``over capacity``, ``van conflict``, ``deadline missed``, ``wrong day``), or for a
  valid day that makes things worse, visible only later: ``dead end`` (no plan can now finish every
  task on time) and ``wasteful`` (one can, but later than before the step).

The two kinds are what ``Domain.error_kind`` (:mod:`prmkit.lab.domains`) tells apart by :data:`DELAYED`: *immediate*
errors a reader sees on the line, *delayed* ones only a search (or the days that follow) reveals.

>>> from prmkit.lab.plans.domain import PROBLEM_TEXT
>>> plan = parse_problem(PROBLEM_TEXT)
>>> [(l.rating, l.reason) for l in label_texts(plan, ["Day 1: A", "Day 2: B, C", "Day 3: D", "# Answer\\n\\n3"])]
[(1, 'on track'), (1, 'on track'), (1, 'on track'), (1, 'answer')]
>>> [l.reason for l in label_texts(plan, ["Day 1: A", "Day 2: B", "Day 3: C, D", "# Answer\\n\\n3"])]
['on track', 'wasteful', 'dependency unmet', 'answer']
>>> grade_answer(Problem(PROBLEM_TEXT, answer="3"), "3"), grade_answer(Problem(PROBLEM_TEXT, answer="3"), None)
('correct', 'incorrect')
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from prmkit.lab.plans.domain import NEVER, Plan, best_finish, parse_problem
from prmkit.schema import Problem, Solution

REASONS = {
    "on track": (1, "a valid day that keeps the earliest finish reachable before it"),
    "answer": (1, "the plan is complete and the answer is the day it finishes"),
    "rest": (0, "a day without tasks that costs nothing (every task done): no progress"),
    "neutral check": (0, "restates the tasks not done yet: true, no progress"),
    "wasteful": (-1, "a valid day after which every task can still be done on time, but later (delayed)"),
    "dead end": (-1, "a valid day after which no plan can do every task on time (delayed)"),
    "wrong check": (-1, "a Left line that does not list the tasks not done yet"),
    "wrong day": (-1, "the day is not the next one"),
    "unknown task": (-1, "names a task the problem does not have"),
    "repeated task": (-1, "a task already done, or named twice in a day"),
    "dependency unmet": (-1, "a task whose predecessors are not all done on earlier days"),
    "over capacity": (-1, "more tasks than fit in a day"),
    "van conflict": (-1, "two tasks that need the one van on one day"),
    "deadline missed": (-1, "a task done after its deadline, or left undone past it"),
    "early answer": (-1, "an answer before every task is done"),
    "answer mismatch": (-1, "the answer is not the day the plan finishes"),
    "step after answer": (-1, "a line after the final answer"),
    "unparseable step": (-1, "a line of no known form"),
}
"""Every reason the oracle gives: (rating, meaning)."""

DELAYED = ("wasteful", "dead end")
"""Reasons of errors a reader cannot see on the line itself: only the days that follow reveal them."""

_DAY = re.compile(r"Day (\d+): (.+)")
_LEFT = re.compile(r"Left: (.+)")
_ANSWER = re.compile(r"# Answer\s*\n(.*)", re.DOTALL)
_NAMES = re.compile(r"\s*(?:,|\band\b)\s*")


@dataclass(frozen=True)
class StepLabel:
    """The oracle's verdict on one step: ``rating`` (+1/0/-1) and ``reason`` (a key of :data:`REASONS`)."""

    rating: int
    reason: str


@functools.lru_cache(maxsize=4096)
def plan_of(problem_text: str) -> Plan:
    """The parsed problem (cached: many samples share one problem)."""
    return parse_problem(problem_text)


@dataclass
class _Walk:
    """Where a solution stands: tasks done (bit mask), days taken, the last day with tasks, the best
    finish reachable, answered yet."""

    done: int = 0
    day: int = 0
    last: int = 0
    best: int = 0
    answered: bool = False


def label_texts(plan: Plan, texts: list[str]) -> list[StepLabel]:
    """Oracle labels of step ``texts`` for ``plan`` (see the module docstring)."""
    walk = _Walk(best=best_finish(plan))
    return [_label(plan, text.strip(), walk) for text in texts]


def oracle_labels(solution: Solution) -> list[StepLabel]:
    """The oracle's label of every step ``solution`` took."""
    return label_texts(plan_of(solution.problem.problem), solution.texts)


def _label(plan: Plan, text: str, walk: _Walk) -> StepLabel:
    if walk.answered:
        return StepLabel(-1, "step after answer")
    if (m := _ANSWER.fullmatch(text)) is not None:
        walk.answered = True
        return _answer(plan, m.group(1).strip(), walk)
    if (m := _LEFT.fullmatch(text)) is not None:
        left = {t.name for i, t in enumerate(plan.tasks) if not walk.done >> i & 1}
        listed = [n for n in _NAMES.split(m.group(1).strip()) if n]
        right = len(listed) == len(set(listed)) and set(listed) == left
        return StepLabel(0, "neutral check") if right else StepLabel(-1, "wrong check")
    if (m := _DAY.fullmatch(text)) is not None:
        return _day(plan, int(m.group(1)), m.group(2).strip(), walk)
    return StepLabel(-1, "unparseable step")


def _day(plan: Plan, number: int, what: str, walk: _Walk) -> StepLabel:
    names = [] if what == "rest" else [n for n in _NAMES.split(what) if n]
    broken = _broken(plan, number, names, walk)
    walk.done |= sum(1 << i for i in map(plan.index, names) if i is not None)
    walk.day += 1
    walk.last = walk.day if names else walk.last
    before = walk.best
    walk.best = walk.last if walk.done == plan.full else best_finish(plan, walk.done, walk.day)
    if broken is not None:  # carried forward as written: later days are rated from where it leaves
        return StepLabel(-1, broken)
    if walk.best >= NEVER > before:
        return StepLabel(-1, "dead end")
    if walk.best > before:
        return StepLabel(-1, "wasteful")
    return StepLabel(1, "on track") if names else StepLabel(0, "rest")


def _broken(plan: Plan, number: int, names: list[str], walk: _Walk) -> str | None:
    """The first constraint the day breaks, in the order a reader checks them; None when it is valid.
    A deadline is missed by a task done after it, or by the day it passes with the task undone (a
    deadline that passed on an earlier day was rated there)."""
    if number != walk.day + 1:
        return "wrong day"
    index = [plan.index(n) for n in names]
    if None in index:
        return "unknown task"
    if len(set(index)) < len(index) or any(walk.done >> i & 1 for i in index):
        return "repeated task"
    if any(plan.needs[i] & walk.done != plan.needs[i] for i in index):
        return "dependency unmet"
    if len(index) > plan.capacity:
        return "over capacity"
    if sum(plan.tasks[i].van for i in index) > 1:
        return "van conflict"
    late = any(plan.tasks[i].due is not None and plan.tasks[i].due < number for i in index)
    passes = any(t.due == number and i not in index and not walk.done >> i & 1 for i, t in enumerate(plan.tasks))
    return "deadline missed" if late or passes else None


def _answer(plan: Plan, answer: str, walk: _Walk) -> StepLabel:
    if walk.done != plan.full:
        return StepLabel(-1, "early answer")
    return StepLabel(1, "answer") if answer == str(walk.last) else StepLabel(-1, "answer mismatch")


def grade_answer(problem: Problem, answer: str | None) -> str:
    """``"correct"`` when ``answer`` is the earliest finish day, else ``"incorrect"`` (also for no answer
    or one that is not a number: the oracle is exact and always decides)."""
    if answer is None or not answer.strip().isdigit():
        return "incorrect"
    return "correct" if int(answer.strip()) == best_finish(plan_of(problem.problem)) else "incorrect"
