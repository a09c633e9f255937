"""The lab's base model: a tiny causal LM pretrained on unlabelled generator output, cached by config hash.

It stands in for the paper's pretrained base (``docs/lab.md``, "The base model"). The reward models of
a lab run (PRM and ORM) both start from it, and its own likelihood is the label-free baseline.

- **Tokenizer** (:func:`lab_tokenizer`): a fixed word-level vocabulary, built without data: the
  words and symbols of the ledger domain (the OOD family's words too, so that held-out text has no
  unknown words, only untrained ones), and every integer 0-999 as one token. A number is one token
  as in the study (a tiny model cannot learn carries over digit tokens within a CPU budget).
  Spaces are dropped; ``\\n`` is a token. Anything else maps to ``<unk>``, never an error.
- **Text layout**: the project's one formatter (:func:`prmkit.model.formatter.encode`, with
  :func:`lab_format`), so the base model is pretrained on exactly the token layout (problem, steps,
  separators, ``<step>`` markers) that the reward models are trained and scored on.
- **Model**: a Llama-style transformers model (:func:`prmkit.model.tiny.preset_config`) trained by
  next-token prediction on the solution tokens (the problem's tokens are context, not targets).
- **Cache**: ``$PRMKIT_CACHE`` (default ``~/.cache/prmkit``) ``/lab-base/<key>/``, a plain
  transformers folder plus ``base.json``; ``key`` hashes the base config, the family, the generator
  and the pretraining sizes (:func:`base_key`). It is written to a temporary folder renamed into place,
  so a killed pretraining leaves nothing that looks finished.

>>> tok = lab_tokenizer()
>>> ids = tok.encode("C - 6 : 14 - 6 = 8", add_special_tokens=False)
>>> len(ids), tok.convert_ids_to_tokens(ids)[-1]
(9, '8')
>>> base_key(BaseConfig(), _cfg()) == base_key(BaseConfig(), _cfg()) != base_key(BaseConfig(seed=1), _cfg())
True
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from prmkit.lab.domain import KINDS, config_hash
from prmkit.model.formatter import FormatConfig, encode_many

SPECIAL = ("<pad>", "<s>", "</s>", "<unk>", "<step>")
WORDS = ("Start", "at", "What", "is", "the", "final", "value", "set", "to", "check", "Answer",
         *[k for k in KINDS if k.isalpha() and k != "set"])
SYMBOLS = ("\n", ".", "?", ":", "=", "+", "-", "*", "/", "#")
LETTERS = tuple(chr(c) for c in range(ord("A"), ord("Z") + 1))
MAX_NUMBER = 999


def lab_format(max_length: int = 384) -> FormatConfig:
    """The lab's formatting: a step per line, each ended by a ``<step>`` marker."""
    return FormatConfig(separator="\n", marker="<step>", problem_suffix="\n", max_length=max_length)


def lab_tokenizer():
    """The lab's word-level tokenizer (a transformers fast tokenizer; same vocabulary on every call)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab_list = [*SPECIAL, *SYMBOLS, *WORDS, *LETTERS, *(str(i) for i in range(MAX_NUMBER + 1))]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(vocab_list))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="removed"),
        pre_tokenizers.Split(Regex(r"\n|\d+|[A-Za-z]+|[^\s\dA-Za-z]"), behavior="isolated")])
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", vocab["<s>"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", additional_special_tokens=["<step>"],
                                   clean_up_tokenization_spaces=False)


@dataclass(frozen=True)
class BaseConfig:
    """The base model and its pretraining. Inert: checked on creation, no I/O."""

    hidden_size: int = field(default=128, metadata={"help": "model width"})
    layers: int = field(default=2, metadata={"help": "transformer blocks"})
    heads: int = field(default=4, metadata={"help": "attention heads"})
    intermediate_size: int = field(default=256, metadata={"help": "MLP width"})
    steps: int = field(default=400, metadata={"help": "optimiser steps of pretraining"})
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


def _cfg():
    from prmkit.lab.config import preset

    return preset("default")


def base_key(base: BaseConfig, cfg) -> str:
    """The cache key of the base model: its config, the problem family, the generator, the pretraining sizes."""
    parts = {"base": config_hash(base), "domain": config_hash(cfg.domain), "generator": config_hash(cfg.generator),
             "sizes": list(cfg.sizes("pretrain")), "vocab": MAX_NUMBER, "version": 1}
    import hashlib

    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """``$PRMKIT_CACHE`` or ``~/.cache/prmkit``."""
    return Path(os.environ.get("PRMKIT_CACHE") or Path.home() / ".cache" / "prmkit")


def base_path(cfg) -> Path:
    return cache_dir() / "lab-base" / base_key(cfg.base, cfg)


def ensure_base(cfg, progress: bool = True, log=print) -> Path:
    """The folder of the base model of ``cfg`` (a :class:`~prmkit.lab.config.LabConfig`), pretrained if not cached."""
    folder = base_path(cfg)
    if (folder / "base.json").is_file():
        return folder
    from prmkit.lab.pools import generate_pool

    start = time.perf_counter()
    texts = generate_pool(cfg, cfg.base.seed, "pretrain")
    model, tok, info = pretrain(texts, cfg.base, progress=progress)
    info.update(key=base_key(cfg.base, cfg), config=dataclasses.asdict(cfg.base), seconds=round(time.perf_counter() - start, 1),
                pretrain_solutions=len(texts))
    import transformers

    transformers.utils.logging.disable_progress_bar()
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.part")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "base.json").write_text(json.dumps(info, indent=2) + "\n")
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, folder)
    except OSError:  # another process finished the same base first: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"base model pretrained in {info['seconds']:.0f} s -> {folder}")
    return folder


def build_model(base: BaseConfig, tokenizer):
    """A freshly initialised Llama-style causal LM of ``base``'s size for ``tokenizer``."""
    import torch
    import transformers

    from prmkit.model.tiny import preset_config

    config = preset_config("tiny-llama", len(tokenizer), tokenizer, hidden_size=base.hidden_size,
                           intermediate_size=base.intermediate_size, num_hidden_layers=base.layers,
                           num_attention_heads=base.heads, num_key_value_heads=base.heads,
                           max_position_embeddings=max(512, base.max_length))
    torch.manual_seed(base.seed)
    model = transformers.LlamaForCausalLM(config)
    if base.numeric_init:
        with torch.no_grad():
            emb = model.get_input_embeddings().weight
            ids = [tokenizer.convert_tokens_to_ids(str(v)) for v in range(MAX_NUMBER + 1)]
            emb[ids, : 2 * len(PERIODS)] += base.numeric_init * torch.from_numpy(number_features(MAX_NUMBER + 1))
    return model


PERIODS = (2, 3, 4, 5, 7, 10, 16, 25, 50, 100, 250, 1000)
"""Periods of the Fourier features of number embeddings (short ones for last digits, long ones for size)."""


def number_features(n: int):
    """``[n, 2 * len(PERIODS)]`` cosines and sines of ``2 pi v / T`` for ``v = 0..n-1``: a number's value,
    in the basis where adding a constant is a rotation (what a tiny model's arithmetic can use).

    >>> f = number_features(100); f.shape, round(float(f[10, 0]), 3)
    ((100, 24), 1.0)
    """
    import numpy as np

    v = np.arange(n)[:, None] * (2 * np.pi / np.array(PERIODS, dtype=float))[None, :]
    return np.concatenate([np.cos(v), np.sin(v)], axis=1).astype(np.float32)


def lm_examples(solutions, tokenizer, fmt: FormatConfig) -> list[tuple[list[int], int]]:
    """(token ids, index of the first solution token) of every solution, through the one formatter."""
    encoded = encode_many(tokenizer, [(s.problem.problem, s.texts) for s in solutions], fmt)
    return [(enc.input_ids, enc.spans[0][0] if enc.spans else len(enc.input_ids)) for enc in encoded]


def lm_batch(examples, pad_id: int):
    """input_ids, attention_mask and labels (-100 on padding and problem tokens) of a batch."""
    import torch

    t = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), t), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), t), -100, dtype=torch.long)
    attn = torch.zeros((len(examples), t), dtype=torch.long)
    for i, (x, first) in enumerate(examples):
        ids[i, : len(x)] = torch.tensor(x)
        attn[i, : len(x)] = 1
        labels[i, first: len(x)] = torch.tensor(x[first:])
    return ids, attn, labels


def pretrain(solutions, base: BaseConfig, progress: bool = True):
    """Pretrain a base model on the texts of ``solutions`` (labels and grades unused): (model, tokenizer, info)."""
    import random

    import torch
    from tqdm.auto import tqdm

    torch.set_num_threads(1)
    tok = lab_tokenizer()
    fmt = lab_format(base.max_length)
    model = build_model(base, tok)
    data = lm_examples(solutions, tok, fmt)
    opt = torch.optim.AdamW(model.parameters(), lr=base.lr, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / base.warmup) * 0.5 * (
        1 + math.cos(math.pi * min(s, base.steps) / base.steps)))
    rng = random.Random(base.seed)
    order: list[int] = []
    losses = []
    model.train()
    bar = tqdm(range(base.steps), desc="pretrain base", disable=not progress, mininterval=2)
    for _ in bar:
        if len(order) < base.batch_size:
            more = list(range(len(data)))
            rng.shuffle(more)
            order += more
        batch = [data[i] for i in order[: base.batch_size]]
        del order[: base.batch_size]
        ids, attn, labels = lm_batch(batch, tok.pad_token_id)
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        optimizer_step(model, loss, opt, sched)
        losses.append(loss.item())
        bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}", refresh=False)
    model.eval()
    tail = losses[-50:]
    return model, tok, {"final_loss": sum(tail) / len(tail), "parameters": sum(p.numel() for p in model.parameters())}


def optimizer_step(model, loss, opt, sched, max_grad_norm: float = 1.0) -> None:
    """One update of the lab's training loops (base pretraining and the reward models): backward,
    clip the gradient norm, step the optimiser and the schedule, clear the gradients."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)


def load_base(folder: str | os.PathLike):
    """(model in eval mode, tokenizer) of a cached base folder."""
    import transformers

    transformers.utils.logging.disable_progress_bar()  # one bar per stage is enough
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    return model, tok


__all__ = ["BaseConfig", "base_key", "base_path", "cache_dir", "ensure_base", "lab_format", "lab_tokenizer",
           "load_base", "pretrain"]
