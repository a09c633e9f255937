"""The plans problem family: tasks to schedule over days, where each step of a solution is a decision.

A problem reads::

    Plan the tasks: each takes one day, at most 2 tasks a day.
    A: due by day 2
    B: after A
    C: after A, due by day 3
    D: after B and C
    What is the earliest day by which every task can be done?

A task may name tasks it comes after (they must be done on an earlier day) and a deadline (it must be
done on that day or before). The held-out family :data:`OOD` has more tasks and a new constraint type:
some tasks need the van, and there is one van (at most one such task a day). A solution writes one
day per step (``Day 1: A``, ``Day 2: B, C``, ``Day 3: rest``) and ends with ``# Answer`` and the day its
plan finishes; :mod:`prmkit.lab.plans.oracle` rates every step exactly.

Every problem is solvable on time by construction: deadlines are set from one optimal schedule (a
task due on its day there, or a day later), so a tight deadline is a trap for a plan that fills the
early days with the tasks that look urgent rather than those that are.

>>> plan = parse_problem(PROBLEM_TEXT)
>>> [t.name for t in plan.tasks], plan.tasks[2].after, plan.tasks[2].due, plan.capacity
(['A', 'B', 'C', 'D'], ('A',), 3, 2)
>>> parse_problem(plan.text()) == plan
True
>>> p = make_problem(PlansConfig(), seed=0, index=0)
>>> p.id, p.answer == str(best_finish(parse_problem(p.problem)))
('plans-eval-0-0', True)
"""

from __future__ import annotations

import functools
import re
import zlib
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from prmkit.schema import Problem

PROBLEM_TEXT = ("Plan the tasks: each takes one day, at most 2 tasks a day.\nA: due by day 2\nB: after A\n"
                "C: after A, due by day 3\nD: after B and C\n"
                "What is the earliest day by which every task can be done?")
"""The module's worked example."""

QUESTION = "What is the earliest day by which every task can be done?"
NEVER = 10 ** 6
"""The finish day of a state from which no plan finishes every task on time."""


@dataclass(frozen=True)
class Task:
    """One task: its name (``A``, ``B``, ...), the tasks it comes after, its deadline (or None), and
    whether it needs the van."""

    name: str
    after: tuple[str, ...] = ()
    due: int | None = None
    van: bool = False


@dataclass(frozen=True)
class Plan:
    """A problem: its tasks, how many tasks fit in a day, and whether there is a single van."""

    tasks: tuple[Task, ...]
    capacity: int = 2

    def index(self, name: str) -> int | None:
        """Position of task ``name``, None when the problem has no such task."""
        return next((i for i, t in enumerate(self.tasks) if t.name == name), None)

    @property
    def full(self) -> int:
        """The bit mask of every task done."""
        return (1 << len(self.tasks)) - 1

    @functools.cached_property
    def needs(self) -> tuple[int, ...]:
        """Per task, the bit mask of the tasks it comes after."""
        return tuple(sum(1 << self.index(n) for n in t.after) for t in self.tasks)

    def text(self) -> str:
        """The problem as the model reads it (:func:`parse_problem` reads it back)."""
        lines = [f"Plan the tasks: each takes one day, at most {self.capacity} tasks a day."]
        for t in self.tasks:
            parts = [f"after {' and '.join(t.after)}"] if t.after else []
            parts += ["needs the van"] if t.van else []
            parts += [f"due by day {t.due}"] if t.due is not None else []
            lines.append(f"{t.name}: {', '.join(parts) if parts else 'any day'}")
        if any(t.van for t in self.tasks):
            lines.append("There is one van: at most one task that needs it a day.")
        return "\n".join(lines + [QUESTION])


_HEADER = re.compile(r"Plan the tasks: each takes one day, at most (\d+) tasks? a day\.")
_TASK = re.compile(r"([A-Z]): (.+)")


def parse_problem(text: str) -> Plan:
    """The :class:`Plan` a problem text states; ``ValueError`` naming the line it cannot read."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    m = _HEADER.fullmatch(lines[0]) if lines else None
    if m is None:
        raise ValueError(f"not a plans problem: first line {lines[0] if lines else ''!r}")
    tasks = []
    for line in lines[1:]:
        if line == QUESTION or line.startswith("There is one van"):
            continue
        t = _TASK.fullmatch(line)
        if t is None:
            raise ValueError(f"unreadable task line {line!r}")
        tasks.append(_task(t.group(1), t.group(2), line))
    return Plan(tuple(tasks), int(m.group(1)))


def _task(name: str, spec: str, line: str) -> Task:
    after, due, van = (), None, False
    for part in ([] if spec == "any day" else spec.split(", ")):
        if part.startswith("after "):
            after = tuple(part[6:].split(" and "))
        elif part.startswith("due by day "):
            due = int(part[11:])
        elif part == "needs the van":
            van = True
        else:
            raise ValueError(f"unreadable part {part!r} of task line {line!r}")
    return Task(name, after, due, van)


# --- the exact search ---------------------------------------------------------------------------

def day_options(plan: Plan, done: int, day: int) -> list[int]:
    """Every set of tasks (a bit mask, nonempty) that can be done on day ``day + 1`` after ``done``,
    with the day's constraints: each undone, after what it needs, at most ``capacity``, one van task,
    none past its deadline, and no undone task left whose deadline is that day."""
    ready = [i for i, t in enumerate(plan.tasks)
             if not done >> i & 1 and plan.needs[i] & done == plan.needs[i] and (t.due is None or t.due > day)]
    urgent = sum(1 << i for i, t in enumerate(plan.tasks) if not done >> i & 1 and t.due is not None and t.due <= day + 1)
    out = []
    for size in range(1, min(plan.capacity, len(ready)) + 1):
        for chosen in combinations(ready, size):
            mask = sum(1 << i for i in chosen)
            if urgent & ~mask == 0 and sum(plan.tasks[i].van for i in chosen) <= 1:
                out.append(mask)
    return out


def best_finish(plan: Plan, done: int = 0, day: int = 0) -> int:
    """The earliest day by which every task can be done on time, from ``done`` after ``day`` days;
    :data:`NEVER` when no plan can. Resting never helps (any plan shifted a day earlier stays valid), so
    the search takes a nonempty set each day.

    >>> plan = parse_problem(PROBLEM_TEXT)
    >>> best_finish(plan), best_finish(plan, done=0b0001, day=1), best_finish(plan, done=0b0011, day=2)
    (3, 3, 4)
    >>> best_finish(plan, done=0, day=2) == NEVER  # A was due by day 2
    True
    """
    return _search(plan, done, day)


@functools.lru_cache(maxsize=200_000)
def _search(plan: Plan, done: int, day: int) -> int:
    if done == plan.full:
        return day
    if any(not done >> i & 1 and t.due is not None and t.due <= day for i, t in enumerate(plan.tasks)):
        return NEVER
    return min((_search(plan, done | s, day + 1) for s in day_options(plan, done, day)), default=NEVER)


def one_best_schedule(plan: Plan) -> list[int]:
    """One schedule that finishes at :func:`best_finish` (per day, the mask of the tasks done that day),
    the first in the search's order."""
    done, day, out = 0, 0, []
    target = best_finish(plan)
    while done != plan.full:
        s = next(s for s in day_options(plan, done, day) if _search(plan, done | s, day + 1) == target)
        out.append(s)
        done, day = done | s, day + 1
    return out


# --- the family ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlansConfig:
    """A problem family and its difficulty. Inert: checked on creation, no I/O."""

    family: str = "plans"
    """Name of the family: problem ids start with it, and it is part of every problem's seed."""
    tasks: tuple[int, int] = (6, 8)
    """Fewest and most tasks per problem (uniform)."""
    capacity: int = 2
    """Tasks a day."""
    after_rate: float = 0.35
    """Chance that a task comes after each earlier task (at most two each)."""
    due_share: float = 0.6
    """Share of the tasks that get a deadline."""
    tight_share: float = 0.8
    """Of those, the share due on their day in the optimal schedule the deadlines come from (the rest a
    day later): tight deadlines make dead ends."""
    van_share: float = 0.0
    """Share of the tasks that need the van (0: no van in the problem)."""
    chain: int = 0
    """Tasks that form one chain, each after the one before (beside at most one other predecessor): a critical
    path that a day which does not advance it can delay; 0 for none, as in the first families."""
    chain_margin: tuple[int, int] | None = None
    """When set, in place of ``chain``: each problem's chain is as long as its capacity bound (its task count over
    the day's capacity, rounded up) plus a number of tasks drawn uniformly from this range. With no other
    dependencies (``after_rate`` 0) the chain then sets the earliest finish, and whether it lies beyond the capacity
    bound is not in the task count. (A fixed chain of 5 among 8-10 tasks, two a day, made the earliest finish 5 on
    every problem.) None: ``chain`` as set (the same problems as before the knob)."""

    def __post_init__(self):
        lo, hi = self.tasks
        if not 2 <= lo <= hi <= 12:
            raise ValueError(f"tasks must satisfy 2 <= min <= max <= 12, got {self.tasks}")
        if self.chain != 0 and not 2 <= self.chain <= lo:
            raise ValueError(f"chain must be 0 (none) or in 2..{lo} (the fewest tasks), got {self.chain}")
        if not 1 <= self.capacity <= 4:
            raise ValueError(f"capacity must be in 1..4, got {self.capacity}")
        if self.chain_margin is not None:
            room = lo - -(-lo // self.capacity)  # the longest margin that keeps the chain within the fewest tasks
            if self.chain:
                raise ValueError("set chain or chain_margin, not both")
            if len(self.chain_margin) != 2 or not 0 <= self.chain_margin[0] <= self.chain_margin[1] <= room:
                raise ValueError(f"chain_margin must be none or a range within 0..{room}, got {self.chain_margin}")
        for name in ("after_rate", "due_share", "tight_share", "van_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


OOD = PlansConfig(family="plans-ood", tasks=(8, 10), van_share=0.35)
"""The held-out family: more tasks, and a constraint type the main family never has (one van)."""


def make_plan(cfg: PlansConfig, rng: np.random.Generator) -> Plan:
    """One random plan of family ``cfg``, solvable on time."""
    n = int(rng.integers(cfg.tasks[0], cfg.tasks[1] + 1))
    names = [chr(ord("A") + i) for i in range(n)]
    chain = cfg.chain if cfg.chain_margin is None else -(-n // cfg.capacity) + int(rng.integers(
        cfg.chain_margin[0], cfg.chain_margin[1] + 1))
    tasks = []
    for i, name in enumerate(names):
        earlier = [j for j in range(i) if rng.random() < cfg.after_rate]
        picked = sorted(rng.permutation(earlier)[:2]) if earlier else []
        if 0 < i < chain:  # the chain's link, and the lowest other drawn predecessor (the draws are the same)
            picked = sorted({i - 1, *[j for j in picked if j != i - 1][:1]})
        after = tuple(names[j] for j in picked)
        tasks.append(Task(name, after, None, bool(rng.random() < cfg.van_share)))
    plan = _relabelled(Plan(tuple(tasks), cfg.capacity), rng)
    tasks = list(plan.tasks)
    day_of = {i: d + 1 for d, s in enumerate(one_best_schedule(plan)) for i in range(n) if s >> i & 1}
    dated = []
    for i, t in enumerate(tasks):
        due = None
        if rng.random() < cfg.due_share:
            due = day_of[i] + (0 if rng.random() < cfg.tight_share else 1)
        dated.append(Task(t.name, t.after, due, t.van))
    return Plan(tuple(dated), cfg.capacity)


def _relabelled(plan: Plan, rng: np.random.Generator) -> Plan:
    """``plan`` with its letters shuffled and its tasks listed in letter order, so that the list's order is
    not an order the dependencies allow (a reader must read the ``after`` parts)."""
    names = [t.name for t in plan.tasks]
    new = dict(zip(names, (names[i] for i in rng.permutation(len(names)))))
    tasks = [Task(new[t.name], tuple(sorted(new[a] for a in t.after)), t.due, t.van) for t in plan.tasks]
    return Plan(tuple(sorted(tasks, key=lambda t: t.name)), plan.capacity)


def make_problem(cfg: PlansConfig, seed: int, index: int, split: str = "eval") -> Problem:
    """Problem ``index`` of ``split`` in family ``cfg`` for ``seed``: the same arguments, the same problem."""
    rng = np.random.default_rng([seed, _code(cfg.family), _code(split), index])
    plan = make_plan(cfg, rng)
    return Problem(plan.text(), answer=str(best_finish(plan)), id=f"{cfg.family}-{split}-{seed}-{index}",
                   subject=cfg.family, level=len(plan.tasks), source="prmkit.lab")


def make_problems(cfg: PlansConfig, n: int, seed: int, split: str = "eval") -> list[Problem]:
    """The first ``n`` problems of ``split``; a prefix of a longer list with the same arguments.

    >>> [p.id for p in make_problems(OOD, 2, seed=3, split="ood")]
    ['plans-ood-ood-3-0', 'plans-ood-ood-3-1']
    """
    return [make_problem(cfg, seed, i, split) for i in range(n)]


def _code(text: str) -> int:
    return zlib.crc32(text.encode())
