"""The plans generator: many sampled plans per problem, failing the way a planner of judgement fails.

A sample writes one day per step (``Day 2: B, C``) until it believes every task is done, then
``# Answer`` and the day its plan finishes. Each day it either looks ahead (with chance ``skill``: an
option that keeps the earliest finish it believes reachable) or follows a rule of thumb that looks
good now. What goes wrong, each with its rate in :class:`PlansGeneratorConfig`:

- **Greedy rules of thumb that dead-end later**: per problem (decided once from its text, so many
  samples share it) a held heuristic: ``deadline-first`` (the tasks due soonest, blind to what a later
  deadline needs first), ``name-order`` (down the list), or ``most-ready`` (the tasks most others wait
  for: a good rule). A day chosen so is valid, and the error shows days later (``dead end``,
  ``wasteful``).
- **A constraint stated in passing and overlooked**: per problem, with ``oversight_rate``, one deadline or
  the second of two predecessors (``after B and C``) is believed absent by each sample with a chance
  drawn from ``oversight_strength``, so majority voting is often wrong on that problem.
- **Plausible but wasteful moves**: one task fewer than fits (``underfill_rate``).
- **Slips**: a task whose predecessors are not done (``slip_rate``), visible on the line.
- **Neutral steps**: ``Left: ...`` lines (``check_rate``), true and no progress; with ``check_error_rate``, one
  leaves out a task still to do (a wrong step the plan then ignores: the task is done all the same).
- **Answers**: the plan's own finish day, misreported by one day with ``answer_slip_rate``; a sample cut
  off before its answer with ``no_answer_rate``.

>>> from prmkit.lab.plans.domain import PlansConfig, make_problems
>>> sols = generate(make_problems(PlansConfig(), 2, seed=0), PlansGeneratorConfig(), samples=3, seed=0)
>>> len(sols), sols[0].texts[0].startswith("Day 1: "), sols[0].grade in ("correct", "incorrect")
(6, True, True)
>>> generate(make_problems(PlansConfig(), 2, seed=0), PlansGeneratorConfig(), 3, seed=0) == sols
True
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np

from prmkit.lab.domain import config_hash
from prmkit.lab.plans.domain import OOD, Plan, PlansConfig, Task, best_finish, day_options, make_problems
from prmkit.lab.plans.oracle import grade_answer, plan_of
from prmkit.schema import Generator, Problem, Solution, Step

HEURISTICS = ("deadline-first", "name-order", "most-ready")
"""The rules of thumb a problem's samples may hold (see the module docstring)."""


@dataclass(frozen=True)
class PlansGeneratorConfig:
    """How the simulated planner samples and fails. Inert: checked on creation, no I/O."""

    name: str = "lab-plans-v1"
    """The generator's name in every record's ``generator.name``."""
    skill: float = 0.25
    """Per day: chance of choosing by looking ahead rather than by the problem's held rule of thumb."""
    heuristic_weights: tuple[float, float, float] = (0.55, 0.35, 0.1)
    """Chance that a problem's samples hold each of :data:`HEURISTICS` (decided once per problem)."""
    oversight_rate: float = 0.5
    """Chance that a problem has a constraint its samples tend to overlook (decided once per problem)."""
    oversight_strength: tuple[float, float] = (0.5, 0.85)
    """Per-sample chance of overlooking it, drawn from this range once per problem."""
    underfill_rate: float = 0.08
    """Per day: one task fewer than the day holds (when it holds two or more)."""
    slip_rate: float = 0.02
    """Per day: one task added whose predecessors are not done."""
    check_rate: float = 0.06
    """Per day: a neutral ``Left: ...`` line before it."""
    check_error_rate: float = 0.0
    """Per ``Left:`` line with two or more tasks to list: one of them left out (rated ``wrong check``). The plan goes
    on from where it truly stands and does that task all the same, so the error never reaches the answer: a right
    answer through a wrong step that no slip of the plan makes. 0 draws nothing (the same samples as before the
    knob)."""
    answer_slip_rate: float = 0.03
    """Per sample: the answer misreports the plan's finish by one day."""
    no_answer_rate: float = 0.05
    """Per sample: cut off after a uniformly chosen number of days, without ``# Answer``."""

    def __post_init__(self):
        for name in ("skill", "oversight_rate", "underfill_rate", "slip_rate", "check_rate", "check_error_rate",
                     "answer_slip_rate", "no_answer_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        lo, hi = self.oversight_strength
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"oversight_strength must satisfy 0 <= lo <= hi <= 1, got {self.oversight_strength}")
        if len(self.heuristic_weights) != len(HEURISTICS) or min(self.heuristic_weights) < 0 or not any(
                self.heuristic_weights):
            raise ValueError(f"heuristic_weights needs {len(HEURISTICS)} non-negative weights, not all 0")


@dataclass(frozen=True)
class Tendency:
    """What a problem's samples share: the rule of thumb, the overlooked constraint (a task's deadline,
    or one of its predecessors; None for none) and how often a sample overlooks it."""

    heuristic: str
    overlooked: tuple[str, str | None] | None
    strength: float


def tendency(problem_text: str, cfg: PlansGeneratorConfig) -> Tendency:
    """The problem's shared tendency, from its text alone: the same for every sample and every seed.

    >>> from prmkit.lab.plans.domain import PROBLEM_TEXT
    >>> tendency(PROBLEM_TEXT, PlansGeneratorConfig()) == tendency(PROBLEM_TEXT, PlansGeneratorConfig())
    True
    """
    digest = hashlib.sha256(f"{cfg.name}:{problem_text}".encode()).digest()
    rng = np.random.default_rng(list(digest[:8]))
    weights = np.array(cfg.heuristic_weights, dtype=float)
    heuristic = HEURISTICS[int(rng.choice(len(HEURISTICS), p=weights / weights.sum()))]
    plan = plan_of(problem_text)
    passing = [(t.name, None) for t in plan.tasks if t.due is not None]
    passing += [(t.name, t.after[-1]) for t in plan.tasks if len(t.after) >= 2]
    overlooked = None
    if passing and rng.random() < cfg.oversight_rate:
        overlooked = passing[int(rng.integers(len(passing)))]
    return Tendency(heuristic, overlooked, float(rng.uniform(*cfg.oversight_strength)))


def believed(plan: Plan, overlooked: tuple[str, str | None] | None) -> Plan:
    """``plan`` as a sample that overlooks a constraint reads it."""
    if overlooked is None:
        return plan
    name, predecessor = overlooked

    def edit(t: Task) -> Task:
        if t.name != name:
            return t
        if predecessor is None:
            return dataclasses.replace(t, due=None)
        return dataclasses.replace(t, after=tuple(a for a in t.after if a != predecessor))

    return Plan(tuple(edit(t) for t in plan.tasks), plan.capacity)


def _rank(plan: Plan, ready: list[int], heuristic: str) -> list[int]:
    """``ready`` tasks in the order the rule of thumb takes them."""
    if heuristic == "deadline-first":
        return sorted(ready, key=lambda i: (plan.tasks[i].due or 10 ** 6, i))
    if heuristic == "most-ready":
        waiting = [sum(plan.needs[j] >> i & 1 for j in range(len(plan.tasks))) for i in range(len(plan.tasks))]
        return sorted(ready, key=lambda i: (-waiting[i], i))
    return sorted(ready)


def _by_rule(plan: Plan, done: int, heuristic: str) -> int:
    """The day a rule of thumb picks: the first tasks of its ranking that are ready, up to the day's
    capacity, one van task at most. Deadlines are the ranking's business, not a filter."""
    ready = [i for i in range(len(plan.tasks)) if not done >> i & 1 and plan.needs[i] & done == plan.needs[i]]
    chosen, van = [], False
    for i in _rank(plan, ready, heuristic):
        if len(chosen) < plan.capacity and not (van and plan.tasks[i].van):
            chosen.append(i)
            van = van or plan.tasks[i].van
    return sum(1 << i for i in chosen)


def rule_finish(plan: Plan, heuristic: str) -> int:
    """The day a plan made by ``heuristic`` alone finishes (every day by the rule of thumb: no look-ahead, no
    slip, nothing overlooked): where a problem's shared rule leads its samples' answers, before any noise (a
    broken deadline does not count here, only the day the plan ends). Never earlier
    than :func:`~prmkit.lab.plans.domain.best_finish` (a rule may break a deadline, but the deadlines come from
    one optimal schedule, so they cost the best plan no day).

    >>> from prmkit.lab.plans.domain import PROBLEM_TEXT
    >>> [rule_finish(plan_of(PROBLEM_TEXT), h) for h in HEURISTICS]
    [3, 3, 3]
    """
    done, day = 0, 0
    while done != plan.full and day < 2 * len(plan.tasks):
        done |= _by_rule(plan, done, heuristic)
        day += 1
    return day


def _by_lookahead(plan: Plan, done: int, day: int, fallback: int) -> int:
    """The option that keeps the earliest finish the sample believes reachable (the fullest first)."""
    options = day_options(plan, done, day)
    if not options:
        return fallback
    return min(options, key=lambda s: (best_finish(plan, done | s, day + 1), -s.bit_count(), s))


def _check_line(plan: Plan, done: int, cfg: PlansGeneratorConfig, rng: np.random.Generator) -> str:
    """A ``Left:`` line: the tasks not done yet, one left out with ``check_error_rate`` (no draw when it is 0)."""
    left = [t.name for i, t in enumerate(plan.tasks) if not done >> i & 1]
    if len(left) >= 2 and cfg.check_error_rate and rng.random() < cfg.check_error_rate:
        left.pop(int(rng.integers(len(left))))
    return "Left: " + ", ".join(left)


def sample_texts(plan: Plan, tend: Tendency, cfg: PlansGeneratorConfig, rng: np.random.Generator) -> list[str]:
    """One sample's steps for ``plan`` (the generator's whole behaviour, one sample)."""
    belief = believed(plan, tend.overlooked if rng.random() < tend.strength else None)
    stop = int(rng.integers(1, len(plan.tasks) + 1)) if rng.random() < cfg.no_answer_rate else None
    done, day, last, texts = 0, 0, 0, []
    while done != plan.full and day < 2 * len(plan.tasks):
        if stop is not None and day == stop:
            return texts
        if rng.random() < cfg.check_rate:
            texts.append(_check_line(plan, done, cfg, rng))
        rule = _by_rule(belief, done, tend.heuristic)
        chosen = _by_lookahead(belief, done, day, rule) if rng.random() < cfg.skill else rule
        chosen = _wasteful_or_slip(plan, done, chosen, cfg, rng)
        day += 1
        names = [t.name for i, t in enumerate(plan.tasks) if chosen >> i & 1]
        texts.append(f"Day {day}: {', '.join(names) if names else 'rest'}")
        done |= chosen
        last = day if names else last
    answer = last + (int(rng.choice([-1, 1])) if rng.random() < cfg.answer_slip_rate else 0)
    return texts + [f"# Answer\n\n{answer}"]


def _wasteful_or_slip(plan: Plan, done: int, chosen: int, cfg: PlansGeneratorConfig, rng: np.random.Generator) -> int:
    tasks = [i for i in range(len(plan.tasks)) if chosen >> i & 1]
    if len(tasks) > 1 and rng.random() < cfg.underfill_rate:
        chosen &= ~(1 << tasks[-1])
    blocked = [i for i in range(len(plan.tasks)) if not (done | chosen) >> i & 1 and plan.needs[i] & ~done]
    if blocked and rng.random() < cfg.slip_rate:
        chosen |= 1 << blocked[int(rng.integers(len(blocked)))]
    return chosen


def generate(problems: list[Problem], cfg: PlansGeneratorConfig, samples: int, seed: int) -> list[Solution]:
    """``samples`` graded plans per problem, in problem order; deterministic in (problems, cfg, seed)."""
    generator = Generator(cfg.name, {"seed": seed, "config": config_hash(cfg)})
    out = []
    for problem in problems:
        plan, tend = plan_of(problem.problem), tendency(problem.problem, cfg)
        digest = hashlib.sha256(f"{seed}:{problem.problem}".encode()).digest()
        rng = np.random.default_rng(list(digest[:8]))
        for j in range(samples):
            texts = sample_texts(plan, tend, cfg, rng)
            answer = texts[-1].split("\n")[-1].strip() if texts and texts[-1].startswith("# Answer") else None
            out.append(Solution(problem, [Step.of(t) for t in texts], id=f"{problem.id}/{seed}-{j}", answer=answer,
                                grade=grade_answer(problem, answer), generator=generator))
    return out


def generate_pool(split: str, seed: int, problems: int = 100, samples: int = 32,
                  cfg: PlansGeneratorConfig = PlansGeneratorConfig()) -> list[Solution]:
    """A graded pool of ``split`` (``ood``: the held-out family :data:`~prmkit.lab.plans.domain.OOD`; any
    other split: the main family), ``samples`` plans for each of ``problems`` problems.

    >>> len(generate_pool("ood", seed=0, problems=2, samples=4)), generate_pool("eval", 0, 2, 4)[0].problem.subject
    (8, 'plans')
    """
    family = OOD if split == "ood" else PlansConfig()
    return generate(make_problems(family, problems, seed, split), cfg, samples, seed)
