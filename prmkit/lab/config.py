"""The lab's configuration: the problem families, the generator, the labellers and the sizes of every split.

:class:`LabConfig` is inert (checked on creation, no I/O) and frozen; :func:`preset` returns one of
:data:`PRESETS`, and :meth:`LabConfig.replace` overrides dotted fields (what ``--set`` on the command
line does). It holds the sizes of every split, the base model (:class:`BaseConfig`), the
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
from pathlib import Path

from prmkit.config import apply, read_recipe
from prmkit.lab.domain import OOD, LedgerConfig, config_hash
from prmkit.lab.domains import Domain, domain_for_family, domain_named
from prmkit.lab.generator import GeneratorConfig
from prmkit.lab.labellers import LabellerConfig
from prmkit.lab.plans.domain import PlansConfig
from prmkit.lab.plans.generator import PlansGeneratorConfig
from prmkit.model.formatter import FormatConfig
from prmkit.train.config import TrainConfig

RM_BASE = "base"
"""The name that ``rm.base_model`` and ``rm.features`` use for the run's base model folder."""

DEV_SEEDS = (0, 1, 2)
"""Seeds for choosing recipes: the tests, every tuning run, the README's ``make run``."""
REPORT_SEEDS = (10, 11, 12, 13, 14)
"""Seeds for published numbers only: no recipe or constant was chosen by looking at them."""
SEED_SETS = {"dev": DEV_SEEDS, "report": REPORT_SEEDS}
"""The names ``--seeds`` accepts for each set."""


def lab_format(max_length: int = 384) -> FormatConfig:
    """The lab's formatting: a step per line, each ended by a ``<step>`` marker."""
    return FormatConfig(separator="\n", marker="<step>", problem_suffix="\n", max_length=max_length)


@dataclass(frozen=True)
class BaseConfig:
    """The base model and its pretraining. Inert: checked on creation, no I/O."""

    hidden_size: int = field(default=128, metadata={"help": "model width"})
    layers: int = field(default=2, metadata={"help": "transformer blocks"})
    heads: int = field(default=4, metadata={"help": "attention heads"})
    intermediate_size: int = field(default=256, metadata={"help": "MLP width"})
    steps: int = field(default=500, metadata={
        "help": "optimiser steps of pretraining (500 x 32: 0.8 passes over the default 20,000 solutions)"})
    batch_size: int = field(default=32, metadata={"help": "solutions per optimiser step"})
    lr: float = field(default=3e-3, metadata={"help": "peak learning rate (cosine decay after warm-up)"})
    warmup: int = field(default=50, metadata={"help": "linear warm-up steps"})
    seed: int = field(default=0, metadata={
        "help": "seed of the pretraining pool and the weights: one base for every run seed, as the paper has "
                "one pretrained base"})
    max_length: int = field(default=384, metadata={"help": "most tokens per solution (formatter truncation)"})
    numeric_init: float = field(default=0.1, metadata={
        "help": "scale of the Fourier features of its value added to each number token's initial embedding "
                "(0: plain random init); they make arithmetic learnable in a CPU budget"})

    def __post_init__(self):
        if self.hidden_size % self.heads:
            raise ValueError(f"hidden_size {self.hidden_size} must be a multiple of heads {self.heads}")
        for name in ("hidden_size", "layers", "heads", "intermediate_size", "steps", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"base.{name} must be at least 1")


KEEPS = ("correct", "valid")
"""What expert iteration keeps of the policy's samples (:attr:`PolicyConfig.keep`)."""


@dataclass(frozen=True)
class PolicyConfig:
    """The ``sft`` policy: the base fine-tuned on the rule-based generator's passing samples (the warm start), then
    by expert iteration on its own while below ``target`` (:mod:`prmkit.lab.policy`). Inert: checked on creation,
    no I/O."""

    rounds: int = field(default=4, metadata={"help": "most rounds of sample, filter, fine-tune (after the warm start)"})
    target: float = field(default=0.25, metadata={
        "help": "stop once pass@1 on the measure problems reaches this (issue 34 asks for 20-40%)"})
    problems: int = field(default=1000, metadata={"help": "fresh problems sampled per round"})
    samples: int = field(default=8, metadata={"help": "samples per problem per round"})
    keep: str = field(default="correct", metadata={
        "help": "what is fine-tuned on: correct (a right final answer) or valid (and every step valid by the oracle)"})
    warm_start: int = field(default=10000, metadata={
        "help": "first fine-tune on this many of the rule-based generator's samples that pass keep (0: none); "
                "10,000 by the second rule of docs/pressure.md (the smallest size inside 20-40% pass@1)"})
    epochs: float = field(default=2.0, metadata={"help": "passes over each round's kept samples"})
    batch_size: int = field(default=32, metadata={"help": "solutions per optimiser step"})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate (cosine decay after warm-up)"})
    warmup: int = field(default=10, metadata={"help": "linear warm-up steps"})
    measure_problems: int = field(default=200, metadata={"help": "problems pass@1 is measured on after each round"})
    measure_samples: int = field(default=8, metadata={"help": "samples per measured problem"})
    seed: int = field(default=0, metadata={"help": "seed of the problems, samples and fine-tuning: one policy "
                                                   "for every run seed, as there is one base"})

    def __post_init__(self):
        if self.keep not in KEEPS:
            raise ValueError(f"sft.keep must be one of {', '.join(KEEPS)}, got {self.keep!r}")
        if self.warm_start < 0:
            raise ValueError(f"sft.warm_start must be 0 or positive, got {self.warm_start}")
        if self.rounds < 0:
            raise ValueError(f"sft.rounds must be 0 (the warm start alone) or positive, got {self.rounds}")
        for name in ("problems", "samples", "batch_size", "measure_problems", "measure_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"sft.{name} must be at least 1")
        if not 0 < self.target <= 1 or self.epochs <= 0 or self.lr <= 0:
            raise ValueError("sft.target must lie in (0, 1], sft.epochs and sft.lr must be positive")


def lab_rm(**overrides) -> TrainConfig:
    """The lab's reward-model recipe (``LabConfig.rm``, a ``prmkit train`` config): the base with a
    ``classify`` head and the base's per-token surprise through the feature adapter; its new parts learn
    at ``new_lr``. One protocol for every arm (``docs/lab.md``, "Why single runs stall"): trained to
    convergence, early stopping on the seed's validation split (an evaluation every 25 steps, stop after 4
    without a better one, never before step 200, 600 steps at most), the best evaluation kept; three
    restarts, stalled ones rejected, the best kept on the same split (:mod:`prmkit.train.restarts`).
    The learning rates (5e-4 for the base's weights, 3e-3 for the new parts) are candidate C3, chosen by
    the rule written before the screen (``docs/results/stall-screen.json``); the recipe before it (300
    steps at 2e-3 / 1e-2) stalled in 11 of 20 single ORM runs (``docs/results/stalls.json``).
    Data and output are set per job (:func:`prmkit.lab.rm.job_config`)."""
    fmt = lab_format()
    recipe = TrainConfig(base_model=RM_BASE, features=f"surprise:{RM_BASE}", head="classify", max_steps=600,
                         batch_size=32, lr=5e-4, new_lr=3e-3, warmup_steps=20, weight_decay=0.01, scheduler="linear",
                         restarts=3, eval_fraction=0.1, eval_every=25, early_stop_patience=4, early_stop_min_steps=200,
                         save_every=100, log_every=10, tensorboard=False,
                         separator=fmt.separator, marker=fmt.marker, problem_suffix=fmt.problem_suffix,
                         max_length=fmt.max_length)
    return dataclasses.replace(recipe, **overrides)


SPLITS = ("eval", "train", "ood", "pretrain", "ood_pretrain")
"""Pools the lab generates: held-out evaluation, solutions to label, the held-out family, and
unlabelled generator output for pretraining the lab's base model, of both families (the held-out
family's pretraining problems are not its evaluation problems). Each split has its own problems."""


POLICIES = ("rules", "lm", "sft")
"""What can sample the lab's pools (:attr:`LabConfig.policy`)."""
AGGREGATIONS = ("min", "product")
"""The PRM solution scores a lab run's findings can read (:attr:`LabConfig.aggregation`)."""


@dataclass(frozen=True)
class LabConfig:
    """Everything that decides the lab's data. Sizes are problems x samples per problem."""

    name: str = "default"
    """The preset this config came from (informative only)."""
    domain: LedgerConfig | PlansConfig = field(default_factory=LedgerConfig)
    """The problem family of the eval, train and pretrain splits; its type names the lab domain
    (:mod:`prmkit.lab.domains`: the ledger's ``LedgerConfig``, the plans' ``PlansConfig``)."""
    ood: LedgerConfig | PlansConfig = OOD
    """The held-out family of the ood split (the ledger's: new operation types, longer chains), of the
    same domain."""
    generator: GeneratorConfig | PlansGeneratorConfig = field(default_factory=GeneratorConfig)
    """How solutions are sampled and how they fail: the domain's rule-based generator."""
    labellers: LabellerConfig = field(default_factory=LabellerConfig)
    """The simulated labellers of the train split."""
    policy: str = "rules"
    """What samples the eval, train and ood pools: ``rules``, the rule-based generator (exact to its
    design, instant); ``lm``, the lab's base model sampled at temperature 1 (``prmkit generate --backend
    lab-lm``: a policy with weights, what search and RL can optimise). The base is pretrained on the
    rule-based generator's output either way; ``sft``, the base fine-tuned into a policy (a warm
    start on the generator's passing samples, then expert iteration while below target: ``sft``;
    :mod:`prmkit.lab.policy`), sampled the same way."""
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
    ood_pretrain_problems: int = 1000
    """Problems of the held-out family whose unlabelled samples also pretrain the base (0: none). The
    paper's base had read physics and chemistry before; only its *labels* were out of distribution.
    A base that never read the held-out family's words takes its correct steps for errors."""
    ood_pretrain_samples: int = 4
    """Samples per held-out-family pretraining problem."""
    base: BaseConfig = field(default_factory=BaseConfig)
    """The base model (the stand-in for a pretrained LM) and its pretraining on the pretrain split."""
    sft: PolicyConfig = field(default_factory=PolicyConfig)
    """With ``policy=sft``: how the base is fine-tuned into the policy."""
    rm: TrainConfig = field(default_factory=lab_rm)
    """The reward models' training recipe (``prmkit train``'s config; ``base`` names the run's base model),
    the same for the PRM and the ORM (:func:`prmkit.lab.rm.lab_rm`)."""
    paper_arms: bool = False
    """Also train the paper's two data arms (:mod:`prmkit.lab.arms`): a PRM on as many labelled solutions
    chosen as PRM800K's were (the most convincing wrong answers by the seed's equal-data PRM, the 80/20 mix),
    and an ORM on ``orm_ratio`` x as many uniform samples graded by final answer. The equal-data pair
    (``prm``, ``orm``: both on the same uniform labelled solutions) is trained either way."""
    orm_ratio: int = 10
    """With ``paper_arms``: the paper's ORM trains on this many times the PRM's labelled solutions (uniform
    samples of the same problems, graded: labels that cost nothing; the paper's ORM had about 10x
    PRM800K's solutions), and the selector chooses the paper PRM's set among them."""
    label_budgets: tuple[int, ...] = ()
    """Extra numbers of labelled solutions to train PRM and ORM on (a label-budget sweep; each a prefix
    of the labelled split); the run always trains on all ``train_problems x train_samples``."""
    aggregation: str = "min"
    """The PRM's solution score in the findings (both comparisons): ``min`` over steps (the lab's, chosen on the
    ledger before any run) or ``product`` (the paper's). Every evaluation keeps both; this picks the one the
    findings and the paper arms' headline read (the plans presets: docs/domains.md, "A plans recipe")."""
    vote_target_se: float = 0.003
    """Monte-Carlo standard error aimed at by majority and weighted voting."""
    bootstrap: int = 1000
    """Bootstrap resamples (over problems) of every 95% confidence interval."""

    def __post_init__(self):
        self._check_domain()
        for f in dataclasses.fields(self):
            least = 0 if f.name.startswith("ood_pretrain") else 1
            if f.name.endswith(("_problems", "_samples")) and getattr(self, f.name) < least:
                raise ValueError(f"{f.name} must be at least {least}, got {getattr(self, f.name)}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")
        if self.orm_ratio < 1:
            raise ValueError(f"orm_ratio must be at least 1, got {self.orm_ratio}")
        budgets = tuple(int(b) for b in self.label_budgets)
        object.__setattr__(self, "label_budgets", budgets)
        if any(not 1 <= b <= self.train_problems * self.train_samples for b in budgets):
            raise ValueError(f"label_budgets {budgets} must lie in 1..train_problems x train_samples "
                             f"({self.train_problems * self.train_samples})")
        if self.vote_target_se <= 0 or self.bootstrap < 10:
            raise ValueError("vote_target_se must be positive and bootstrap at least 10")

    def _check_domain(self) -> None:
        d = domain_for_family(self.domain)
        families = {"domain": self.domain, "ood": self.ood}
        wrong = [f"{k} is a {type(v).__name__}" for k, v in families.items() if not isinstance(v, d.family_config)]
        wrong += [f"{k}.family {v.family!r} does not start with {d.name!r}" for k, v in families.items()
                  if isinstance(v, d.family_config) and not d.owns(v.family)]
        if not isinstance(self.generator, d.generator_config):
            wrong.append(f"generator is a {type(self.generator).__name__}")
        if self.policy != "rules" and not d.lm_policy:
            wrong.append(f"policy {self.policy}: its base model cannot yet sample this domain's text")
        if wrong:
            raise ValueError(f"a {d.name} lab config needs every part of the {d.name} domain: {'; '.join(wrong)}")

    @property
    def lab_domain(self) -> Domain:
        """The lab domain whose problems this config makes (:func:`prmkit.lab.domains.domain_for_family`)."""
        return domain_for_family(self.domain)

    @property
    def labelled(self) -> int:
        """Labelled solutions of the run (the train split's size)."""
        return self.train_problems * self.train_samples

    def sizes(self, split: str) -> tuple[int, int]:
        """(problems, samples per problem) of ``split``."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
        return getattr(self, f"{split}_problems"), getattr(self, f"{split}_samples")

    def family(self, split: str) -> LedgerConfig | PlansConfig:
        """The problem family of ``split``."""
        self.sizes(split)
        return self.ood if split.startswith("ood") else self.domain

    def replace(self, overrides: dict[str, object]) -> LabConfig:
        """A copy with dotted fields replaced: ``{"generator.check_rate": 0.1, "eval_samples": 16}``
        (values may be text, as ``--set`` gives them: :func:`prmkit.config.apply`)."""
        return apply(self, overrides)


RECIPES = Path(__file__).parent / "recipes"
PRESETS = tuple(sorted(p.stem for p in RECIPES.glob("*.yaml")))
"""The ledger's presets: recipe files in ``prmkit/lab/recipes/`` (default, easy, quick, full, quick-lm),
each over :class:`LabConfig`. Another domain's are in ``recipes/<domain>/`` (:func:`presets`)."""


def domain_defaults(domain: str = "ledger") -> LabConfig:
    """The :class:`LabConfig` defaults with the families and generator of lab domain ``domain``."""
    d = domain_named(domain)
    return LabConfig(domain=d.family_config(), ood=d.ood, generator=d.generator_config())


def presets(domain: str = "ledger") -> tuple[str, ...]:
    """The preset names of lab domain ``domain``."""
    return PRESETS if domain == "ledger" else tuple(sorted(p.stem for p in (RECIPES / domain).glob("*.yaml")))


def preset(name: str, domain: str = "ledger") -> LabConfig:
    """The preset called ``name`` of lab domain ``domain`` (:func:`presets`): its recipe file over the
    domain's defaults (:func:`domain_defaults`)."""
    names = presets(domain)
    if name not in names:
        raise ValueError(f"unknown preset {name!r} of the {domain} domain (expected one of {', '.join(names)})")
    folder = RECIPES if domain == "ledger" else RECIPES / domain
    return apply(domain_defaults(domain), read_recipe(folder / f"{name}.yaml"))


__all__ = [
    "DEV_SEEDS",
    "PRESETS",
    "RECIPES",
    "REPORT_SEEDS",
    "RM_BASE",
    "SEED_SETS",
    "SPLITS",
    "BaseConfig",
    "LabConfig",
    "PolicyConfig",
    "config_hash",
    "domain_defaults",
    "lab_format",
    "lab_rm",
    "preset",
    "presets",
]
