"""The lab's configuration: the problem families, the generator, the labellers and the sizes of every split.

:class:`LabConfig` is inert (checked on creation, no I/O) and frozen; :func:`preset` returns one of
:data:`PRESETS`, and :meth:`LabConfig.replace` overrides dotted fields (what ``--set`` on the command
line does). Training and evaluation settings of the lab run will join these fields; the sizes of the
splits are already here.

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

from prmkit.lab.domain import OOD, LedgerConfig, config_hash
from prmkit.lab.generator import GeneratorConfig
from prmkit.lab.labellers import LabellerConfig

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

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if f.name.endswith(("_problems", "_samples")) and getattr(self, f.name) < 1:
                raise ValueError(f"{f.name} must be at least 1, got {getattr(self, f.name)}")

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
    "quick": LabConfig(name="quick", eval_problems=40, eval_samples=16, train_problems=100, train_samples=4,
                       ood_problems=20, ood_samples=16, pretrain_problems=400, pretrain_samples=4),
    "default": LabConfig(),
    "full": LabConfig(name="full", eval_problems=500, eval_samples=128, train_problems=2000, train_samples=4,
                      ood_problems=300, ood_samples=128, pretrain_problems=10000, pretrain_samples=4),
}
"""quick: seconds, for tests; default: the targets of the issue (300 x 64 held out, 2,000 labelled);
full: larger pools and 8,000 labelled solutions."""


def preset(name: str) -> LabConfig:
    """The preset called ``name`` (one of :data:`PRESETS`)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r} (expected one of {', '.join(PRESETS)})")
    return PRESETS[name]


__all__ = ["PRESETS", "SPLITS", "LabConfig", "config_hash", "preset"]
