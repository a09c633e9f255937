"""The base model's per-token surprise, computed once per pool: the extra input of the lab's reward models.

For every token ``t`` of a formatted solution (the one formatter, :func:`prmkit.lab.base.lab_format`),
two numbers from the base model's next-token distribution at ``t - 1``:

``logp``
    ``log P(token t | tokens < t)`` (0 for the first token, which has no prediction);
``entropy``
    the entropy of that distribution, in nats: how sure the base model was before seeing ``t``.

A wrong step is usually a surprising token where the base model was sure (a result that does not
follow, an operand that is not the previous result). The same numbers give the label-free baseline,
the base model's own likelihood of a solution's steps (:func:`likelihood_scores`):
``likelihood_mean`` (mean token log-probability over the steps' tokens) and ``likelihood_min`` (the
least likely token).

Stored as :class:`Features`: one flat ``float32`` array ``[total tokens, 2]`` plus per-solution
offsets and ids (``features.npz``). Because the model is causal and the formatter concatenates
steps, the features of a solution cut after ``k`` steps are a prefix of the full solution's
(:meth:`Features.of`), which is how the truncated records of phase-2 labelling get theirs.

>>> f = Features(np.zeros((5, 2), np.float32), np.array([0, 2, 5]), ["a", "b"])
>>> f.of("b").shape, f.of("b", 2).shape
((3, 2), (2, 2))
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from prmkit.model.formatter import encode, encode_many

N_FEATURES = 2


@dataclass
class Features:
    """Per-token features of many solutions, flat: solution ``i`` is ``values[offsets[i]:offsets[i+1]]``."""

    values: np.ndarray
    offsets: np.ndarray
    ids: list[str]

    def __post_init__(self):
        self._index = {k: i for i, k in enumerate(self.ids)}

    def of(self, solution_id: str, length: int | None = None) -> np.ndarray:
        """The features of one solution (its first ``length`` tokens)."""
        i = self._index[solution_id]
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        if length is not None:
            if length > hi - lo:
                raise ValueError(f"{solution_id}: {length} tokens asked, {hi - lo} computed")
            hi = lo + length
        return self.values[lo:hi]

    def save(self, path: str | os.PathLike) -> None:
        """Write ``.npz`` atomically (a temporary name renamed into place)."""
        path = str(path)
        tmp = f"{path}.part.npz"
        np.savez(tmp, values=self.values, offsets=self.offsets, ids=np.array(self.ids))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Features:
        with np.load(path) as d:
            return cls(d["values"], d["offsets"], [str(x) for x in d["ids"]])


def token_features(model, tokenizer, solutions, fmt, batch_size: int = 64, progress: bool = True,
                   desc: str = "features") -> Features:
    """Base-model ``(logp, entropy)`` of every token of every solution (ids must be unique)."""
    import torch
    from tqdm.auto import tqdm

    encs = [e.input_ids for e in encode_many(tokenizer, [(s.problem.problem, s.texts) for s in solutions], fmt)]
    lengths = np.array([len(e) for e in encs])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = np.zeros((int(offsets[-1]), N_FEATURES), np.float32)
    order = np.argsort(lengths, kind="stable")
    pad = tokenizer.pad_token_id
    with torch.no_grad(), tqdm(total=len(encs), desc=desc, unit="sol", disable=not progress, mininterval=2) as bar:
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            t = int(lengths[idx].max())
            ids = torch.full((len(idx), t), pad, dtype=torch.long)
            attn = torch.zeros((len(idx), t), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : lengths[i]] = torch.tensor(encs[i])
                attn[r, : lengths[i]] = 1
            logits = model(input_ids=ids, attention_mask=attn).logits.float()
            logp_all = torch.log_softmax(logits[:, :-1], dim=-1)
            logp = logp_all.gather(-1, ids[:, 1:, None])[..., 0]
            entropy = -(logp_all.exp() * logp_all).sum(-1)
            feats = torch.stack([logp, entropy], dim=-1).numpy()
            for r, i in enumerate(idx):
                n = int(lengths[i])
                values[offsets[i] + 1: offsets[i] + n] = feats[r, : n - 1]
            bar.update(len(idx))
    return Features(values, offsets, [s.id for s in solutions])


def step_token_spans(tokenizer, solution, fmt) -> list[tuple[int, int]]:
    """(start, end) token positions of each step's own text (no separator, no marker)."""
    return encode(tokenizer, solution.problem.problem, solution.texts, fmt).spans


def likelihood_scores(logp: np.ndarray, spans: list[tuple[int, int]]) -> dict[str, float | list[float]]:
    """The label-free scores of one solution from its tokens' ``logp`` and its step ``spans``.

    ``likelihood_mean``: mean log-probability of the steps' tokens; ``likelihood_min``: the smallest;
    ``step_min``: per step, its least likely token (a label-free step score).

    >>> d = likelihood_scores(np.array([0.0, -0.1, -2.0, -0.3, -0.1]), [(1, 3), (3, 5)])
    >>> round(d["likelihood_mean"], 3), d["likelihood_min"], [round(x, 2) for x in d["step_min"]]
    (-0.625, -2.0, [-2.0, -0.3])
    """
    per_step = [logp[a:b] for a, b in spans if b > a]
    if not per_step:
        return {"likelihood_mean": float("nan"), "likelihood_min": float("nan"), "step_min": []}
    tokens = np.concatenate(per_step)
    return {"likelihood_mean": float(tokens.mean()), "likelihood_min": float(tokens.min()),
            "step_min": [float(x.min()) for x in per_step]}


__all__ = ["N_FEATURES", "Features", "likelihood_scores", "step_token_spans", "token_features"]
