"""The lab's second domain: plans, where every step of a solution is a decision (which tasks to do on
which day) rather than a calculation, with an exact oracle for every step.

- :mod:`prmkit.lab.plans.domain`: the problem family (tasks, dependencies, deadlines, a day's capacity;
  one van in the held-out family), generated from seeds, and the exact search :func:`best_finish`.
- :mod:`prmkit.lab.plans.oracle`: PRM800K-style ratings of every step with a reason, immediate errors
  told from delayed ones (dead ends and wasteful days), and the answer's grade.
"""

from prmkit.lab.plans.domain import (
           OOD,
           Plan,
           PlansConfig,
           Task,
           best_finish,
           make_problem,
           make_problems,
           parse_problem,
)
from prmkit.lab.plans.oracle import REASONS, StepLabel, grade_answer, label_texts, oracle_labels

__all__ = ["OOD", "REASONS", "Plan", "PlansConfig", "StepLabel", "Task", "best_finish", "grade_answer",
           "label_texts", "make_problem", "make_problems", "oracle_labels", "parse_problem"]
