"""The label-free baseline: the base model's own likelihood of a solution's steps, from no labels at all.

The base model's per-token log-probability (:class:`prmkit.model.features.SurpriseSource`, the same
numbers the reward models read as features) over the tokens of the one formatter
(:func:`prmkit.lab.config.lab_format`) gives, per solution (:func:`likelihood_scores`):
``likelihood_mean`` (mean token log-probability over the steps' tokens), ``likelihood_min`` (the least
likely token), and per step ``base_logp_min`` (its least likely token, a label-free step score).
:func:`write_label_free` writes them into a pool's records, the base of the lab's scored files.
"""

from __future__ import annotations

import math
import os

import numpy as np

from prmkit.model.formatter import encode_many

LABEL_FREE = ("likelihood_mean", "likelihood_min")


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


def write_label_free(out: str | os.PathLike, pool_file: str | os.PathLike, base_dir: str | os.PathLike, fmt,
                     device: str = "cpu", source=None) -> int:
    """Copy a pool's records into ``out`` with their label-free scores; return the count. ``source``: a
    :class:`~prmkit.model.features.SurpriseSource` of ``base_dir`` to share (its results are kept)."""
    import transformers

    from prmkit.io import read_solutions, write_records
    from prmkit.model.features import SurpriseSource

    sols = list(read_solutions(pool_file))
    tok = transformers.AutoTokenizer.from_pretrained(base_dir)
    encoded = encode_many(tok, [(s.problem.problem, s.texts) for s in sols], fmt)
    logps = (source or SurpriseSource(base_dir, device)).raw([e.input_ids for e in encoded])
    for sol, enc, pairs in zip(sols, encoded, logps, strict=True):
        d = likelihood_scores(pairs[:, 0], enc.spans)
        sol.scores.update({k: d[k] for k in LABEL_FREE if not math.isnan(d[k])})
        for step, v in zip([s for s in sol.steps if s.taken is not None], d["step_min"]):
            step.scores["base_logp_min"] = v
    return write_records(out, sols)


__all__ = ["LABEL_FREE", "likelihood_scores", "write_label_free"]
