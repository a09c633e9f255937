"""Early stopping: train until the held-out split of the labelled data stops improving, keep the best.

Every ``eval_every`` steps the loop evaluates on the held-out split; :class:`EarlyStop` remembers the best
value of the watched metric (step AUROC against the held-out labels for a PRM, held-out loss otherwise:
the same metric that chooses among restarts) and the step it came at, and says stop once ``patience``
evaluations in a row have not improved on it by more than ``min_delta`` (and not before ``min_steps``). The loop then restores the
weights of the best evaluation (``OUT/checkpoints/best``) before saving the model, so ``max_steps`` is a
cap rather than a recipe: a small label set stops early, a large one trains on. Its state travels in
every checkpoint, so a resumed run stops where the uninterrupted one would.

>>> s = EarlyStop("eval_loss", patience=2)
>>> [s.update(step, v) for step, v in [(10, 0.5), (20, 0.4), (30, 0.41), (40, 0.39), (50, 0.4), (60, 0.45)]]
[True, True, False, True, False, False]
>>> s.stop, s.best_step, s.best
(True, 40, 0.39)
"""

from __future__ import annotations

import dataclasses
import math

HIGHER_IS_BETTER = {"step_auroc": True, "eval_loss": False}
"""The metrics a run can be chosen or stopped by, and which way is better."""


def selection_metric(cfg) -> str:
    """What chooses among restarts and what early stopping watches: ``cfg.select_metric``, or by kind
    (a PRM: step AUROC against the held-out labels; an ORM or LM: held-out loss)."""
    if cfg.select_metric != "auto":
        return cfg.select_metric
    return "step_auroc" if cfg.kind == "prm" else "eval_loss"


@dataclasses.dataclass
class EarlyStop:
    """The best held-out value so far, where it came, and how many evaluations since have not beaten it."""

    metric: str
    patience: int
    min_delta: float = 0.0
    min_steps: int = 0
    best: float = math.nan
    best_step: int = 0
    since_best: int = 0
    last_step: int = 0

    def update(self, step: int, value: float) -> bool:
        """Record an evaluation at ``step``; True when it is the new best (NaN never is)."""
        self.last_step = step
        sign = 1.0 if HIGHER_IS_BETTER[self.metric] else -1.0
        improved = not math.isnan(value) and (math.isnan(self.best) or sign * (value - self.best) > self.min_delta)
        if improved:
            self.best, self.best_step, self.since_best = float(value), step, 0
        else:
            self.since_best += 1
        return improved

    @property
    def stop(self) -> bool:
        """``patience`` evaluations without a new best, and ``min_steps`` trained (a reward model can sit on
        a plateau for a while before it learns: it must not be stopped there)."""
        return self.since_best >= self.patience and self.last_step >= self.min_steps

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> EarlyStop:
        return cls(**d)


def early_stop_for(cfg) -> EarlyStop | None:
    """The run's early stopping, or None when ``early_stop_patience`` is 0."""
    if cfg.early_stop_patience <= 0:
        return None
    return EarlyStop(selection_metric(cfg), cfg.early_stop_patience, cfg.early_stop_min_delta,
                     cfg.early_stop_min_steps)


__all__ = ["HIGHER_IS_BETTER", "EarlyStop", "early_stop_for", "selection_metric"]
