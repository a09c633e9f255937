"""The lab's reward models: the base model plus its per-token surprise as extra input, a PRM or an ORM head.

A :class:`LabRewardModel` is the pretrained base (:mod:`prmkit.lab.base`) with two additions:

- the base model's per-token ``(logp, entropy)`` (:mod:`prmkit.lab.features`) enters through a small
  MLP added to the token embeddings. Its last layer starts at zero, so at initialisation the model
  *is* the base model; training decides how much of the surprise to use;
- a head read at each step's end (the formatter's ``<step>`` marker): ``classify``, a new linear layer
  on the last hidden state with outputs (positive, negative); or ``lm``, the paper's head: the base
  model's own LM head restricted to the label tokens (``+``, ``-``).

PRM and ORM are the same class, built from the same base, trained on the same solutions with the
same :class:`RMConfig` (steps, batch size, learning rate): the PRM on the labellers' step ratings
(up to the first error they found, neutral as positive: the paper's choices, through
:func:`prmkit.train.data.build_examples`), the ORM on the final-answer grade at the last step end.
Examples, targets, batching and the loss are prmkit's (``prmkit.train.data``, ``prmkit.model.heads``);
only the feature input is new, which is why this loop exists beside ``prmkit.train`` (see
``docs/lab.md``, "Hooks").
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from prmkit.lab.features import N_FEATURES, Features
from prmkit.model.formatter import encode_many

HEADS = ("classify", "lm")


@dataclass(frozen=True)
class RMConfig:
    """The reward models' architecture and training budget (shared by PRM and ORM). Inert."""

    head: str = field(default="classify", metadata={
        "help": "classify: a new 2-class layer at each step end; lm: the base model's LM head over the label tokens"})
    features: bool = field(default=True, metadata={
        "help": "give the base model's per-token surprise (log-probability, entropy) as extra input"})
    steps: int = field(default=300, metadata={"help": "optimiser steps (the same for PRM and ORM)"})
    batch_size: int = field(default=32, metadata={"help": "solutions per optimiser step"})
    lr: float = field(default=2e-3, metadata={"help": "peak learning rate of the base model's weights (linear decay "
                                                      "after warm-up)"})
    new_lr: float = field(default=1e-2, metadata={
        "help": "peak learning rate of the new parts (feature input, classify head): they start from nothing"})
    warmup: int = field(default=20, metadata={"help": "linear warm-up steps"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay"})
    neutral: str = field(default="positive", metadata={"help": "PRM: neutral steps (0) count as positive or negative"})
    supervise: str = field(default="first_error", metadata={
        "help": "PRM: first_error (steps up to the first wrong one, the paper's) or all"})

    def __post_init__(self):
        if self.head not in HEADS:
            raise ValueError(f"rm.head must be one of {', '.join(HEADS)}, got {self.head!r}")
        if self.neutral not in ("positive", "negative"):
            raise ValueError(f"rm.neutral must be positive or negative, got {self.neutral!r}")
        if self.supervise not in ("first_error", "all"):
            raise ValueError(f"rm.supervise must be first_error or all, got {self.supervise!r}")
        if min(self.steps, self.batch_size) < 1:
            raise ValueError("rm.steps and rm.batch_size must be at least 1")


def _torch():
    import torch
    from torch import nn

    return torch, nn


def surprise_inputs(feats):
    """The feature MLP's input from stored ``(logp, entropy)``: scaled surprise, its log, scaled entropy."""
    torch, _ = _torch()
    s = (-feats[..., 0]).clamp(0.0, 30.0)
    h = feats[..., 1].clamp(min=0.0)
    return torch.stack([s / 5.0, torch.log1p(s), h / 3.0], dim=-1)


def make_model(base_dir: str | os.PathLike, cfg: RMConfig, seed: int):
    """A :class:`LabRewardModel` on a fresh copy of the base model (tokenizer returned beside it)."""
    torch, nn = _torch()
    from prmkit.lab.base import load_base

    backbone, tok = load_base(base_dir)

    class LabRewardModel(nn.Module):
        """``forward(input_ids, attention_mask, positions, feats) -> logits [B, S, 2]`` at the step ends."""

        def __init__(self):
            super().__init__()
            self.backbone = backbone
            d = backbone.config.hidden_size
            torch.manual_seed(seed)
            self.feat = nn.Sequential(nn.Linear(3, 32), nn.GELU(), nn.Linear(32, d)) if cfg.features else None
            if self.feat is not None:
                nn.init.zeros_(self.feat[2].weight)
                nn.init.zeros_(self.feat[2].bias)
            self.head = nn.Linear(d, 2) if cfg.head == "classify" else None
            label_ids = [tok.convert_tokens_to_ids(t) for t in ("+", "-")]
            self.register_buffer("label_ids", torch.tensor(label_ids), persistent=False)

        def forward(self, input_ids, attention_mask, positions, feats=None):
            emb = self.backbone.get_input_embeddings()(input_ids)
            if self.feat is not None:
                emb = emb + self.feat(surprise_inputs(feats))
            hidden = self.backbone.model(inputs_embeds=emb, attention_mask=attention_mask).last_hidden_state
            rows = torch.arange(hidden.shape[0])[:, None]
            picked = hidden[rows, positions.clamp(min=0)]
            if self.head is not None:
                return self.head(picked).float()
            return self.backbone.lm_head(picked).index_select(-1, self.label_ids).float()

    return LabRewardModel(), tok


def _feature_batch(examples, features: Features, ids: list[str]):
    torch, _ = _torch()
    t = max(len(e.input_ids) for e in examples)
    out = torch.zeros((len(examples), t, N_FEATURES))
    for r, (e, sid) in enumerate(zip(examples, ids)):
        out[r, : len(e.input_ids)] = torch.from_numpy(features.of(sid, len(e.input_ids)))
    return out


def train_rm(kind: str, solutions, features: Features, base_dir, cfg: RMConfig, seed: int, fmt,
             progress: bool = True, desc: str = "") -> tuple[object, dict]:
    """Train a PRM (``kind="prm"``, step ratings) or ORM (``"orm"``, grades) on ``solutions``: (model, info)."""
    torch, _ = _torch()
    import random

    from tqdm.auto import tqdm

    from prmkit.lab.base import optimizer_step
    from prmkit.model.heads import soft_cross_entropy
    from prmkit.train.data import build_examples, collate

    torch.set_num_threads(1)
    model, tok = make_model(base_dir, cfg, seed)
    examples, report = build_examples(solutions, tok, fmt, kind=kind, n_outputs=2, neutral=cfg.neutral,
                                      supervise=cfg.supervise)
    if len(examples) < cfg.batch_size:
        raise ValueError(f"{len(examples)} {kind} examples, fewer than one batch of {cfg.batch_size}")
    sid = [solutions[e.index].id for e in examples]
    new = [p for n, p in model.named_parameters() if not n.startswith("backbone.")]
    old = [p for n, p in model.named_parameters() if n.startswith("backbone.")]
    opt = torch.optim.AdamW([{"params": old, "lr": cfg.lr}, {"params": new, "lr": cfg.new_lr}],
                            weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(cfg.warmup, 1)) * max(0.0, 1 - s / cfg.steps))
    rng = random.Random(seed)
    order: list[int] = []
    losses = []
    model.train()
    bar = tqdm(range(cfg.steps), desc=desc or f"train {kind}", disable=not progress, mininterval=2)
    for _ in bar:
        if len(order) < cfg.batch_size:
            more = list(range(len(examples)))
            rng.shuffle(more)
            order += more
        pick = order[: cfg.batch_size]
        del order[: cfg.batch_size]
        batch = collate([examples[i] for i in pick], tok.pad_token_id, 2)
        feats = _feature_batch([examples[i] for i in pick], features, [sid[i] for i in pick])
        logits = model(batch["input_ids"], batch["attention_mask"], batch["positions"], feats)
        loss = soft_cross_entropy(logits, batch["targets"], batch["mask"]) / batch["mask"].sum().clamp(min=1)
        optimizer_step(model, loss, opt, sched)
        losses.append(loss.item())
        bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}", refresh=False)
    model.eval()
    return model, {"kind": kind, "data": report.to_dict(), "final_loss": float(np.mean(losses[-25:])),
                   "loss_curve": [round(float(np.mean(losses[i:i + 25])), 4) for i in range(0, len(losses), 25)]}


def save_rm(folder: str | os.PathLike, model, info: dict, cfg: RMConfig) -> None:
    """``model.pt`` (the weights) and ``rm.json`` (config and training summary) in ``folder``."""
    torch, _ = _torch()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / "model.pt.part")
    os.replace(folder / "model.pt.part", folder / "model.pt")
    (folder / "rm.json").write_text(json.dumps({"config": asdict(cfg), **info}, indent=2) + "\n")


def load_rm(folder: str | os.PathLike, base_dir, cfg: RMConfig):
    """(model in eval mode, tokenizer) saved by :func:`save_rm`."""
    torch, _ = _torch()
    model, tok = make_model(base_dir, cfg, seed=0)
    model.load_state_dict(torch.load(Path(folder) / "model.pt", weights_only=True))
    return model.eval(), tok


def rm_probabilities(model, tok, solutions, features: Features, fmt, batch_size: int = 64,
                     progress: bool = True, desc: str = "score") -> list[np.ndarray]:
    """Per solution, ``[kept steps, 2]`` probabilities (positive, negative) at every step end."""
    torch, _ = _torch()
    from tqdm.auto import tqdm

    from prmkit.train.data import Example, collate

    encs = encode_many(tok, [(s.problem.problem, s.texts) for s in solutions], fmt)
    order = sorted(range(len(encs)), key=lambda i: len(encs[i]))
    out: list[np.ndarray] = [None] * len(encs)  # type: ignore[list-item]
    with torch.no_grad(), tqdm(total=len(encs), desc=desc, unit="sol", disable=not progress, mininterval=2) as bar:
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            exs = [Example(encs[i].input_ids, encs[i].step_ends or [0], [None] * max(1, len(encs[i].step_ends)))
                   for i in idx]
            batch = collate(exs, tok.pad_token_id, 2)
            feats = _feature_batch(exs, features, [solutions[i].id for i in idx])
            probs = torch.softmax(model(batch["input_ids"], batch["attention_mask"], batch["positions"], feats), -1)
            for r, i in enumerate(idx):
                out[i] = probs[r, : len(encs[i].step_ends)].numpy().astype(float)
            bar.update(len(idx))
    return out


__all__ = ["HEADS", "RMConfig", "load_rm", "make_model", "rm_probabilities", "save_rm", "surprise_inputs",
           "train_rm"]
