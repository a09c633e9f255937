"""Per-token auxiliary inputs of a reward model: where they come from, and the adapter that feeds them in.

A reward model can read, beside its tokens, a few floats per token. They enter through a small MLP
(:class:`FeatureAdapter`) whose output is added to the token embeddings; its last layer starts at zero,
so at initialisation the model *is* its backbone, and training decides how much of the signal to use.

One source is built in, named in ``TrainConfig.features`` as ``surprise:FOLDER``: the per-token surprise
of a causal LM (any transformers folder with the reward model's tokenizer), computed by prmkit from the
same token ids the reward model reads, so training and scoring see the same values. For token ``t``:
``logp`` = log P(token t | tokens < t) and ``entropy`` of that next-token distribution (both 0 at the
first token, which has no prediction), given to the adapter as ``[s / 5, log(1 + s), entropy / 3]`` with
``s = min(-logp, 30)`` (scaled to order 1, so one learning rate suits all three). A wrong step is often a
surprising token where the LM was sure. The lab uses its base model this way (``docs/lab.md``).

A trained model keeps what it needs in its folder: the adapter in ``feature_adapter.safetensors``, the
source LM in ``feature_model/``, the spec in the model card. A model trained without features has none
of these and loads with plain transformers as before.

>>> parse_features("surprise:/models/base").source, parse_features("") is None
('surprise', True)
>>> x = surprise_inputs(torch.tensor([[0.0, -5.0]]), torch.tensor([[0.0, 3.0]]))
>>> [round(v, 3) for v in x[0, 1].tolist()]
[1.0, 1.792, 1.0]
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

SOURCES = ("surprise",)
ADAPTER_FILE = "feature_adapter.safetensors"
FEATURE_MODEL_DIR = "feature_model"
SURPRISE_CAP = 30.0


@dataclass(frozen=True)
class FeatureSpec:
    """What a model's per-token inputs are: ``source`` (one of :data:`SOURCES`), the source ``model``
    (a folder; ``feature_model`` inside a saved reward model), ``n_inputs`` floats a token, the adapter's
    ``hidden`` width."""

    source: str
    model: str
    n_inputs: int = 3
    hidden: int = 32

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"unknown feature source {self.source!r} (expected one of {', '.join(SOURCES)})")

    def to_dict(self) -> dict:
        return asdict(self)


def parse_features(text: str) -> FeatureSpec | None:
    """The spec named by a ``TrainConfig.features`` string (``surprise:FOLDER``), None for ``""``."""
    if not text:
        return None
    source, sep, model = text.partition(":")
    if not sep or not model:
        raise ValueError(f"features {text!r}: expected SOURCE:FOLDER, e.g. surprise:path/to/causal-lm")
    return FeatureSpec(source, model)


class FeatureAdapter(nn.Module):
    """``n_inputs`` floats a token -> a vector added to its embedding (zero at initialisation)."""

    def __init__(self, n_inputs: int, hidden: int, width: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_inputs, hidden), nn.GELU(), nn.Linear(hidden, width))
        nn.init.zeros_(self.net[2].weight)
        nn.init.zeros_(self.net[2].bias)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)


def surprise_inputs(logp: torch.Tensor, entropy: torch.Tensor) -> torch.Tensor:
    """The adapter's input ``[..., 3]`` from per-token log-probabilities and entropies."""
    s = (-logp).clamp(0.0, SURPRISE_CAP)
    return torch.stack([s / 5.0, torch.log1p(s), entropy.clamp(min=0.0) / 3.0], dim=-1)


class SurpriseSource:
    """A causal LM's per-token ``(logp, entropy)``: ``raw(token_lists)`` and, as adapter inputs, ``__call__``."""

    def __init__(self, folder: str | os.PathLike, device="cpu", batch_size: int = 64, keep: bool = False):
        import transformers

        from prmkit.model.hub import local_folder
        from prmkit.model.packing import choose

        self.folder = folder = local_folder(str(folder))  # a missing folder said at once, never looked up online
        self.model = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).to(device).eval()
        self.packed = choose("auto", self.model)
        self.device = device
        self.batch_size = batch_size
        self.vocab = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True).get_vocab()
        self._cache: dict[tuple, np.ndarray] | None = {} if keep else None

    def check_tokenizer(self, tokenizer) -> None:
        """Refuse a reward model whose token ids mean something else to the source LM."""
        if tokenizer.get_vocab() != self.vocab:
            raise ValueError(f"features: the source LM {self.folder} has another tokenizer than the reward model; "
                             "surprise features need the same token ids (train from the same base)")

    @torch.no_grad()
    def raw(self, token_lists: list[list[int]]) -> list[np.ndarray]:
        """Per solution, ``[tokens, 2]`` float32: log-probability and entropy of each token's prediction.

        Batches of similar length, laid end to end with no padding where the LM allows
        (:mod:`prmkit.model.packing`). With ``keep``, results are kept by token ids, so several models that
        share this source compute each solution's features once (memory grows with what was seen)."""
        cache = self._cache if self._cache is not None else {}
        todo = sorted({tuple(t) for t in token_lists if tuple(t) not in cache}, key=len)
        for s in range(0, len(todo), self.batch_size):
            batch = todo[s:s + self.batch_size]
            for ids, pairs in zip(batch, self._forward([list(t) for t in batch])):
                cache[ids] = pairs
        return [cache[tuple(t)] for t in token_lists]

    def save(self, path: str | os.PathLike) -> int:
        """Write every solution's features this source kept (``keep``) to ``path`` (``.npz``), so that other
        processes scoring the same solutions read them instead of computing them again (:meth:`load`); how many
        solutions' features it wrote."""
        from prmkit.model.identity import weights_digest

        cache = self._cache or {}
        keys = list(cache)
        np.savez_compressed(path, source=np.array(weights_digest(self.folder) or ""),
                            lengths=np.array([len(k) for k in keys], dtype=np.int64),
                 ids=np.array([t for k in keys for t in k], dtype=np.int32),
                 pairs=np.concatenate([cache[k] for k in keys]) if keys else np.zeros((0, 2), np.float32))
        return len(keys)

    def load(self, path: str | os.PathLike) -> None:
        """Keep the features :meth:`save` wrote: a solution among them is not computed again (the same numbers
        as computing it here in the batch it was computed in there). A file saved from another source model's
        weights is refused."""
        from prmkit.model.identity import weights_digest

        if self._cache is None:
            self._cache = {}
        with np.load(path) as f:
            if missing := [k for k in ("source", "lengths", "ids", "pairs") if k not in f.files]:
                raise ValueError(f"{path}: no {missing[0]!r} array; not a features file that SurpriseSource.save wrote")
            source, lengths, ids, pairs = str(f["source"]), f["lengths"], f["ids"], f["pairs"]
        if source != (weights_digest(self.folder) or ""):
            raise ValueError(f"{path}: features of another source model (weights {source or 'unknown'}), not of "
                             f"{self.folder} ({weights_digest(self.folder)}); compute them again")
        if ids.shape[0] != pairs.shape[0] or int(lengths.sum()) != ids.shape[0]:
            raise ValueError(f"{path}: its token ids ({ids.shape[0]}), features ({pairs.shape[0]}) and lengths "
                             f"(summing to {int(lengths.sum())}) disagree; compute the features again")
        start = 0
        for n in lengths.tolist():
            self._cache[tuple(ids[start:start + n].tolist())] = pairs[start:start + n]
            start += n

    def _forward(self, batch: list[list[int]]) -> list[np.ndarray]:
        from prmkit.model.packing import backbone_kwargs, pack

        lengths = [len(t) for t in batch]
        if self.packed:
            row = pack(batch)
            ids = row["input_ids"].to(self.device)
            kwargs = backbone_kwargs(row["position_ids"].to(self.device), row["cu_seq_lens"].to(self.device))
            logits = self.model(input_ids=ids, **kwargs).logits.float()[0]
            ids = ids[0]
        else:
            width = max(lengths)
            padded = torch.tensor([t + [0] * (width - len(t)) for t in batch], device=self.device)
            attn = torch.tensor([[1] * n + [0] * (width - n) for n in lengths], device=self.device)
            logits = self.model(input_ids=padded, attention_mask=attn).logits.float()
            keep = attn.bool()
            ids, logits = padded[keep], logits[keep]
        # every position of the row at once: position t predicts token t + 1 of its own solution; the
        # first token of each solution has no prediction (0, 0), so the values shift by one per solution
        logp_all = torch.log_softmax(logits, -1)
        logp = logp_all[:-1].gather(-1, ids[1:, None])[:, 0]
        entropy = -(logp_all.exp() * logp_all).sum(-1)[:-1]
        pairs = torch.nn.functional.pad(torch.stack([logp, entropy], -1), (0, 0, 1, 0)).cpu().numpy()
        out, start = [], 0
        for n in lengths:
            part = pairs[start:start + n].astype(np.float32)
            part[0] = 0.0
            out.append(part)
            start += n
        return out

    def __call__(self, token_lists: list[list[int]]) -> list[np.ndarray]:
        """Per solution, the adapter's inputs ``[tokens, 3]`` (float32)."""
        out = []
        for pair in self.raw(token_lists):
            t = torch.from_numpy(pair)
            out.append(surprise_inputs(t[:, 0], t[:, 1]).numpy())
        return out


def make_source(spec: FeatureSpec, device="cpu", keep: bool = False) -> SurpriseSource:
    """The feature computer of ``spec`` (``keep``: remember every solution's features it computed)."""
    return SurpriseSource(spec.model, device, keep=keep)


def save_features(folder: str | os.PathLike, adapter_state: dict, spec: FeatureSpec) -> dict:
    """Write the adapter's weights (its full state dict) and a copy of the source LM into a model folder;
    return the card's entry."""
    import shutil

    from safetensors.torch import save_file

    folder = Path(folder)
    save_file({k: v.detach().cpu().contiguous() for k, v in adapter_state.items()}, str(folder / ADAPTER_FILE))
    target = folder / FEATURE_MODEL_DIR
    if Path(spec.model).resolve() != target.resolve():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(spec.model, target, ignore=shutil.ignore_patterns("checkpoints", "*.part"))
    return {**spec.to_dict(), "model": FEATURE_MODEL_DIR}


def saved_spec(folder: str | os.PathLike, entry: dict) -> FeatureSpec:
    """The spec of a model card's ``features`` entry, its source LM's path made absolute."""
    return FeatureSpec(**{**entry, "model": str(Path(folder) / entry["model"])})


def load_adapter(folder: str | os.PathLike, entry: dict, width: int) -> tuple[FeatureAdapter, FeatureSpec]:
    """The adapter and spec saved by :func:`save_features`."""
    from safetensors.torch import load_file

    spec = saved_spec(folder, entry)
    adapter = FeatureAdapter(spec.n_inputs, spec.hidden, width)
    adapter.load_state_dict(load_file(str(Path(folder) / ADAPTER_FILE)))
    return adapter, spec


__all__ = ["FeatureAdapter", "FeatureSpec", "SurpriseSource", "load_adapter", "make_source", "parse_features",
           "save_features", "saved_spec", "surprise_inputs"]
