"""Training configuration: one inert dataclass, every field with help, defaults that finish in seconds on CPU.

Precedence, through one parser: dataclass defaults < recipe file (YAML or TOML, same keys as the
fields) < command-line flags. :func:`prmkit.cli.flags.add_config_arguments` derives the flags from the
fields (help included), :func:`resolve` merges the three sources. Validation only, no I/O: a config never reads a
file, touches the network or exits.

>>> cfg = resolve(TrainConfig, {"max_steps": 5}, {"lr": 0.01, "data": "d.jsonl", "out": "o"})
>>> cfg.max_steps, cfg.lr, cfg.batch_size
(5, 0.01, 16)
>>> TrainConfig(data="d", out="o", head="classify", classes=3, neutral="positive")
Traceback (most recent call last):
...
ValueError: neutral policy 'class' needs exactly 3 outputs, and 3 outputs need neutral policy 'class' (got 3 outputs, neutral='positive')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from prmkit.config import read_recipe, resolve  # noqa: F401  (the one parser; re-exported for the CLI)
from prmkit.evaluate.aggregate import AGGREGATIONS
from prmkit.model.labels import LABEL_SOURCES, NEUTRAL_POLICIES, SUPERVISION, check_policy
from prmkit.model.spec import HEADS

KINDS = ("prm", "orm", "lm")


def _f(default, help: str, **kw):
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


PRESET_CONTEXT = 4096
"""Positions of a preset base (``tiny-llama``...) built with ``max_length`` 0: room for PRM800K and
ProcessBench solutions, whose longest run to a few thousand tokens."""


@dataclass
class TrainConfig:
    """Everything one training run needs. ``prmkit train prm|orm --help`` lists the same fields as flags."""

    kind: str = _f("prm", "prm (a target per step), orm (one target at the final token), or lm (next-token "
                   "pretraining of a causal LM on the solutions' text, e.g. a base for reward models)",
                   choices=KINDS)
    data: str = _f("", "training data: prmkit JSONL (.gz ok); several files comma-separated (PRM800K phase 1 "
                   "and phase 2 together)")
    out: str = _f("", "output folder: the model, checkpoints/, metrics.jsonl", flag="--out-dir", was="--out",
                  metavar="DIR")
    base_model: str = _f("tiny-llama", "a preset built locally (tiny-llama, tiny-qwen2) or a transformers "
                         "model name or folder")
    eval_data: str | None = _f(None, "held-out data for evaluation during training; default: a seeded "
                               "--eval-fraction of the problems of --data")
    eval_fraction: float = _f(0.1, "share of --data's problems held out for evaluation when --eval-data is not given "
                              "(0: no evaluation)")
    split_seed: int | None = _f(None, "seed of the held-out split of --eval-fraction; unset: --seed")
    restarts: int = _f(1, "train this many runs from distinct seeds (seed, seed+1000, ...) and keep the best on the "
                       "held-out split (--select-metric); guards against a run that stalls at the class prior")
    select_metric: str = _f("auto", "what chooses among restarts and what early stopping watches: step_auroc "
                            "(against held-out labels) or eval_loss; auto: step_auroc for a PRM, eval_loss for an "
                            "ORM or LM", choices=("auto", "step_auroc", "eval_loss"))
    early_stop_patience: int = _f(0, "stop once this many evaluations in a row (every --eval-every steps) do not "
                                  "improve the held-out --select-metric, and keep the best evaluated weights "
                                  "(--max-steps is then a cap); 0: train all --max-steps")
    early_stop_min_delta: float = _f(0.0, "an evaluation improves only when it beats the best by more than this")
    early_stop_min_steps: int = _f(0, "never stop early before this step (a run may sit on a plateau before "
                                   "it learns)")
    features: str = _f("", "per-token inputs through a small adapter into the embeddings: surprise:FOLDER (a "
                       "causal LM's per-token log-probability and entropy; same tokenizer); '' for none")
    # head and labels
    head: str = _f("lm", "lm: the LM head read over label tokens (the paper's); classify: a new 2/3-class "
                   "layer; regress: one output, soft labels in [0, 1]", choices=HEADS)
    head_dropout: float = _f(0.0, "dropout before the classify/regress layer (transformers' classifier_dropout)")
    classes: int = _f(2, "outputs of the lm/classify head: 2 (positive, negative) or 3 (with neutral); "
                      "the regress head always has 1")
    label_tokens: list = _f(["+", "-", "="], "positive, negative, neutral label tokens of the lm head "  # noqa: RUF009
                            "(added to the tokenizer when not single tokens)")
    neutral: str = _f("positive", "training: rating 0 counts as positive, negative, or its own class "
                      "(needs --classes 3)", choices=NEUTRAL_POLICIES)
    score_neutral: str = _f("positive", "scoring a 3-class model: P(correct) counts neutral as positive or "
                            "negative", choices=("positive", "negative"))
    supervise: str = _f("first_error", "first_error: steps up to and including the first wrong one (the "
                        "paper's); all: every labelled step", choices=SUPERVISION)
    label_source: str = _f("rating", "rating: hard labels -1/0/+1; value: soft Monte-Carlo values in [0,1] "
                           "(falling back to the rating where a step has none)", choices=LABEL_SOURCES)
    value_threshold: float | None = _f(None, "with --label-source value: train on hard labels, a step correct when "
                                       "its value is above this (0: Math-Shepherd's any rollout right); unset: "
                                       "the soft values themselves")
    outcome_source: str = _f("auto", "orm target: auto (the file's outcome, else its grade), grade, or outcome",
                             choices=("auto", "grade", "outcome"))
    grade: bool = _f(False, "orm: grade solutions that have no grade (and no outcome label) against their "
                     "problem.answer first (prmkit.grade, strict), as `prmkit grade DATA GRADED` would")
    ungradable: str = _f("skip", "orm: a solution the grader could not decide (grade unparseable: a timeout, an "
                         "unreadable answer): skip it (counted in the data report) or make it a negative",
                         choices=("skip", "negative"))
    # formatting (saved with the model; scoring uses the same)
    separator: str = _f("\n", "text after every step")
    marker: str = _f("<step>", "token ending every step (added when new; '' for none: the step's last token)")
    problem_suffix: str = _f("\n", "text between the problem and the first step")
    chat_template: bool = _f(False, "format the problem as a user turn with the tokenizer's chat template")
    max_length: int = _f(0, "most tokens per solution; steps beyond are dropped and reported. 0: the model's "
                         f"own limit (max_position_embeddings; a preset base is built with {PRESET_CONTEXT})")
    max_steps_lost: float = _f(0.01, "refuse to train when truncation would drop more than this share of the "
                               "training steps (the error names the max length that fits)")
    allow_truncation: bool = _f(False, "train even when truncation drops more than --max-steps-lost of the steps")
    allow_one_class: bool = _f(False, "train a PRM even when its targets hold one class only (it can learn the "
                               "base rate only)")
    alternatives: bool = _f(True, "PRM: a rated alternative of a step (PRM800K phase 1 rates several "
                            "candidate next steps) is an example of its own: the chosen steps before it, then "
                            "it, supervised there")
    vocab_size: int = _f(512, "tokenizer size for a preset base (trained on the training texts)")
    # optimisation
    max_steps: int = _f(200, "optimiser steps")
    batch_size: int = _f(16, "examples per micro-batch on each process")
    grad_accum: int = _f(1, "micro-batches accumulated per optimiser step (per process)")
    lr: float = _f(3e-3, "peak learning rate (the default suits the tiny presets; use ~1e-5 for real models, "
                   "~1e-4 with LoRA)")
    new_lr: float | None = _f(None, "peak learning rate of the parameters that start from nothing (feature "
                              "adapter, a classification layer the base did not have); unset: --lr")
    adam_beta2: float = _f(0.999, "AdamW's second-moment decay (0.98 suits short runs at high learning rates)")
    weight_decay: float = _f(0.0, "AdamW weight decay")
    warmup_steps: int = _f(10, "linear warm-up steps")
    scheduler: str = _f("linear", "learning-rate schedule after warm-up", choices=("linear", "cosine", "constant"))
    max_grad_norm: float = _f(1.0, "gradient clipping norm (0: off)")
    packing: str = _f("auto", "lay each micro-batch's solutions end to end with no padding (same results, "
                      "less compute); auto: when the model allows it (causal decoders on transformers' "
                      "attention interface)", choices=("auto", "on", "off"))
    group_by_length: bool | None = _f(None, "batch examples of similar length together, which cuts padding "
                                      "but makes batches less random; unset: only when batches are padded")
    seed: int = _f(0, "seed of the model init, data split and batch order")
    device: str = _f("auto", "auto: CUDA when visible, else CPU; or cpu, cuda", choices=("auto", "cpu", "cuda"))
    mixed_precision: str = _f("auto", "auto: bf16 on CUDA, none on CPU; or no, bf16, fp16",
                              choices=("auto", "no", "bf16", "fp16"))
    cpu_threads: int = _f(1, "torch threads per process on CPU (1 avoids contention on shared cores; 0: torch's choice)")
    # LoRA
    lora: bool = _f(False, "train LoRA adapters (peft) instead of all weights; merged into the saved model")
    lora_r: int = _f(8, "LoRA rank")
    lora_alpha: int = _f(16, "LoRA alpha")
    lora_dropout: float = _f(0.0, "LoRA dropout")
    lora_targets: str = _f("all-linear", "modules LoRA adapts (peft's target_modules; comma list or all-linear)")
    # evaluation, logging, checkpoints
    eval_every: int = _f(50, "evaluate every N optimiser steps and at the end (0: only at the end)")
    eval_batch_size: int = _f(32, "examples per evaluation batch")
    log_every: int = _f(10, "write training loss every N steps to metrics.jsonl")
    save_every: int = _f(100, "checkpoint every N steps (0: only the final model)")
    keep_checkpoints: int = _f(2, "checkpoints kept (oldest removed)")
    resume: bool = _f(True, "resume from the latest checkpoint in --out-dir when there is one")
    stop_after: int | None = _f(None, "stop after this many steps without finishing, as a killed job would "
                                "(for time-sliced jobs and resume tests)")
    tensorboard: bool = _f(True, "also log to TensorBoard when it is installed")
    progress: bool = _f(True, "show a progress bar")
    aggregations: list = _f(list(AGGREGATIONS), "solution scores `prmkit score` writes by default with the "  # noqa: RUF009
                            "saved model")
    default_aggregation: str = _f("min", "the solution score a single-number consumer should use",
                                  choices=AGGREGATIONS)

    def __post_init__(self):
        if self.head == "regress":
            self.classes = 1
        check_policy(self.classes, self.neutral, self.label_source)
        if self.value_threshold is not None and (self.label_source != "value" or not 0 <= self.value_threshold < 1):
            raise ValueError("--value-threshold needs --label-source value and lies in [0, 1), got "
                             f"{self.value_threshold} with label source {self.label_source!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.features and self.kind == "lm":
            raise ValueError("features feed a reward model; an lm run (next-token pretraining) takes none")
        for name in ("max_steps", "batch_size", "grad_accum", "eval_batch_size", "restarts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.early_stop_patience > 0 and not self.eval_every:
            raise ValueError("early stopping evaluates every --eval-every steps: set eval_every > 0")
        if self.early_stop_patience > 0 and not self.eval_data and self.eval_fraction <= 0:
            raise ValueError("early stopping needs held-out labelled data: set eval_data or eval_fraction > 0")
        if self.max_length < 0 or (0 < self.max_length < 2) or not 0 <= self.max_steps_lost <= 1:
            raise ValueError("max_length must be 0 (auto) or at least 2, max_steps_lost in [0, 1]")
        if not 0 <= self.eval_fraction < 1:
            raise ValueError(f"eval_fraction {self.eval_fraction} must be in [0, 1)")
        bad = [a for a in self.aggregations if a not in AGGREGATIONS]
        if bad:
            raise ValueError(f"unknown aggregations {bad} (expected some of {', '.join(AGGREGATIONS)})")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
