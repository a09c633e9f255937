"""Settings of the lab's studies (``prmkit lab study active|synthetic|budget``), one inert dataclass each.

They are fields of :class:`~prmkit.lab.config.LabConfig` (``active``, ``synthetic``, ``budget``), so
``--set active.budgets=1,2,4`` works like any other override and a study's cache keys see them. Each
default runs in at most 30 minutes on 2 CPU cores; :meth:`quick` is the size the test suite runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class BudgetConfig:
    """The label-budget curve: PRM and ORM trained on several numbers of labelled solutions."""

    budgets: tuple[int, ...] = field(default=(250, 500, 1000, 2000), metadata={
        "help": "numbers of labelled solutions (each a prefix of one shuffled labelled pool)"})
    n: int = field(default=64, metadata={"help": "best-of-N at this N (at most the eval pool's samples)"})

    def __post_init__(self):
        object.__setattr__(self, "budgets", tuple(int(b) for b in self.budgets))
        if len(self.budgets) < 2 or min(self.budgets) < 1:
            raise ValueError(f"budget.budgets needs at least two positive sizes, got {self.budgets}")

    @classmethod
    def quick(cls) -> BudgetConfig:
        return cls(budgets=(250, 1000), n=16)


@dataclass(frozen=True)
class ActiveConfig:
    """Active learning on convincing wrong answers against uniform selection, at equal labels."""

    budgets: tuple[int, ...] = field(default=(1, 2, 4), metadata={
        "help": "labelled solutions per training problem (the x axis of the slope fit)"})
    candidates: int = field(default=32, metadata={"help": "candidate samples per training problem the selector scores"})
    n: int = field(default=64, metadata={"help": "best-of-N at this N"})

    def __post_init__(self):
        object.__setattr__(self, "budgets", tuple(int(b) for b in self.budgets))

    @classmethod
    def quick(cls) -> ActiveConfig:
        return cls(budgets=(1, 4), candidates=16, n=16)


@dataclass(frozen=True)
class SyntheticConfig:
    """Synthetic supervision: a large PRM labels fresh samples for small reward models."""

    per_problem: tuple[int, ...] = field(default=(1, 2, 4), metadata={
        "help": "samples per training problem labelled by the large PRM"})
    threshold: float = field(default=0.2, metadata={
        "help": "a step counts as wrong when the large PRM's P(negative) exceeds this (the paper's 0.2)"})
    n: int = field(default=64, metadata={"help": "best-of-N at this N"})

    def __post_init__(self):
        object.__setattr__(self, "per_problem", tuple(int(b) for b in self.per_problem))

    @classmethod
    def quick(cls) -> SyntheticConfig:
        return cls(per_problem=(1, 4), n=16)


__all__ = ["ActiveConfig", "BudgetConfig", "SyntheticConfig"]
