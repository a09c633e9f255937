"""Seeded synthetic step data for tests and benchmarks: running sums with injected errors.

A problem is a start value and a list of additions and subtractions; each solution step restates one
operation and computes it (``12 + 5 = 17``). Errors, injected per step with probability ``error_rate``:
an arithmetic slip (result off by 1 or 2) or a stale operand (the step starts from the value before the
previous one). Steps after an error carry on from the wrong value. Every step has an exact label: +1
when its left operand is the previous step's result and its arithmetic is right, -1 otherwise. The final
answer is graded against the true total. For the lab's richer domain see :mod:`prmkit.lab` where it
exists; this one only needs to be small, fast and exactly labelled.

>>> sols = make_solutions(3, seed=0)
>>> len(sols), sols[0].texts[0], sols[0].ratings[:3]
(3, '6 - 1 = 5', [1, 1, 1])
>>> make_solutions(3, seed=0)[2].to_dict() == sols[2].to_dict()
True
"""

from __future__ import annotations

import random

from prmkit.schema import Problem, Solution


def _problem(rng: random.Random, n_steps: int) -> tuple[int, list[tuple[str, int]]]:
    start, total, ops = rng.randint(0, 9), None, []
    total = start
    for _ in range(n_steps):
        d = rng.randint(1, 9)
        op = "-" if total - d >= 0 and rng.random() < 0.4 else "+"
        ops.append((op, d))
        total = total + d if op == "+" else total - d
    return start, ops


def _solution(rng: random.Random, start: int, ops: list, error_rate: float) -> tuple[list[str], list[int], int]:
    texts, ratings = [], []
    true_total, written, before = start, start, start
    for op, d in ops:
        left, kind = written, "ok"
        if rng.random() < error_rate:
            kind = rng.choice(["slip", "stale"]) if len(texts) else "slip"
        if kind == "stale":
            left = before
        result = left + d if op == "+" else left - d
        if kind == "slip":
            result += rng.choice([-2, -1, 1, 2])
        correct_left = written
        ratings.append(1 if kind == "ok" and left == correct_left else -1)
        texts.append(f"{left} {op} {d} = {result}")
        before, written = written, result
        true_total = true_total + d if op == "+" else true_total - d
    return texts, ratings, written


def make_solutions(n: int, seed: int = 0, n_steps: tuple[int, int] = (3, 8), error_rate: float = 0.12,
                   samples_per_problem: int = 4) -> list[Solution]:
    """``n`` labelled solutions, ``samples_per_problem`` per problem, answers graded."""
    rng = random.Random(seed)
    out: list[Solution] = []
    while len(out) < n:
        start, ops = _problem(rng, rng.randint(*n_steps))
        truth = start + sum(d if op == "+" else -d for op, d in ops)
        pid = f"toy-{seed}-{len(out)}"
        text = f"Start at {start}. " + " ".join(f"{op}{d}" for op, d in ops) + "."
        for _ in range(min(samples_per_problem, n - len(out))):
            texts, ratings, answer = _solution(rng, start, ops, error_rate)
            sol = Solution.from_steps(Problem(text, answer=str(truth), id=pid), texts, ratings=ratings,
                                      id=f"{pid}-{len(out)}", answer=str(answer),
                                      grade="correct" if answer == truth else "incorrect", label_source="oracle")
            out.append(sol)
    return out
