"""The lab's base model: a tiny causal LM pretrained on unlabelled generator output, cached by config hash.

It stands in for the paper's pretrained base (``docs/lab.md``, "The base model"). The reward models of
a lab run (PRM and ORM) both start from it, and its own likelihood is the label-free baseline.

- **Tokenizer** (:func:`lab_tokenizer`): a fixed word-level vocabulary, built without data: the
  words and symbols of the run's domain (:attr:`prmkit.lab.domains.Domain.words`; the OOD family's
  words too, so that held-out text has no unknown words, only untrained ones), the letters, and every
  integer 0-999 as one token. A number is one token
  as in the study (a tiny model cannot learn carries over digit tokens within a CPU budget).
  Spaces are dropped; ``\\n`` is a token. Anything else maps to ``<unk>``, never an error.
- **Text layout**: the project's one formatter (:func:`prmkit.model.formatter.encode`, with
  :func:`lab_format`), so the base model is pretrained on exactly the token layout (problem, steps,
  separators, ``<step>`` markers) that the reward models are trained and scored on.
- **Model**: a Llama-style transformers model (:func:`prmkit.model.tiny.preset_config`) trained by
  next-token prediction on the solution tokens (the problem's tokens are context, not targets), by
  the product's own loop: ``prmkit train lm`` (:func:`pretrain_config`), resumable from checkpoints.
- **Cache**: ``$PRMKIT_CACHE`` (default ``~/.cache/prmkit``) ``/lab-base/<key>/``, a plain
  transformers folder plus ``base.json``; ``key`` hashes the base config, the families, the generator
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
import os
import shutil
import time
from pathlib import Path

from prmkit.lab.config import BaseConfig, lab_format, preset
from prmkit.lab.domain import config_hash
from prmkit.lab.domains import LEDGER

SPECIAL = ("<pad>", "<s>", "</s>", "<unk>", "<step>")
LETTERS = tuple(chr(c) for c in range(ord("A"), ord("Z") + 1))
MAX_NUMBER = 999


def lab_tokenizer(words: tuple[str, ...] = LEDGER.words):
    """The lab's word-level tokenizer over a domain's ``words`` (:attr:`prmkit.lab.domains.Domain.words`;
    the ledger's by default), the letters and the numbers: a transformers fast tokenizer, the same
    vocabulary on every call."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab_list = [*SPECIAL, *words, *LETTERS, *(str(i) for i in range(MAX_NUMBER + 1))]
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


def _cfg():
    return preset("default")


def base_key(base: BaseConfig, cfg, device: str = "auto") -> str:
    """The cache key of the base model: its config, the problem family, the generator, the pretraining sizes,
    and bf16 when pretrained on CUDA (a CPU base is fp32: another model)."""
    parts = {"base": config_hash(base), "domain": config_hash(cfg.domain), "generator": config_hash(cfg.generator),
             "sizes": list(cfg.sizes("pretrain")), "vocab": MAX_NUMBER, "version": 3}
    if cfg.ood_pretrain_problems:
        parts["ood"] = {"family": config_hash(cfg.ood), "sizes": list(cfg.sizes("ood_pretrain"))}
    from prmkit.device import uses_cuda

    if uses_cuda(device):
        parts["precision"] = "bf16"
    import hashlib

    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """``$PRMKIT_CACHE`` or ``~/.cache/prmkit``."""
    return Path(os.environ.get("PRMKIT_CACHE") or Path.home() / ".cache" / "prmkit")


def base_path(cfg, device: str = "auto") -> Path:
    return cache_dir() / "lab-base" / base_key(cfg.base, cfg, device)


def ensure_base(cfg, progress: bool = True, log=print, device: str = "auto") -> Path:
    """The folder of the base model of ``cfg`` (a :class:`~prmkit.lab.config.LabConfig`), pretrained if not cached.

    Pretraining is ``prmkit train lm`` (:func:`prmkit.train.loop.train`, the product's loop) on
    :func:`pretrain_pool` from the initial weights of :func:`build_model`. It runs in a ``.part`` folder that
    keeps its checkpoints, so a killed pretraining resumes where it stopped.
    """

    def pretrain(folder: Path) -> None:
        _pretrain_into(folder, cfg, progress, device)
        log(f"base model pretrained -> {folder}")

    return build_once(base_path(cfg, device), "base.json", pretrain)


def build_once(folder: Path, marker: str, build) -> Path:
    """``folder``, made by ``build(folder)`` unless it holds ``marker`` (the file a build writes last): one build
    per folder across processes (a second waits on the lock, then finds it done)."""
    if (folder / marker).is_file():
        return folder
    import fcntl

    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(f".{folder.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / marker).is_file():
            build(folder)
    return folder


def _pretrain_into(folder: Path, cfg, progress: bool, device: str) -> None:
    from prmkit.io import write_records
    from prmkit.train.loop import train
    from prmkit.train.metrics import read_losses

    start = time.perf_counter()
    tmp = folder.with_name(f".{folder.name}.part")
    init = tmp / "init"
    if not (init / "COMPLETE").is_file():
        write_records(tmp / "pretrain.jsonl.gz", pretrain_pool(cfg))
        tok = lab_tokenizer(cfg.lab_domain.words)
        _quiet_transformers()
        build_model(cfg.base, tok).save_pretrained(init)
        tok.save_pretrained(init)
        (init / "COMPLETE").write_text("")
    metrics = train(pretrain_config(cfg.base, tmp, progress, device))
    model_dir = tmp / "model"
    losses = read_losses(model_dir)
    info = {"key": folder.name, "config": dataclasses.asdict(cfg.base),
            "seconds": round(time.perf_counter() - start, 1), "final_loss": sum(losses[-5:]) / len(losses[-5:]),
            "pretrain_solutions": count_lines(tmp / "pretrain.jsonl.gz"), **metrics}
    (model_dir / "base.json").write_text(json.dumps(info, indent=2) + "\n")
    shutil.rmtree(model_dir / "checkpoints", ignore_errors=True)
    os.replace(model_dir, folder)
    shutil.rmtree(tmp, ignore_errors=True)


def pretrain_pool(cfg) -> list:
    """The base's unlabelled pretraining text: the pretrain split, and the held-out family's pretraining
    split (problems disjoint from its evaluation problems) when ``ood_pretrain_problems`` is set."""
    from prmkit.lab.pools import generate_pool

    pool = generate_pool(cfg, cfg.base.seed, "pretrain")
    if cfg.ood_pretrain_problems:
        pool += generate_pool(cfg, cfg.base.seed, "ood_pretrain")
    return pool


def pretrain_config(base: BaseConfig, work: Path, progress: bool, device: str = "auto"):
    """The :class:`~prmkit.train.config.TrainConfig` of the base's pretraining (next-token, ``kind="lm"``), on the
    torch threads of the process that runs it (``cpu_threads=0``: the lab run's ``--threads``)."""
    from prmkit.train.config import TrainConfig

    fmt = lab_format(base.max_length)
    return TrainConfig(kind="lm", data=str(work / "pretrain.jsonl.gz"), out=str(work / "model"),
                       base_model=str(work / "init"), eval_fraction=0.0, separator=fmt.separator, marker=fmt.marker,
                       problem_suffix=fmt.problem_suffix, max_length=base.max_length, max_steps=base.steps,
                       batch_size=base.batch_size, lr=base.lr, warmup_steps=base.warmup, scheduler="cosine",
                       weight_decay=0.01, adam_beta2=0.98, seed=base.seed, save_every=100, log_every=10,
                       eval_every=0, tensorboard=False, progress=progress, device=device, cpu_threads=0)


def count_lines(path: Path) -> int:
    from prmkit.io import open_text

    with open_text(path) as f:
        return sum(1 for _ in f)


def _quiet_transformers() -> None:
    import transformers

    transformers.utils.logging.disable_progress_bar()  # one bar per stage is enough
    transformers.utils.logging.set_verbosity_error()  # a new head's "newly initialised" report is expected


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


def load_base(folder: str | os.PathLike):
    """(causal LM in eval mode, tokenizer) of a cached base folder."""
    import transformers

    _quiet_transformers()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    return model, tok


__all__ = ["BaseConfig", "base_key", "base_path", "build_once", "cache_dir", "ensure_base", "lab_format", "lab_tokenizer",
           "load_base", "pretrain_config"]
