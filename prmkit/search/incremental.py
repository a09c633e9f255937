"""Scoring a search's prefixes a step at a time: each scored prefix's key/value cache is kept, so extending a prefix
costs its new tokens, not the whole prefix again.

A beam round extends each kept prefix by one step; scoring every extended prefix whole (:class:`PRMScorer`) pays
for the whole prefix each round, which grows with the square of the depth. :class:`IncrementalPRMScorer` keeps,
per scored prefix, its token ids, its steps' probabilities and the backbone's key/value cache (transformers'
``DynamicCache``). A prefix that extends a cached one is run from a copy of that cache on its new tokens only.
The formatter's encoding of a longer prefix starts with the shorter one's, and this is checked on every call:
where it does not hold, or where the formatter truncated the prefix, the prefix is scored whole. The scores equal
whole-prefix scoring (tested to 1e-5 on random trees in fp32; in bf16, as on CUDA, they differ by rounding,
so a near-tie can be picked the other way). The tokens a prefix costs are the tokens run for it: its new ones.

Prefixes are run one at a time (no batching), so on a small model the per-call overhead can outweigh what the
cache saves: ``bench/bench_incremental_scoring.py`` measures both at depth 10. A model that reads per-token
features (:mod:`prmkit.model.features`) is scored whole, since its features come from another model.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np

from prmkit.schema import Problem
from prmkit.search.adapters import PRMScorer


class IncrementalPRMScorer:
    """A trained PRM as a prefix scorer that keeps the ``keep`` most recently scored prefixes' caches."""

    def __init__(self, model, device=None, keep: int = 4096):
        from prmkit.score import Scorer

        self.scorer = model if isinstance(model, Scorer) else Scorer(model, device=device)
        self.whole = PRMScorer(self.scorer)
        self.keep = keep
        self.cached: OrderedDict = OrderedDict()  # (problem, steps) -> (token ids, step probabilities, KV cache)
        self.touched: set = set()

    def score(self, items):
        """Per prefix: its steps' P(correct) and the tokens the PRM ran for it (its new tokens, where it extends a
        cached prefix). Only the prefixes scored or extended in this call stay cached: a search extends the last
        round's prefixes, and a prefix evicted too early is only slower to score, never scored otherwise."""
        if self.scorer.features is not None:
            return self.whole.score(items)
        self.touched = set()
        out = [self._one(problem.problem, list(steps)) for problem, steps in items]
        for key in [k for k in self.cached if k not in self.touched]:
            del self.cached[key]
        return out

    def _one(self, problem: str, steps: list[str]) -> tuple[np.ndarray, int]:
        from prmkit.model.labels import step_scores as class_scores

        [enc] = self.scorer.encodings([problem], [steps])
        ids = list(enc.input_ids)
        if len(enc.step_ends) < len(steps):  # truncated: what is kept of it is not a cached prefix's extension
            return self.whole.score([(Problem(problem), steps)])[0]
        rows, ran = self._probabilities(problem, steps, ids, list(enc.step_ends))
        p = np.array([class_scores(list(r), self.scorer.neutral)["p_correct"] for r in rows], dtype=float)
        return p, ran

    def _probabilities(self, problem: str, steps: list[str], ids: list[int], ends: list[int]) -> tuple[np.ndarray, int]:
        """Every step's class probabilities of the prefix ``steps``, from the longest cached prefix it extends; and
        the tokens run for it."""
        import torch
        from transformers import DynamicCache

        start, before, cache = 0, np.zeros((0, self.scorer.head.n_outputs)), None
        for k in range(len(steps), -1, -1):
            hit = self.cached.get((problem, tuple(steps[:k])))
            if hit is not None and ids[:len(hit[0])] == hit[0]:
                start, before, cache = len(hit[0]), hit[1], hit[2]
                self.cached.move_to_end((problem, tuple(steps[:k])))
                self.touched.add((problem, tuple(steps[:k])))
                break
        if start == len(ids):
            return before, 0
        cache = copy.deepcopy(cache) if cache is not None else DynamicCache()
        model = self.scorer.model
        new = torch.tensor([ids[start:]], device=self.scorer.device)
        with torch.no_grad():
            logits = model.backbone(input_ids=new, cache=cache, use_cache=True).logits[0]
            picked = logits[[e - start for e in ends if e >= start]]
            if self.scorer.head.kind == "lm":
                picked = picked.index_select(-1, model.label_ids)
            from prmkit.model.heads import probabilities

            rows = np.concatenate([before, probabilities(picked.float()).cpu().numpy()])
        self.cached[(problem, tuple(steps))] = (ids, rows, cache)
        self.touched.add((problem, tuple(steps)))
        while len(self.cached) > self.keep:
            self.cached.popitem(last=False)
        return rows, len(ids) - start


__all__ = ["IncrementalPRMScorer"]
