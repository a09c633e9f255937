"""Simulated labellers: the exact oracle seen through noisy, biased, timed people, in PRM800K's phase-2 flow.

Each solution goes to one of ``labellers`` simulated people. A labeller reads the steps in order and
rates each one from the oracle's truth, with noise:

- a wrong step (-1) is missed (rated +1) with probability ``flip_rate * (1 + lenience)``;
- a right step (+1) is flagged wrong (-1) with probability ``flip_rate * (1 - lenience)``;
- a neutral step (0) is rated +1 with probability ``neutral_confusion``;

where every labeller has a fixed ``lenience`` drawn uniformly from ``[-bias, bias]`` (lenient people
miss errors, strict ones see errors that are not there). An error that is hard to judge on its line is
missed ``delayed_miss_factor`` times as often: in the plans domain, a day that is valid but dead-ends
or wastes a day later (:attr:`prmkit.lab.domains.Domain.delayed`), which a person sees only by planning
ahead; the ledger's errors are all visible on their line. In phase 2 (``stop_at_first_error``) the
labeller stops at the first step *they* rate -1 (``finish_reason="found_error"``); a solution read to
the end finishes with ``"solution"``, or ``"give_up"`` when it never reaches an answer. The steps
after a stop are not in the record (as in PRM800K); ``prelabel`` keeps every step and the answer.

Time: ``total_time_ms`` is ``ms_per_solution`` plus ``ms_per_step`` per step read, each scaled by a
log-normal factor of spread ``time_spread``. Timestamps follow each labeller's own clock from
``start_time``; ``generation`` numbers split the list into ``generations`` consecutive parts.

Label source: the records say ``label_source="human"``, because they stand in for people and must
look and export exactly like PRM800K labels (whose reader sets "human" anyway). What marks them as
simulated is the labeller id (``sim-00``, ...) and ``meta["lab"]["simulated"]``. Noise-free labels of
every step come from :func:`prmkit.lab.domains.oracle_label`, with ``label_source="oracle"``.

>>> from prmkit.lab.config import preset
>>> from prmkit.lab.pools import generate_pool
>>> sols = generate_pool(preset("quick"), seed=0, split="train", problems=5)
>>> out = label(sols, LabellerConfig(), seed=0)
>>> {s.finish_reason for s in out} <= {"found_error", "solution", "give_up"}, out[0].label_source
(True, 'human')
>>> all(s.ratings.count(-1) <= 1 and (s.ratings[-1] == -1) == (s.finish_reason == "found_error") for s in out)
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from prmkit.lab.domains import domain_of
from prmkit.schema import LABEL_SOURCES, Completion, Prelabel, Solution, Step


@dataclass(frozen=True)
class LabellerConfig:
    """The simulated labellers. Inert: checked on creation, no I/O."""

    labellers: int = 8
    """How many simulated people share the work (ids ``sim-00``, ``sim-01``, ...)."""
    flip_rate: float = 0.05
    """Base chance of rating a wrong step +1 or a right step -1 (skewed by each labeller's lenience)."""
    neutral_confusion: float = 0.3
    """Chance of rating a neutral (0) step +1."""
    delayed_miss_factor: float = 3.0
    """How many times as often an error visible only later (plans: a dead end, a wasteful day) is missed
    as one visible on its line (at most a sure miss)."""
    bias: float = 0.5
    """Each labeller's lenience is uniform in [-bias, bias]: miss rate flip_rate*(1+l), false alarms flip_rate*(1-l)."""
    ms_per_step: int = 12_000
    """Median time to read and rate one step, in milliseconds."""
    ms_per_solution: int = 30_000
    """Median time to read the problem and the solution before rating, in milliseconds."""
    time_spread: float = 0.5
    """Standard deviation of the log of every time factor (0: exact medians)."""
    stop_at_first_error: bool = True
    """PRM800K phase 2: stop at the first step rated -1. False: rate every step."""
    generations: int = 1
    """Split the solutions into this many consecutive labelling generations."""
    first_generation: int = 1
    """Generation number of the first part."""
    label_source: str = "human"
    """The records' ``label_source`` (they stand in for people; see the module docstring)."""
    start_time: str = "2023-01-01T00:00:00"
    """Every labeller's clock starts here (ISO 8601)."""

    def __post_init__(self):
        for name in ("flip_rate", "neutral_confusion", "bias"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if self.delayed_miss_factor < 1.0:
            raise ValueError(f"delayed_miss_factor must be at least 1, got {self.delayed_miss_factor!r}")
        if self.labellers < 1 or self.generations < 1:
            raise ValueError("labellers and generations must be at least 1")
        if min(self.ms_per_step, self.ms_per_solution) < 0 or self.time_spread < 0:
            raise ValueError("times and time_spread must not be negative")
        if self.label_source not in LABEL_SOURCES:
            raise ValueError(f"label_source must be one of {', '.join(LABEL_SOURCES)}, got {self.label_source!r}")
        datetime.fromisoformat(self.start_time)


def labeller_lenience(cfg: LabellerConfig, seed: int) -> np.ndarray:
    """Every labeller's lenience in [-bias, bias] (positive: misses errors)."""
    return np.random.default_rng([seed, 1]).uniform(-cfg.bias, cfg.bias, size=cfg.labellers)


def noisy_ratings(truth: list[int], lenience: float, cfg: LabellerConfig, u: np.ndarray,
                  delayed: list[bool] | None = None) -> list[int]:
    """A labeller's ratings of steps whose true ratings are ``truth``, from uniform draws ``u`` (one per step);
    ``delayed`` marks the errors that are hard to judge on their line (missed more often).

    >>> noisy_ratings([1, 0, -1], 0.0, LabellerConfig(flip_rate=0.5, neutral_confusion=0.5), np.array([.4, .4, .6]))
    [-1, 1, -1]
    >>> noisy_ratings([-1, -1], 0.0, LabellerConfig(flip_rate=0.1), np.array([.2, .2]), delayed=[False, True])
    [-1, 1]
    """
    miss = min(1.0, cfg.flip_rate * (1 + lenience))
    alarm = min(1.0, cfg.flip_rate * (1 - lenience))
    out = []
    for r, x, late in zip(truth, u, delayed or [False] * len(truth)):
        if r == -1:
            out.append(1 if x < min(1.0, miss * (cfg.delayed_miss_factor if late else 1.0)) else -1)
        elif r == 1:
            out.append(-1 if x < alarm else 1)
        else:
            out.append(1 if x < cfg.neutral_confusion else 0)
    return out


def _phase(ratings: list[int], answered: bool, stop: bool) -> tuple[int, str]:
    """How many steps the labeller rates, and the finish reason."""
    first = next((i for i, r in enumerate(ratings) if r == -1), None)
    if stop and first is not None:
        return first + 1, "found_error"
    return len(ratings), "solution" if answered else "give_up"


def label(solutions: list[Solution], cfg: LabellerConfig, seed: int, stream: int = 0) -> list[Solution]:
    """Simulated labels for ``solutions`` (of either lab domain, told by the problem's family), one
    record per solution, in order. The same solutions, config and seed give equal records. ``stream``: another
    batch for the same labellers (the seed's population, its lenience), with draws of its own: who labels each
    record and their slips are not those of stream 0's record at the same position.
    """
    rng = np.random.default_rng([seed, 0, stream] if stream else [seed, 0])
    lenience = labeller_lenience(cfg, seed)
    who = rng.integers(cfg.labellers, size=len(solutions))
    clocks = [datetime.fromisoformat(cfg.start_time)] * cfg.labellers
    out = []
    for j, sol in enumerate(solutions):
        texts = sol.texts
        domain = domain_of(sol)
        labels = domain.oracle.oracle_labels(sol)
        delayed = [lab.reason in domain.delayed for lab in labels]
        ratings = noisy_ratings([lab.rating for lab in labels], float(lenience[who[j]]), cfg, rng.random(len(texts)),
                                delayed)
        n, reason = _phase(ratings, sol.answer is not None, cfg.stop_at_first_error)
        times = cfg.ms_per_step * rng.lognormal(0.0, cfg.time_spread, size=n)
        total = round(cfg.ms_per_solution * rng.lognormal(0.0, cfg.time_spread) + float(times.sum()))
        clocks[who[j]] += timedelta(milliseconds=total)
        out.append(dataclasses.replace(
            sol, steps=[Step([Completion(t, rating=r)]) for t, r in zip(texts[:n], ratings[:n])],
            label_source=cfg.label_source, labeller=f"sim-{int(who[j]):02d}",
            timestamp=clocks[who[j]].isoformat(timespec="microseconds"),
            generation=cfg.first_generation + j * cfg.generations // max(len(solutions), 1),
            quality_control=False, screening=False, total_time_ms=total, finish_reason=reason,
            prelabel=Prelabel(steps=texts, answer=sol.answer), meta={**sol.meta, "lab": {"simulated": True}}))
    return out
