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
    beta: float = field(default=0.04, metadata={"help": "weight of the KL penalty to the initial policy", "flag": "--kl"})
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

    def __call__(self, prompts: list[str], trainer) -> dict:
        ids = [prompt_ids(self.tokenizer, self.fmt, p) for p in prompts]
        # seeded by the optimiser step (one rollout a step): a run resumed from a checkpoint samples what the
        # uninterrupted run sampled
        step = trainer.state.global_step
        rows = sample_rows(trainer.model, self.tokenizer, self.fmt, ids,
                           seeds=[rollout_seed(self.cfg.seed, step, p, j) for j, p in enumerate(prompts)],
                           sampling=self.sampling)
        texts = [self.detokenize(t) for _, t in rows]
        # a completion that ended before its first token is the end token alone (TRL reads each one's last id)
        end = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else self.tokenizer.pad_token_id
        return {"prompt_ids": ids, "completion_ids": [c or [end] for c, _ in rows], "logprobs": None,
                "steps": [completion_steps(t, self.fmt) for t in texts], "text": texts}


def prompt_ids(tokenizer, fmt, problem: str) -> list[int]:
    """A problem laid out as a prompt by the one formatter (no steps yet)."""
    from prmkit.model.formatter import encode

    return encode(tokenizer, problem, [], fmt).input_ids


def rollout_seed(seed: int, step: int, prompt: str, j: int) -> int:
    """The seed of row ``j`` (its place in the batch TRL hands over) of the rollout at optimiser step ``step``,
    with its prompt: fixed by the run's seed and TRL's own (seeded) batch order, so a run repeats."""
    from prmkit.generate.backend import sample_seed

    return sample_seed(seed, f"rl-{step}", [prompt], j)


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


def eval_callback(hook, every: int, last: int, done: set[int] = frozenset()):
    """A ``transformers.TrainerCallback`` calling ``hook(step, model)`` before the first optimiser step, every
    ``every`` steps and after the last (step ``last``), except at the steps in ``done`` (measured before a
    resume); what the hook returns is kept in ``.records``."""
    import transformers

    class _Callback(transformers.TrainerCallback):
        def __init__(self):
            self.records, self.done = [], set(done)

        def _at(self, step, model):
            if step not in self.done:
                self.done.add(step)
                self.records.append(hook(step, model))

        def on_train_begin(self, args, state, control, model=None, **kw):
            if state.global_step == 0:  # a resumed run measured its checkpoint's step before it was saved
                self._at(0, model)

        def on_step_end(self, args, state, control, model=None, **kw):
            if (every and state.global_step % every == 0) or state.global_step == last:
                self._at(state.global_step, model)

    return _Callback()


def progress_callback(steps: int):
    """A ``transformers.TrainerCallback`` showing a progress bar over the optimiser steps, with the reward."""
    import transformers
    from tqdm.auto import tqdm

    class _Progress(transformers.TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            self.bar = tqdm(total=steps, initial=state.global_step, desc="rl steps", unit="step")

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                self.bar.set_postfix(reward=f"{logs['reward']:.3f}", kl=f"{logs.get('kl', 0.0):.3f}")

        def on_step_end(self, args, state, control, **kw):
            self.bar.update(state.global_step - self.bar.n)

        def on_train_end(self, args, state, control, **kw):
            self.bar.close()

    return _Progress()


def grpo_args(cfg: RLConfig, out_dir: str, cpu: bool = True, save_every: int = 0):
    """TRL's ``GRPOConfig`` for ``cfg``: no reports, one prompt batch per optimiser step; a checkpoint every
    ``save_every`` steps and at the end (none with 0)."""
    from trl import GRPOConfig

    return GRPOConfig(output_dir=out_dir, use_cpu=cpu, bf16=False, beta=cfg.beta, num_generations=cfg.group,
                      per_device_train_batch_size=cfg.batch, gradient_accumulation_steps=1,
                      max_completion_length=cfg.max_new_tokens, temperature=cfg.temperature,
                      learning_rate=cfg.lr, lr_scheduler_type="constant_with_warmup", warmup_steps=cfg.warmup_steps,
                      max_steps=cfg.steps, loss_type=cfg.loss_type, logging_steps=1, report_to="none",
                      save_strategy="steps" if save_every else "no", save_steps=save_every or 500,
                      seed=cfg.seed, data_seed=cfg.seed, disable_tqdm=True, dataloader_num_workers=0)


def train_grpo(model, tokenizer, fmt, problems: list[dict], rewards: list, cfg: RLConfig, out_dir: str,
               hook=None, detokenize: Callable[[str], str] = lambda t: t, cpu: bool = True, save_every: int = 0,
               resume: str | None = None, done_steps: set[int] = frozenset(), progress: bool = False):
    """Train ``model`` in place on ``problems`` (dicts with ``problem`` and any other reward columns, e.g.
    ``answer``) against ``rewards`` (TRL reward functions, e.g. :class:`~prmkit.rl.reward.PRMReward`), from
    the checkpoint ``resume`` when given (checkpoints every ``save_every`` steps; ``done_steps``: steps the
    hook measured before). Returns (TRL's log history, the hook's records)."""
    import os
    import warnings

    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental by TRL
    rows = [{"prompt": p["problem"], **p} for p in problems]
    callback = eval_callback(hook, cfg.eval_every, cfg.steps, done_steps) if hook else None
    callbacks = [c for c in (callback, progress_callback(cfg.steps) if progress else None) if c]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=grpo_args(cfg, out_dir, cpu, save_every),
                              train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                              rollout_func=Rollout(tokenizer, fmt, cfg, detokenize), callbacks=callbacks or None)
        trainer.remove_callback(PrinterCallback)  # its per-step dict on stdout; the log history keeps every step
        trainer.train(resume_from_checkpoint=resume)
    return trainer.state.log_history, (callback.records if callback else [])


__all__ = [
    "RLConfig",
    "Rollout",
    "completion_steps",
    "eval_callback",
    "grpo_args",
    "progress_callback",
    "prompt_ids",
    "rollout_seed",
    "sample_rows",
    "sequence_logprobs",
    "train_grpo",
]
