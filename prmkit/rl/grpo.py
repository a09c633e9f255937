"""A causal LM trained against prmkit rewards by group-relative policy optimisation, through TRL's
``GRPOTrainer`` (a well-kept trainer: its loss, advantage normalisation and KL penalty are TRL's, not ours).

What prmkit adds around it:

- **Rollouts by prmkit's own sampler** (:class:`Rollout`, TRL's ``rollout_func``): prompts are laid out by
  the one formatter and sampled by :class:`prmkit.generate.hf.Sampler`, which ends a solution after its
  closing ``# Answer`` step, as ``prmkit generate`` does. (TRL's own generation stops only at EOS, which
  a base that never learnt to stop, like the lab's, does not emit.) Each completion's steps travel with it to
  the reward (the ``steps`` column of :class:`prmkit.rl.reward.PRMReward`), so the reward model reads the
  very steps the policy wrote. Sample ``j`` of step ``t`` has its own seed: a run is repeatable.
- **A KL penalty to the initial policy** (``beta``, TRL's per-token estimator) and a sequence-level
  estimate of KL(policy || initial) on held-out samples (:func:`sequence_logprobs`), the x axis of
  over-optimisation curves (Gao, Schulman and Hilton, 2022).
- **An evaluation hook** called before the first step and every ``eval_every`` steps with the live model
  (:func:`eval_callback`): the lab passes one that measures gold, proxy, KL and the hacking detectors.

>>> RLConfig().group, RLConfig(steps=3).steps
(8, 3)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class RLConfig:
    """One GRPO run. Inert; defaults are a few minutes on a CPU for the lab's tiny policy."""

    steps: int = field(default=60, metadata={"help": "optimiser steps"})
    prompts_per_step: int = field(default=8, metadata={"help": "prompts per optimiser step"})
    group: int = field(default=8, metadata={"help": "samples per prompt (GRPO's group; advantages are relative "
                                                    "to the group's mean)"})
    beta: float = field(default=0.04, metadata={"help": "weight of the KL penalty to the initial policy"})
    lr: float = field(default=1e-4, metadata={"help": "learning rate (AdamW, constant after warm-up)"})
    warmup_steps: int = field(default=5, metadata={"help": "linear warm-up steps"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of rollouts"})
    max_new_tokens: int = field(default=160, metadata={"help": "most tokens per completion"})
    loss_type: str = field(default="grpo", metadata={"help": "TRL's loss_type (grpo, dapo, dr_grpo, ...)"})
    eval_every: int = field(default=10, metadata={
        "help": "optimiser steps between evaluations (0: only before the first step and after the last)"})
    seed: int = field(default=0, metadata={"help": "seed of the trainer and of every rollout"})

    def __post_init__(self):
        if min(self.steps, self.prompts_per_step, self.group, self.max_new_tokens) < 1:
            raise ValueError("rl steps, prompts_per_step, group and max_new_tokens must be at least 1")
        if self.group < 2:
            raise ValueError("rl.group must be at least 2: GRPO's advantage is relative to the group")
        if self.beta < 0 or self.lr <= 0 or self.temperature <= 0:
            raise ValueError("rl.beta must be >= 0, rl.lr and rl.temperature positive")
        if self.eval_every < 0 or self.warmup_steps < 0:
            raise ValueError("rl.eval_every and rl.warmup_steps must be 0 or positive")

    @property
    def batch(self) -> int:
        """Completions per optimiser step."""
        return self.prompts_per_step * self.group


class Rollout:
    """TRL's ``rollout_func``: ``(prompts, trainer) -> {prompt_ids, completion_ids, logprobs, steps, text}``.

    ``prompts`` are problem texts (one per completion: TRL repeats each ``group`` times); the trainer's
    live model samples them through :class:`~prmkit.generate.hf.Sampler`. ``detokenize`` maps the
    decoded text to the format's spelling (the lab's :func:`~prmkit.lab.backend.lab_text`)."""

    def __init__(self, tokenizer, fmt, cfg: RLConfig, detokenize: Callable[[str], str] = lambda t: t):
        from prmkit.generate.hf import Sampling

        self.tokenizer, self.fmt, self.cfg, self.detokenize = tokenizer, fmt, cfg, detokenize
        self.sampling = Sampling(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)
        self.calls = 0

    def prompt_ids(self, problem: str) -> list[int]:
        from prmkit.model.formatter import encode

        return encode(self.tokenizer, problem, [], self.fmt).input_ids

    def __call__(self, prompts: list[str], trainer) -> dict:
        ids = [self.prompt_ids(p) for p in prompts]
        rows = sample_rows(trainer.model, self.tokenizer, self.fmt, ids,
                           seeds=[rollout_seed(self.cfg.seed, self.calls, p, j) for j, p in enumerate(prompts)],
                           sampling=self.sampling)
        self.calls += 1
        texts = [self.detokenize(t) for _, t in rows]
        return {"prompt_ids": ids, "completion_ids": [c for c, _ in rows], "logprobs": None,
                "steps": [completion_steps(t, self.fmt) for t in texts], "text": texts}


def rollout_seed(seed: int, call: int, prompt: str, j: int) -> int:
    """The seed of row ``j`` (its place in the batch TRL hands over) of rollout call ``call``, with its prompt:
    fixed by the run's seed and TRL's own (seeded) batch order, so a run repeats."""
    from prmkit.generate.backend import sample_seed

    return sample_seed(seed, f"rl-{call}", [prompt], j)


def sample_rows(model, tokenizer, fmt, prompt_ids: list[list[int]], seeds: list[int], sampling) -> list[tuple]:
    """(completion ids through the closing answer step, decoded text) per prompt, sampled by the live
    ``model`` in eval mode (then put back in the mode it was in)."""
    from prmkit.generate.hf import Sampler

    device = next(model.parameters()).device
    sampler = Sampler(model, tokenizer, str(device), end=fmt.marker or fmt.separator or "\n")
    was_training = model.training
    model.eval()
    try:
        rows = sampler.sample(prompt_ids, seeds, sampling)
    finally:
        model.train(was_training)
    return [(ids, sampler.decode(ids)) for ids, _ in rows]


def completion_steps(text: str, fmt) -> list[str]:
    """A completion's steps as the formatter lays them out (marker, else separator lines)."""
    from prmkit.steps import split_steps

    return split_steps(text, "marker" if fmt.marker else "newline", marker=fmt.marker)


def sequence_logprobs(model, prompt_ids: list[list[int]], completion_ids: list[list[int]],
                      batch_size: int = 64) -> np.ndarray:
    """Per row, the summed log-probability ``model`` gives the completion after its prompt (no grad).
    KL(policy || reference) on the policy's own samples is the mean of the two models' difference."""
    import torch

    device = next(model.parameters()).device
    out = []
    for s in range(0, len(prompt_ids), batch_size):
        rows = [p + c for p, c in zip(prompt_ids[s:s + batch_size], completion_ids[s:s + batch_size])]
        width = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)], mask[i, :len(r)] = torch.tensor(r), 1
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float(), -1)
        token = logp[:, :-1].gather(-1, ids[:, 1:].to(device).unsqueeze(-1)).squeeze(-1).cpu()
        for i, (p, c) in enumerate(zip(prompt_ids[s:s + batch_size], completion_ids[s:s + batch_size])):
            out.append(float(token[i, len(p) - 1:len(p) - 1 + len(c)].sum()))
    return np.asarray(out)


def eval_callback(hook, every: int, last: int):
    """A ``transformers.TrainerCallback`` calling ``hook(step, model)`` before the first optimiser step, every
    ``every`` steps and after the last (step ``last``); what the hook returns is kept in ``.records``."""
    import transformers

    class _Callback(transformers.TrainerCallback):
        def __init__(self):
            self.records, self.done = [], set()

        def _at(self, step, model):
            if step not in self.done:
                self.done.add(step)
                self.records.append(hook(step, model))

        def on_train_begin(self, args, state, control, model=None, **kw):
            self._at(0, model)

        def on_step_end(self, args, state, control, model=None, **kw):
            if (every and state.global_step % every == 0) or state.global_step == last:
                self._at(state.global_step, model)

    return _Callback()


def grpo_args(cfg: RLConfig, out_dir: str, cpu: bool = True):
    """TRL's ``GRPOConfig`` for ``cfg``: no checkpoints, no reports, one prompt batch per optimiser step."""
    from trl import GRPOConfig

    return GRPOConfig(output_dir=out_dir, use_cpu=cpu, bf16=False, beta=cfg.beta, num_generations=cfg.group,
                      per_device_train_batch_size=cfg.batch, gradient_accumulation_steps=1,
                      max_completion_length=cfg.max_new_tokens, temperature=cfg.temperature,
                      learning_rate=cfg.lr, lr_scheduler_type="constant_with_warmup", warmup_steps=cfg.warmup_steps,
                      max_steps=cfg.steps, loss_type=cfg.loss_type, logging_steps=1, report_to="none",
                      save_strategy="no", seed=cfg.seed, data_seed=cfg.seed, disable_tqdm=True,
                      dataloader_num_workers=0)


def train_grpo(model, tokenizer, fmt, problems: list[dict], rewards: list, cfg: RLConfig, out_dir: str,
               hook=None, detokenize: Callable[[str], str] = lambda t: t, cpu: bool = True):
    """Train ``model`` in place on ``problems`` (dicts with ``problem`` and any other reward columns, e.g.
    ``answer``) against ``rewards`` (TRL reward functions, e.g. :class:`~prmkit.rl.reward.PRMReward`).
    Returns (TRL's log history, the hook's records)."""
    import os
    import warnings

    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental by TRL
    rows = [{"prompt": p["problem"], **p} for p in problems]
    callback = eval_callback(hook, cfg.eval_every, cfg.steps) if hook else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=grpo_args(cfg, out_dir, cpu),
                              train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                              rollout_func=Rollout(tokenizer, fmt, cfg, detokenize),
                              callbacks=[callback] if callback else None)
        trainer.remove_callback(PrinterCallback)  # its per-step dict on stdout; the log history keeps every step
        trainer.train()
    return trainer.state.log_history, (callback.records if callback else [])


__all__ = [
    "RLConfig",
    "Rollout",
    "completion_steps",
    "eval_callback",
    "grpo_args",
    "rollout_seed",
    "sample_rows",
    "sequence_logprobs",
    "train_grpo",
]
