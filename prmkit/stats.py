"""Counts and distributions of a file of solutions, in one streaming pass and flat memory.

>>> from prmkit.schema import Problem, Solution
>>> p = Problem("1+1?", answer="2")
>>> s1 = Solution.from_steps(p, ["1+1 = 3.", "# Answer\\n\\n2"], ratings=[-1, 1], answer="2")
>>> s2 = Solution.from_steps(p, ["# Answer\\n\\n2"], ratings=[1], answer="2", finish_reason="solution")
>>> d = summarize([s1, s2])
>>> d["solutions"], d["problems"], d["ratings"], d["steps_per_solution"]["median"]
(2, 1, {'+1': 2, '0': 0, '-1': 1, 'unrated': 0}, 1.5)
>>> d["right_answer_wrong_step"]
{'right_answer': 2, 'with_wrong_step': 1, 'share': 0.5}
>>> print(format_summary(d).splitlines()[0])
solutions: 2 (problems: 1, steps: 3)
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from typing import Any

from prmkit.schema import Solution

RATING_NAMES = {1: "+1", 0: "0", -1: "-1", None: "unrated"}


def _median(hist: Counter) -> float | None:
    """The median of the values counted in ``hist`` (value -> count)."""
    n = sum(hist.values())
    if not n:
        return None
    ranks, seen, out = ((n - 1) // 2, n // 2), 0, []
    for value in sorted(hist):
        for rank in ranks:
            if seen <= rank < seen + hist[value]:
                out.append(value)
        seen += hist[value]
    return sum(out) / 2


def _norm(answer: str) -> str:
    return "".join(answer.split()).strip("$").lower()


def right_answer(s: Solution) -> bool:
    """Whether the solution's final answer is right: its ``grade``, else an exact (whitespace-blind)
    match of ``answer`` with the problem's answer. Ungraded answers that differ count as not right."""
    if s.grade is not None:
        return s.grade == "correct"
    return bool(s.answer and s.problem.answer and _norm(s.answer) == _norm(s.problem.answer))


class _Tally:
    """The running counts; one instance per pass."""

    def __init__(self):
        self.solutions = 0
        self.problems: set[bytes] = set()  # 8-byte digests: the one thing that grows, with distinct problems
        self.lengths: Counter = Counter()
        self.ratings: Counter = Counter({k: 0 for k in RATING_NAMES})
        self.alternatives: Counter = Counter({k: 0 for k in RATING_NAMES})
        self.counters = {k: Counter() for k in ("finish_reasons", "label_sources", "grades")}
        self.values = [0, 0.0, None, None]  # count, sum, min, max
        self.right, self.right_wrong, self.flagged = 0, 0, 0

    def add(self, s: Solution) -> None:
        self.solutions += 1
        self.problems.add(hashlib.blake2b(s.problem.problem.encode(), digest_size=8).digest())
        ratings = s.ratings
        self.lengths[len(ratings)] += 1
        self.ratings.update(ratings)
        for step in s.steps:
            for c in step.completions + ([step.human] if step.human else []):
                self.alternatives[c.rating] += 1
                self.flagged += bool(c.flagged)
                if c.value is not None:
                    self._value(c.value)
        for name, value in (("finish_reasons", s.finish_reason), ("label_sources", s.label_source),
                            ("grades", s.grade)):
            self.counters[name][value if value is not None else "(none)"] += 1
        if right_answer(s):
            self.right += 1
            self.right_wrong += -1 in ratings

    def _value(self, v: float) -> None:
        n, total, lo, hi = self.values
        self.values = [n + 1, total + v, v if lo is None else min(lo, v), v if hi is None else max(hi, v)]


def summarize(solutions: Iterable[Solution]) -> dict[str, Any]:
    """Counts, rating distribution, steps per solution, finish reasons, label sources, grades, the
    share of right-answer solutions with a -1 step, and soft-value statistics.

    ``ratings`` counts the steps each solution took; ``all_completions`` every rated candidate,
    alternatives and human-written steps included.
    """
    t = _Tally()
    for s in solutions:
        t.add(s)
    steps = sum(k * v for k, v in t.lengths.items())
    n, total, lo, hi = t.values
    return {
        "solutions": t.solutions, "problems": len(t.problems), "steps": steps,
        "steps_per_solution": {"mean": round(steps / t.solutions, 3) if t.solutions else None,
                               "median": _median(t.lengths), "max": max(t.lengths, default=None)},
        "ratings": {RATING_NAMES[k]: t.ratings[k] for k in RATING_NAMES},
        "all_completions": {RATING_NAMES[k]: t.alternatives[k] for k in RATING_NAMES},
        "flagged": t.flagged,
        **{name: dict(c.most_common()) for name, c in t.counters.items()},
        "right_answer_wrong_step": {"right_answer": t.right, "with_wrong_step": t.right_wrong,
                                    "share": round(t.right_wrong / t.right, 4) if t.right else None},
        "values": {"count": n, "mean": round(total / n, 4) if n else None, "min": lo, "max": hi},
    }


def _line(name: str, counts: dict) -> str:
    total = sum(counts.values())
    parts = [f"{k} {v} ({v / total:.1%})" if total else f"{k} {v}" for k, v in counts.items()]
    return f"{name}: " + (", ".join(parts) if parts else "none")


def format_summary(d: dict[str, Any]) -> str:
    """The summary as aligned text for a terminal."""
    sps, raw, vals = d["steps_per_solution"], d["right_answer_wrong_step"], d["values"]
    lines = [
        f"solutions: {d['solutions']} (problems: {d['problems']}, steps: {d['steps']})",
        f"steps per solution: mean {sps['mean']}, median {sps['median']}, max {sps['max']}",
        _line("ratings (steps taken)", d["ratings"]),
        _line("ratings (all completions)", d["all_completions"]) + f"; flagged {d['flagged']}",
        _line("finish reasons", d["finish_reasons"]),
        _line("label sources", d["label_sources"]),
        _line("grades", d["grades"]),
        f"right answer but a -1 step: {raw['with_wrong_step']} of {raw['right_answer']}"
        + (f" ({raw['share']:.1%})" if raw["share"] is not None else ""),
        f"soft values: {vals['count']}" + (f" (mean {vals['mean']}, min {vals['min']}, max {vals['max']})"
                                           if vals["count"] else ""),
    ]
    return "\n".join(lines)
