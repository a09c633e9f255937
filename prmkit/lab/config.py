"""The lab's configuration: the problem families, the generator, the labellers and the sizes of every split.

:class:`LabConfig` is inert (checked on creation, no I/O) and frozen; :func:`preset` returns one of
:data:`PRESETS`, and :meth:`LabConfig.replace` overrides dotted fields (what ``--set`` on the command
line does). It holds the sizes of every split, the base model (:class:`~prmkit.lab.base.BaseConfig`), the
reward models (a :class:`~prmkit.train.config.TrainConfig`, :func:`~prmkit.lab.rm.lab_rm`) and the evaluation settings of ``prmkit lab run``.

>>> cfg = preset("default")
>>> cfg.eval_problems, cfg.eval_samples, cfg.train_problems * cfg.train_samples
(300, 64, 2000)
>>> cfg.replace({"generator.check_rate": 0.2, "eval_samples": 8}).generator.check_rate
0.2
>>> config_hash(preset("quick")) != config_hash(cfg)
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from prmkit.lab.base import BaseConfig
from prmkit.lab.domain import OOD, LedgerConfig, config_hash
from prmkit.lab.generator import GeneratorConfig
from prmkit.lab.labellers import LabellerConfig
from prmkit.lab.rm import lab_rm
from prmkit.lab.study.config import ActiveConfig, BudgetConfig, SyntheticConfig
from prmkit.train.config import TrainConfig

SPLITS = ("eval", "train", "ood", "pretrain")
"""Pools the lab generates: held-out evaluation, solutions to label, the held-out family, and
unlabelled generator output for pretraining the lab's base model. Each split has its own problems."""


@dataclass(frozen=True)
class LabConfig:
    """Everything that decides the lab's data. Sizes are problems x samples per problem."""

    name: str = "default"
    """The preset this config came from (informative only)."""
    domain: LedgerConfig = field(default_factory=LedgerConfig)
    """The problem family of the eval, train and pretrain splits."""
    ood: LedgerConfig = OOD
    """The held-out family of the ood split (new operation types, longer chains)."""
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    """How solutions are sampled and how they fail."""
    labellers: LabellerConfig = field(default_factory=LabellerConfig)
    """The simulated labellers of the train split."""
    eval_problems: int = 300
    """Held-out problems for best-of-N."""
    eval_samples: int = 64
    """Samples per held-out problem (the largest N of best-of-N)."""
    train_problems: int = 500
    """Problems whose samples are labelled."""
    train_samples: int = 4
    """Samples per training problem (labelled solutions = train_problems x train_samples)."""
    ood_problems: int = 200
    """Problems of the held-out family."""
    ood_samples: int = 64
    """Samples per held-out-family problem."""
    pretrain_problems: int = 4000
    """Problems whose unlabelled samples pretrain the lab's base model."""
    pretrain_samples: int = 4
    """Samples per pretraining problem."""
    base: BaseConfig = field(default_factory=BaseConfig)
    """The base model (the stand-in for a pretrained LM) and its pretraining on the pretrain split."""
    rm: TrainConfig = field(default_factory=lab_rm)
    """The reward models' training recipe (``prmkit train``'s config; ``base`` names the run's base model),
    the same for the PRM and the ORM (:func:`prmkit.lab.rm.lab_rm`)."""
    label_budgets: tuple[int, ...] = ()
    """Extra numbers of labelled solutions to train PRM and ORM on (a label-budget sweep; each a prefix
    of the labelled split); the run always trains on all ``train_problems x train_samples``."""
    vote_target_se: float = 0.003
    """Monte-Carlo standard error aimed at by majority and weighted voting."""
    bootstrap: int = 1000
    """Bootstrap resamples (over problems) of every 95% confidence interval."""
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    """``prmkit lab study budget``: the label-budget curve."""
    active: ActiveConfig = field(default_factory=ActiveConfig)
    """``prmkit lab study active``: convincing-wrong-answer selection against uniform."""
    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)
    """``prmkit lab study synthetic``: a large PRM labels data for small reward models."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if f.name.endswith(("_problems", "_samples")) and getattr(self, f.name) < 1:
                raise ValueError(f"{f.name} must be at least 1, got {getattr(self, f.name)}")
        budgets = tuple(int(b) for b in self.label_budgets)
        object.__setattr__(self, "label_budgets", budgets)
        if any(not 1 <= b <= self.train_problems * self.train_samples for b in budgets):
            raise ValueError(f"label_budgets {budgets} must lie in 1..train_problems x train_samples "
                             f"({self.train_problems * self.train_samples})")
        if self.vote_target_se <= 0 or self.bootstrap < 10:
            raise ValueError("vote_target_se must be positive and bootstrap at least 10")

    @property
    def labelled(self) -> int:
        """Labelled solutions of the run (the train split's size)."""
        return self.train_problems * self.train_samples

    def sizes(self, split: str) -> tuple[int, int]:
        """(problems, samples per problem) of ``split``."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
        return getattr(self, f"{split}_problems"), getattr(self, f"{split}_samples")

    def family(self, split: str) -> LedgerConfig:
        """The problem family of ``split``."""
        self.sizes(split)
        return self.ood if split == "ood" else self.domain

    def replace(self, overrides: dict[str, object]) -> LabConfig:
        """A copy with dotted fields replaced: ``{"generator.check_rate": 0.1, "eval_samples": 16}``."""
        cfg = self
        for key, value in overrides.items():
            cfg = _replace_path(cfg, key.split("."), value, key)
        return cfg


def _replace_path(obj, path: list[str], value, key: str):
    names = {f.name: f for f in dataclasses.fields(obj)}
    if path[0] not in names:
        raise ValueError(f"unknown config field {key!r} (at {path[0]!r}; known: {', '.join(names)})")
    current = getattr(obj, path[0])
    if len(path) > 1:
        if not dataclasses.is_dataclass(current):
            raise ValueError(f"config field {key!r}: {path[0]!r} has no sub-fields")
        return dataclasses.replace(obj, **{path[0]: _replace_path(current, path[1:], value, key)})
    if dataclasses.is_dataclass(current):
        raise ValueError(f"config field {key!r} is a group; set one of its fields ({key}.<field>)")
    return dataclasses.replace(obj, **{path[0]: _coerce(current, value, key)})


def _coerce(current, value, key: str):
    """``value`` (often a string from the command line) as the type of the field's current value."""
    if not isinstance(value, str) or isinstance(current, str):
        return value
    if isinstance(current, bool):
        if value.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"config field {key!r} expects true or false, got {value!r}")
        return value.lower() in ("true", "1")
    if isinstance(current, tuple):
        items = [v for v in value.replace(",", " ").split()]
        return tuple(type(current[0])(v) if current else float(v) for v in items)
    try:
        return type(current)(value)
    except ValueError:
        raise ValueError(f"config field {key!r} expects {type(current).__name__}, got {value!r}") from None


PRESETS = {
    "quick": LabConfig(name="quick", eval_problems=40, eval_samples=16, train_problems=500, train_samples=4,
                       ood_problems=20, ood_samples=16, bootstrap=500,
                       budget=BudgetConfig.quick(), active=ActiveConfig.quick(), synthetic=SyntheticConfig.quick()),
    "default": LabConfig(),
    "full": LabConfig(name="full", train_problems=2000, train_samples=4, label_budgets=(500, 2000)),
}
"""quick: small held-out pools (40 x 16, OOD 20 x 16), the same base model (cached once for both), 2,000
labels and reward-model budget as default (a few minutes; the end-to-end test); default: the targets of the issue (300 x 64
held out, 2,000 labelled); full: the default pools with 8,000 labelled solutions and a label-budget sweep
(500 / 2,000 / 8,000), PRM and ORM trained at each budget with the same number of optimiser steps."""


def preset(name: str) -> LabConfig:
    """The preset called ``name`` (one of :data:`PRESETS`)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r} (expected one of {', '.join(PRESETS)})")
    return PRESETS[name]


__all__ = ["PRESETS", "SPLITS", "LabConfig", "config_hash", "preset"]
