"""Scoring a search's prefixes a step at a time: each scored prefix's key/value cache is kept, so extending a prefix
costs its new tokens, not the whole prefix again.

A beam round extends each kept prefix by one step; scoring every extended prefix whole (:class:`PRMScorer`) pays
for the whole prefix each round, which grows with the square of the depth. :class:`IncrementalPRMScorer` keeps,
per scored prefix, its token ids, its steps' probabilities and the backbone's keys and values of every layer (what
transformers' ``DynamicCache`` holds). A prefix that extends a cached one runs its new tokens only, after that
cache (a batch's cache is built anew from the kept tensors, which nothing changes).
The formatter's encoding of a longer prefix starts with the shorter one's, and this is checked on every call:
where it does not hold, or where the formatter truncated the prefix, the prefix is scored whole. The scores equal
whole-prefix scoring (tested to 1e-5 on random trees in fp32; in bf16, as on CUDA, they differ by rounding,
so a near-tie can be picked the other way). The tokens a prefix costs are the tokens run for it: its new ones.

A call's prefixes run together, ``batch_size`` at a time: each one's cache is padded on the left to the longest in
the batch and its new tokens on the right, under a mask that hides the pads and keeps each row causal, with each
row's positions continuing its own cache. ``bench/bench_incremental_scoring.py`` measures it against whole-prefix
scoring at depth 10. Scored whole instead: a model whose layers would build a mask of their own (a sliding window,
layers other than full attention) or whose attention reads none (:func:`cache_problem`), and a model that reads
per-token features (:mod:`prmkit.model.features`), since its features come from another model.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from prmkit.schema import Problem
from prmkit.search.adapters import PRMScorer


def cache_problem(backbone) -> str | None:
    """Why a batch of cached prefixes cannot run through ``backbone`` under prmkit's custom mask (None: it can). The
    mask is passed as is, so a model whose layers would build another one (a sliding window, layers other than full
    attention) or an attention that reads no 4D mask (flash attention) is scored whole instead."""
    from prmkit.model.packing import PACKED_ATTENTION, mask_problem, unwrapped

    config = unwrapped(backbone).config
    if config._attn_implementation not in ("sdpa", "eager", PACKED_ATTENTION):
        return f"its attention {config._attn_implementation!r} reads no custom mask"
    return mask_problem(config)


@dataclass
class _Prefix:
    """One prefix of a call: its place in the call, its cache key, its tokens and step ends, the cached prefix it
    extends (None: none)."""

    index: int
    key: tuple
    ids: list[int]
    ends: list[int]
    hit: tuple | None

    @property
    def start(self) -> int:
        """The tokens its cache covers: it runs the rest."""
        return len(self.hit[0]) if self.hit else 0


class IncrementalPRMScorer:
    """A trained PRM as a prefix scorer that keeps the caches of the prefixes the last call scored or extended."""

    def __init__(self, model, device=None, keep: int = 4096, batch_size: int = 32):
        from prmkit.score import Scorer

        self.scorer = model if isinstance(model, Scorer) else Scorer(model, device=device)
        self.whole = PRMScorer(self.scorer)
        self.keep, self.batch_size = keep, batch_size
        self.whole_only = self.scorer.features is not None or cache_problem(self.scorer.model.backbone) is not None
        # (problem, steps) -> (token ids, step probabilities, per layer (keys, values) [1, heads, tokens, dim])
        self.cached: OrderedDict = OrderedDict()
        self.touched: set = set()

    def score(self, items):
        """Per prefix: its steps' P(correct) and the tokens the PRM ran for it (its new tokens, where it extends a
        cached prefix). Only the prefixes scored or extended in this call stay cached: a search extends the last
        round's prefixes, and a prefix evicted too early is only slower to score, never scored otherwise."""
        from prmkit.model.labels import step_scores as class_scores

        if self.whole_only:
            return self.whole.score(items)
        self.touched = set()
        items = [(problem.problem, list(steps)) for problem, steps in items]
        encs = self.scorer.encodings([p for p, _ in items], [s for _, s in items])
        out: list = [None] * len(items)
        todo, first_of = [], {}  # a prefix asked twice in one call runs once; the repeat costs nothing, as if cached
        for i, ((problem, steps), enc) in enumerate(zip(items, encs)):
            key = (problem, tuple(steps))
            if len(enc.step_ends) < len(steps):  # truncated: what is kept of it is not a cached prefix's extension
                out[i] = self.whole.score([(Problem(problem), steps)])[0]
            elif key not in first_of:
                first_of[key] = i
                ids = list(enc.input_ids)
                todo.append(_Prefix(i, key, ids, list(enc.step_ends), self._longest_hit(problem, steps, ids)))
        for first in range(0, len(todo), self.batch_size):
            batch = todo[first:first + self.batch_size]
            for prefix, (rows, ran) in zip(batch, self._run(batch)):
                p = np.array([class_scores(list(r), self.scorer.neutral)["p_correct"] for r in rows], dtype=float)
                out[prefix.index] = (p, ran)
        for i, (problem, steps) in enumerate(items):
            if out[i] is None:  # a repeat
                out[i] = (out[first_of[(problem, tuple(steps))]][0], 0)
        for key in [k for k in self.cached if k not in self.touched]:
            del self.cached[key]
        while len(self.cached) > self.keep:
            self.cached.popitem(last=False)
        return out

    def _longest_hit(self, problem: str, steps: list[str], ids: list[int]):
        """The longest cached prefix of ``steps`` whose tokens start ``ids`` (None where none is), marked in use."""
        for k in range(len(steps), -1, -1):
            key = (problem, tuple(steps[:k]))
            hit = self.cached.get(key)
            if hit is not None and ids[:len(hit[0])] == hit[0]:
                self.cached.move_to_end(key)
                self.touched.add(key)
                return hit
        return None

    def _run(self, batch: list[_Prefix]) -> list[tuple[np.ndarray, int]]:
        """Every step's class probabilities of each prefix of ``batch`` and the tokens run for it: the new tokens of
        all of them in one forward pass after their caches. Each prefix run is cached."""
        out: list = [(p.hit[1], 0) if p.start == len(p.ids) else None for p in batch]  # else: cached whole already
        run = [p for p, done in zip(batch, out) if done is None]
        if not run:
            return out
        probs, caches = self._forward([p.ids[p.start:] for p in run], [p.hit for p in run],
                                      [[e - p.start for e in p.ends if e >= p.start] for p in run])
        results = iter(zip(run, probs, caches))
        for j, done in enumerate(out):
            if done is None:
                prefix, p, cache = next(results)
                rows = np.concatenate([prefix.hit[1], p]) if prefix.hit else p
                self.cached[prefix.key] = (prefix.ids, rows, cache)
                self.touched.add(prefix.key)
                out[j] = (rows, len(prefix.ids) - prefix.start)
        return out

    def _forward(self, new: list[list[int]], hits: list, ends: list[list[int]]) -> tuple[list[np.ndarray], list]:
        """One forward pass of several prefixes' new tokens after their caches: per prefix, the class probabilities
        at ``ends`` (positions among its new tokens) and its whole cache, per layer (keys, values) [1, heads, t, dim].

        Caches are padded on the left to the longest (``P``) and new tokens on the right to the longest (``Q``); the
        mask lets a row's new token see its own cache and its earlier new tokens, nothing padded; its positions
        continue its cache. The pads' own outputs are never read."""
        import torch
        from transformers import DynamicCache

        from prmkit.model.heads import probabilities

        device = self.scorer.device
        past = [len(hit[0]) if hit else 0 for hit in hits]
        P, Q, B = max(past), max(len(t) for t in new), len(new)
        pad = self.scorer.tokenizer.pad_token_id or 0
        ids = torch.tensor([t + [pad] * (Q - len(t)) for t in new], device=device)
        # a row's pads keep its last real position: no position past any the row has (learned or scaled positions)
        last = torch.tensor([len(t) - 1 for t in new], device=device)[:, None]
        positions = torch.tensor(past, device=device)[:, None] + torch.minimum(torch.arange(Q, device=device)[None], last)
        mask = torch.zeros(B, 1, Q, P + Q, dtype=torch.bool, device=device)
        mask[:, :, :, P:] = torch.ones(Q, Q, dtype=torch.bool, device=device).tril()
        for b, n in enumerate(past):
            mask[b, :, :, P - n:P] = True
        model = self.scorer.model
        dtype = model.backbone.get_input_embeddings().weight.dtype  # additive, as every attention reads it (eager adds)
        mask = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, torch.finfo(dtype).min)
        cache = DynamicCache(self._padded(hits, past, P)) if P else DynamicCache()
        with torch.no_grad():
            logits = model.backbone(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache,
                                    use_cache=True).logits
            picked = [logits[b, ends[b]] for b in range(B)]
            if self.scorer.head.kind == "lm":
                picked = [x.index_select(-1, model.label_ids) for x in picked]
            probs = [probabilities(x.float()).cpu().numpy() for x in picked]
        layers = [(layer.keys, layer.values) for layer in cache.layers]
        caches = [[(k[b:b + 1, :, P - past[b]:P + len(new[b])].clone(), v[b:b + 1, :, P - past[b]:P + len(new[b])].clone())
                   for k, v in layers] for b in range(B)]  # copies: a view would keep the whole padded batch alive
        return probs, caches

    @staticmethod
    def _padded(hits: list, past: list[int], P: int) -> list:
        """Per layer, the batch's cached keys and values left-padded with zeros to ``P`` tokens (a prefix with no
        cache: all zeros, every position masked)."""
        import torch

        template = next(hit for hit in hits if hit)[2]  # a cache's shape: (layers) x (keys, values) [1, heads, t, dim]

        def padded(layer: int, which: int, hit, n: int):
            tensor = hit[2][layer][which] if hit else template[layer][which][:, :, :0]
            return torch.nn.functional.pad(tensor, (0, 0, P - n, 0))

        return [tuple(torch.cat([padded(layer, which, hit, n) for hit, n in zip(hits, past)]) for which in (0, 1))
                for layer in range(len(template))]


__all__ = ["IncrementalPRMScorer", "cache_problem"]
