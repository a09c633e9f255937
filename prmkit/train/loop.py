"""The training loop: one code path for CPU, one GPU and many GPUs (accelerate: DDP, FSDP, DeepSpeed).

:func:`train` reads the data, builds the model (a preset or any transformers model, optionally with
LoRA), and runs ``max_steps`` optimiser steps. accelerate picks the device and the distributed backend
from the environment ``accelerate launch`` (or ``torchrun``) sets up; bf16 autocast is on by default on
CUDA. Checkpoints (``OUT/checkpoints/step-N``) hold the model, optimiser, scheduler and every
process's RNG state, so a killed run resumed from its last checkpoint continues exactly as the
uninterrupted run would have. The final model is saved as a plain transformers folder
(:mod:`prmkit.model.hub`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from prmkit.device import uses_cuda
from prmkit.io import NoRecords, read_solutions
from prmkit.model import packing
from prmkit.model.formatter import FormatConfig
from prmkit.model.heads import (
    HeadSpec,
    NextTokenModel,
    RewardModel,
    next_token_loss,
    probabilities,
    soft_cross_entropy,
)
from prmkit.model.hub import ModelCard, attach_tokens, load_base, save_model
from prmkit.model.labels import p_correct
from prmkit.model.tiny import is_preset
from prmkit.train.checkpoints import best_dir, resume, save_checkpoint
from prmkit.train.checks import check_max_length, check_training_data, ensure_graded, model_limit
from prmkit.train.config import PRESET_CONTEXT, TrainConfig
from prmkit.train.data import (
    build_examples,
    build_lm_examples,
    collate,
    micro_batches,
    model_inputs,
    plan_epoch,
    split_by_problem,
    to_device,
)
from prmkit.train.early_stop import early_stop_for
from prmkit.train.metrics import MetricsLogger, NullLogger, step_metrics
from prmkit.train.plateau import PLATEAU_LOGS, logged_losses, plateau_check


@dataclass
class Run:
    """Everything the loop works on, built once by :func:`setup`."""

    cfg: TrainConfig
    accelerator: object
    model: torch.nn.Module
    tokenizer: object
    head: HeadSpec
    fmt: FormatConfig
    train: list
    eval: list
    packed: bool = False
    features: object = None  # the FeatureSpec of the model's per-token inputs, or None
    stopper: object = None  # the run's EarlyStop, or None
    optimizer: object = None
    scheduler: object = None


def format_config(cfg: TrainConfig, limit: int | None = None) -> FormatConfig:
    """The formatter of ``cfg``; ``max_length`` 0 resolves to ``limit``, the model's own (or a preset's)."""
    length = cfg.max_length or limit or PRESET_CONTEXT
    return FormatConfig(separator=cfg.separator, marker=cfg.marker or None, problem_suffix=cfg.problem_suffix,
                        chat_template=cfg.chat_template, max_length=length)


def make_accelerator(cfg: TrainConfig):
    from accelerate import Accelerator

    cuda = uses_cuda(cfg.device)
    precision = cfg.mixed_precision
    if precision == "auto":
        precision = "bf16" if cuda else "no"
    # cpu=True when there is no GPU: that is also what lets accelerate see a torchrun / accelerate-launch
    # world of several CPU processes (gloo DDP) instead of one process each.
    return Accelerator(mixed_precision=precision, cpu=not cuda)


def _texts(solutions) -> list[str]:
    return [t for s in solutions for t in [s.problem.problem, *s.texts]]


def preset_positions(cfg: TrainConfig) -> int | None:
    """The positions a preset base is built with: room for ``max_length`` (0: :data:`PRESET_CONTEXT`) when
    that is more than the preset's own; None otherwise (and for a real model)."""
    from prmkit.model.tiny import PRESETS

    if cfg.base_model not in PRESETS:
        return None
    want = cfg.max_length or PRESET_CONTEXT
    return want if want > PRESETS[cfg.base_model]["max_position_embeddings"] else None


def build_model(cfg: TrainConfig, texts: list[str]):
    """(model, tokenizer, head, format, packed) for the config: tokens attached, packed attention
    switched on when batches are to be packed, LoRA applied when asked, a feature adapter when
    ``cfg.features`` names a source. The model is a :class:`RewardModel`, or for ``kind="lm"`` a
    :class:`NextTokenModel` (its head spec is the lm head's, unused)."""
    head = HeadSpec("lm" if cfg.kind == "lm" else cfg.head, cfg.classes, list(cfg.label_tokens))
    backbone, tokenizer = load_base(cfg.base_model, head, texts, cfg.vocab_size, cfg.seed, cfg.head_dropout,
                                    preset_positions=preset_positions(cfg))
    check_max_length(cfg, model_limit(backbone), is_preset(cfg.base_model))
    fmt = format_config(cfg, model_limit(backbone))
    head = attach_tokens(backbone, tokenizer, head, fmt)
    packed = packing.choose(cfg.packing, backbone)
    new = list(getattr(backbone, "prmkit_new_parameters", ()))
    if cfg.lora:
        backbone = _apply_lora(backbone, cfg, head)
    if cfg.kind == "lm":
        return NextTokenModel(backbone), tokenizer, head, fmt, packed
    adapter = None
    if cfg.features:
        from prmkit.model.features import FeatureAdapter, parse_features

        spec = parse_features(cfg.features)
        torch.manual_seed(cfg.seed)
        adapter = FeatureAdapter(spec.n_inputs, spec.hidden, backbone.config.hidden_size)
    model = RewardModel(backbone, head, adapter)
    model.prmkit_new_parameters = ["adapter." + n for n, _ in (adapter.named_parameters() if adapter else ())] + [
        "backbone." + n for n in new]
    return model, tokenizer, head, fmt, packed


def _apply_lora(backbone, cfg: TrainConfig, head: HeadSpec):
    from peft import LoraConfig, get_peft_model

    targets = cfg.lora_targets if cfg.lora_targets == "all-linear" else cfg.lora_targets.split(",")
    task = "CAUSAL_LM" if head.kind == "lm" else "TOKEN_CLS"  # TOKEN_CLS keeps the new score layer trainable
    return get_peft_model(backbone, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                               target_modules=targets, task_type=task))


def read_all(paths: str) -> list:
    """The solutions of one file or of several, comma-separated; a file with none is an error (said as such,
    not later as a lack of examples or of classes)."""
    solutions = []
    for path in paths.split(","):
        records = list(read_solutions(path.strip()))
        if not records:
            raise NoRecords(path.strip())
        solutions += records
    return solutions


def setup(cfg: TrainConfig, accelerator) -> Run:
    """Read and split the data, build the model and the examples (reports printed on the main process)."""
    solutions = read_all(cfg.data)
    graded = ensure_graded(cfg, solutions, cfg.data)
    if cfg.eval_data:
        eval_sols = read_all(cfg.eval_data)
        graded += ensure_graded(cfg, eval_sols, cfg.eval_data)
        train_sols = solutions
    else:
        split_seed = cfg.seed if cfg.split_seed is None else cfg.split_seed
        train_sols, eval_sols = split_by_problem(solutions, cfg.eval_fraction, split_seed)
    model, tokenizer, head, fmt, packed = build_model(cfg, _texts(train_sols))
    if cfg.kind == "lm":
        train, report = build_lm_examples(train_sols, tokenizer, fmt)
        held, eval_report = build_lm_examples(eval_sols, tokenizer, fmt)
    else:
        kw = {"kind": cfg.kind, "n_outputs": cfg.classes, "neutral": cfg.neutral, "supervise": cfg.supervise,
              "label_source": cfg.label_source, "outcome_source": cfg.outcome_source, "alternatives": cfg.alternatives,
              "value_threshold": cfg.value_threshold, "ungradable": cfg.ungradable}
        train, report = build_examples(train_sols, tokenizer, fmt, **kw)
        held, eval_report = build_examples(eval_sols, tokenizer, fmt, **kw)
    if graded:
        accelerator.print(f"graded {graded} solutions against problem.answer (--grade)")
    accelerator.print(f"train: {report.summary()}")
    accelerator.print(f"eval: {eval_report.summary()}")
    features = attach_features(cfg, tokenizer, [*train, *held], accelerator.device)  # refuses a wrong source first
    check_training_data(cfg, report, train_sols, tokenizer, fmt, model_limit(model.backbone), is_preset(cfg.base_model))
    accelerator.print(f"batches: {'packed (no padding)' if packed else 'padded'}")
    group = cfg.batch_size * cfg.grad_accum * accelerator.num_processes
    if len(train) < group:
        raise ValueError(f"{len(train)} training examples, fewer than one optimiser step's {group} "
                         "(batch_size x grad_accum x processes)")
    return Run(cfg, accelerator, model, tokenizer, head, fmt, train, held, packed, features)


def attach_features(cfg: TrainConfig, tokenizer, examples: list, device):
    """Compute every example's per-token features once (the source never changes in training); the spec."""
    if not cfg.features:
        return None
    from prmkit.model.features import make_source, parse_features

    spec = parse_features(cfg.features)
    if _shared_sources is not None:
        key = spec.model
        if key not in _shared_sources:
            _shared_sources[key] = make_source(spec, device, keep=True)
        source = _shared_sources[key]
    else:
        source = make_source(spec, device)
    source.check_tokenizer(tokenizer)
    for ex, values in zip(examples, source([e.input_ids for e in examples])):
        ex.features = values
    return spec


def param_groups(run: Run) -> list[dict]:
    """AdamW groups: the parameters that start from nothing at ``new_lr`` (when set), the rest at ``lr``."""
    cfg = run.cfg
    new = set(getattr(run.model, "prmkit_new_parameters", ()))
    named = [(unwrapped_name(n), p) for n, p in run.model.named_parameters() if p.requires_grad]
    if cfg.new_lr is None or not new:
        return [{"params": [p for _, p in named], "lr": cfg.lr}]
    return [{"params": [p for n, p in named if n not in new], "lr": cfg.lr},
            {"params": [p for n, p in named if n in new], "lr": cfg.new_lr}]


def unwrapped_name(name: str) -> str:
    """A parameter's name without peft's wrapping (``base_model.model.``, ``modules_to_save.default.``), so a
    LoRA run finds its new layers under the names they were loaded with.

    >>> unwrapped_name("backbone.base_model.model.score.modules_to_save.default.weight")
    'backbone.score.weight'
    """
    return name.replace("base_model.model.", "").replace("modules_to_save.default.", "")


def _scheduler(cfg: TrainConfig, optimizer):
    from transformers import get_scheduler

    return get_scheduler(cfg.scheduler, optimizer, num_warmup_steps=cfg.warmup_steps, num_training_steps=cfg.max_steps)


def train(cfg: TrainConfig) -> dict:
    """Train (or resume) a model as configured (``restarts`` runs, the best kept:
    :mod:`prmkit.train.restarts`); return the final metrics."""
    if cfg.restarts > 1:
        from prmkit.train.restarts import train_with_restarts

        global _shared_sources
        _shared_sources = {}  # the restarts share feature sources: their examples are the same
        try:
            return train_with_restarts(cfg, train_once)
        finally:
            _shared_sources = None
    return train_once(cfg)


_shared_sources: dict | None = None
"""Feature sources kept between the restarts of one :func:`train` call (by source), so each example's
features are computed once, not once per restart; or those :func:`features_from` loaded; None otherwise."""


def save_features_of(cfg: TrainConfig, path: str | os.PathLike) -> int:
    """Compute the per-token features a run of ``cfg`` reads (its training and held-out examples, as
    :func:`setup` reads them) and save them to ``path`` (:meth:`~prmkit.model.features.SurpriseSource.save`), so
    that runs in other processes read them with :func:`features_from` instead of computing them again (restarts
    trained in parallel). Returns how many solutions' features were saved."""
    global _shared_sources
    if not cfg.features:
        raise ValueError("this config reads no per-token features (features is empty): nothing to save")
    _shared_sources = {}
    try:
        setup(cfg, make_accelerator(cfg))
        (source,) = _shared_sources.values()
        return source.save(path)
    finally:
        _shared_sources = None


@contextlib.contextmanager
def features_from(cfg: TrainConfig, path: str | os.PathLike, device="cpu"):
    """Within the block, runs of ``cfg`` read the features :func:`save_features_of` saved to ``path`` (the same
    numbers they would compute; a file made from another source model is refused) rather than computing them."""
    global _shared_sources
    from prmkit.model.features import make_source, parse_features

    spec = parse_features(cfg.features)
    source = make_source(spec, device, keep=True)
    source.load(path)
    _shared_sources = {spec.model: source}
    try:
        yield source
    finally:
        _shared_sources = None


def train_once(cfg: TrainConfig) -> dict:
    """One run: train (or resume) as configured; return the final metrics."""
    if cfg.cpu_threads and not uses_cuda(cfg.device):
        torch.set_num_threads(cfg.cpu_threads)
    from accelerate.utils import set_seed

    accelerator = make_accelerator(cfg)
    set_seed(cfg.seed)
    run = setup(cfg, accelerator)
    run.optimizer = torch.optim.AdamW(param_groups(run), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                      betas=(0.9, cfg.adam_beta2))
    run.scheduler = _scheduler(cfg, run.optimizer)
    run.model, run.optimizer = accelerator.prepare(run.model, run.optimizer)
    accelerator.register_for_checkpointing(run.scheduler)
    run.stopper = early_stop_for(cfg)
    start = resume(run)
    logger = MetricsLogger(cfg.out, cfg.tensorboard, start) if accelerator.is_main_process else NullLogger()
    try:
        final = _loop(run, start, logger)
    finally:
        logger.close()
    return final


def _loop(run: Run, start: int, logger) -> dict:
    cfg, acc = run.cfg, run.accelerator
    from tqdm.auto import tqdm

    lengths = [len(e.input_ids) for e in run.train]
    group_size = cfg.batch_size * cfg.grad_accum * acc.num_processes
    per_epoch = len(run.train) // group_size
    # packed batches have no padding to save, so by default they keep fully random batches
    by_length = cfg.group_by_length if cfg.group_by_length is not None else not run.packed
    bar = tqdm(total=cfg.max_steps, initial=start, disable=not (cfg.progress and acc.is_main_process), desc="train")
    step = start
    epoch_groups: dict[int, list[list[int]]] = {}  # the epoch's groups, made once: reshuffling every step was waste
    for step in range(start + 1, cfg.max_steps + 1):
        epoch, k = divmod(step - 1, per_epoch)
        if epoch not in epoch_groups:
            epoch_groups = {epoch: plan_epoch(lengths, group_size, cfg.seed, epoch, by_length)}
        group = epoch_groups[epoch][k]
        loss = _optimizer_step(run, group, lengths)
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.4f}")
        if step % cfg.log_every == 0 or step == cfg.max_steps:
            logger.log(step, {"loss": loss, "lr": run.scheduler.get_last_lr()[0], "epoch": epoch})
        if cfg.eval_every and step % cfg.eval_every == 0 and step < cfg.max_steps:
            logger.log(step, _evaluate_and_watch(run, step))
            if run.stopper is not None and run.stopper.stop:
                acc.print(f"early stop at step {step}: {run.stopper.metric} has not improved for "
                          f"{run.stopper.patience} evaluations; keeping step {run.stopper.best_step} "
                          f"({run.stopper.metric} {run.stopper.best:.4f})")
                break
        if (cfg.save_every and step % cfg.save_every == 0) or step == cfg.stop_after:
            save_checkpoint(run, step)
        if cfg.stop_after is not None and step >= cfg.stop_after and step < cfg.max_steps:
            acc.print(f"stopped after step {step} as asked (--stop-after); resume with the same command")
            bar.close()
            return {"stopped_at": step}
    bar.close()
    metrics = _evaluate_and_watch(run, step) if step == cfg.max_steps or run.stopper is None else {}
    if run.stopper is not None:
        metrics = _restore_best(run, step, metrics)
    metrics = {**metrics, **plateau_check(run, logged_losses(cfg.out)[-PLATEAU_LOGS:], metrics.get("eval_loss"))}
    logger.log(step, metrics)
    save_final(run)
    return metrics


def _evaluate_and_watch(run: Run, step: int) -> dict:
    """Held-out metrics at ``step``; under early stopping, the weights are kept when they are the best yet."""
    metrics = evaluate(run)
    if run.stopper is not None and run.stopper.update(step, metrics.get(run.stopper.metric, math.nan)):
        save_checkpoint(run, step, folder=best_dir(run.cfg.out))
    return metrics


def _restore_best(run: Run, step: int, metrics: dict) -> dict:
    """Load the best evaluated weights back when the run ended elsewhere; the metrics say where it stopped."""
    stopper = run.stopper
    if stopper.best_step and stopper.best_step != step:
        run.accelerator.load_state(str(best_dir(run.cfg.out)))
        metrics = evaluate(run)
    return {**metrics, "best_step": stopper.best_step, "last_step": step,
            "stopped_early": step < run.cfg.max_steps}


def _optimizer_step(run: Run, group: list[int], lengths: list[int]) -> float:
    """Forward and backward this process's micro-batches of ``group``, then step; return the group's mean loss."""
    cfg, acc = run.cfg, run.accelerator
    world, rank = acc.num_processes, acc.process_index
    micro = micro_batches(group, lengths, world * cfg.grad_accum)[rank::world]
    norm = sum(run.train[i].n_supervised for i in group)
    run.model.train()
    local = torch.zeros((), device=acc.device)
    for m, batch_ids in enumerate(micro):
        batch = collate([run.train[i] for i in batch_ids], run.tokenizer.pad_token_id, cfg.classes, run.packed)
        batch = to_device(batch, acc.device)
        sync = m == len(micro) - 1
        with (contextlib.nullcontext() if sync else acc.no_sync(run.model)), acc.autocast():
            total = loss_sum(run.model(**model_inputs(batch)), batch)
            # Summed over targets and divided by the whole group's count; DDP averages over processes,
            # so scale by the world size: every split of the group gives the same gradient.
            acc.backward(total * world / norm)
        local += total.detach()
    if cfg.max_grad_norm:
        acc.clip_grad_norm_(run.model.parameters(), cfg.max_grad_norm)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return float(acc.reduce(local, reduction="sum")) / norm


def loss_sum(logits, batch) -> torch.Tensor:
    """The loss summed over a batch's targets: next-token ids where it has them, else step targets."""
    if "token_targets" in batch:
        return next_token_loss(logits, batch["token_targets"])
    return soft_cross_entropy(logits, batch["targets"], batch["mask"])


def evaluate(run: Run) -> dict:
    """Held-out step metrics (examples sharded over processes, every process runs the same batch count);
    for next-token training, the held-out loss per predicted token."""
    from accelerate.utils import gather_object

    cfg, acc = run.cfg, run.accelerator
    if not run.eval:
        return {}
    examples = sorted(run.eval, key=lambda e: len(e.input_ids))
    world, rank, bs = acc.num_processes, acc.process_index, cfg.eval_batch_size
    rows: list[tuple[float, int, float]] = []
    run.model.eval()
    for b in range(math.ceil(len(examples) / (bs * world))):
        chunk = examples[(b * world + rank) * bs:(b * world + rank + 1) * bs]
        batch = collate(chunk or examples[:1], run.tokenizer.pad_token_id, cfg.classes, run.packed)
        batch = to_device(batch, acc.device)
        with torch.no_grad(), acc.autocast():
            logits = run.model(**model_inputs(batch))
        batch_loss = loss_sum(logits, batch).item()
        if cfg.kind == "lm":
            rows.append((float(sum(e.n_supervised for e in chunk)), -2, batch_loss if chunk else 0.0))
            continue
        probs = probabilities(logits).cpu().numpy()
        for i, ex in enumerate(chunk):
            for j, target in enumerate(ex.targets):
                if target is not None:
                    rows.append((_p_correct(probs[i, j], cfg.score_neutral),
                                 int(_p_correct(np.asarray(target), cfg.score_neutral) >= 0.5), 0.0))
        if chunk:
            rows.append((float("nan"), -1, batch_loss))
    rows = gather_object(rows)
    arr = np.asarray(rows, dtype=float).reshape(-1, 3)
    if cfg.kind == "lm":
        return {"eval_loss": float(arr[:, 2].sum() / max(arr[:, 0].sum(), 1.0))}
    steps = arr[arr[:, 1] >= 0]
    out = step_metrics(steps[:, 0], steps[:, 1].astype(int))
    out["eval_loss"] = float(arr[:, 2].sum() / max(len(steps), 1))
    return out


def _p_correct(probs: np.ndarray, neutral: str) -> float:
    full = [float(probs[0]), 1.0 - float(probs[0])] if len(probs) == 1 else [float(p) for p in probs]
    return p_correct(full, neutral)


# --- the saved model ------------------------------------------------------------------------------

def save_final(run: Run) -> None:
    """The trained model as a plain transformers folder in ``out`` (LoRA merged), with its model card."""
    cfg, acc = run.cfg, run.accelerator
    acc.wait_for_everyone()
    model = acc.unwrap_model(run.model)
    backbone = model.backbone
    state = None
    adapter = model.adapter.state_dict() if getattr(model, "adapter", None) is not None else None
    if cfg.lora:
        backbone = backbone.merge_and_unload()
    else:  # gathers the full weights under FSDP / ZeRO-3 (every process takes part)
        full = acc.get_state_dict(run.model)
        state = {k[len("backbone."):]: v for k, v in full.items() if k.startswith("backbone.")}
        if adapter is not None:
            adapter = {k[len("adapter."):]: v for k, v in full.items() if k.startswith("adapter.")}
    if acc.is_main_process:
        card = ModelCard(kind=cfg.kind, head=run.head.to_dict(), format=run.fmt.to_dict(), neutral=cfg.neutral,
                         score_neutral=cfg.score_neutral, supervise=cfg.supervise, label_source=cfg.label_source,
                         aggregations=list(cfg.aggregations), default_aggregation=cfg.default_aggregation,
                         base_model=cfg.base_model)
        save_model(cfg.out, backbone, run.tokenizer, card, state_dict=state, save_function=acc.save)
        if run.features is not None:
            from prmkit.model.features import save_features

            card.features = save_features(cfg.out, adapter, run.features)
            card.save(cfg.out)
        (Path(cfg.out) / "train_config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
    acc.wait_for_everyone()
