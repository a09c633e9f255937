"""The lab's reward models, trained by ``prmkit.train`` and scored by ``prmkit.score`` like any user's.

A lab reward model is a :class:`~prmkit.train.config.TrainConfig` (``LabConfig.rm``, the same for the
PRM and the ORM) whose ``base_model`` and ``features`` may name ``base``: the run's base model
(:mod:`prmkit.lab.base`). The default recipe, :func:`lab_rm`: the base with a ``classify`` head, and the
base's per-token surprise through the feature adapter (``features: surprise:base``,
:mod:`prmkit.model.features`); its new parts (adapter, classification layer) learn at ``new_lr``.
The PRM trains on the labellers' step ratings (up to the first error they found, neutral as positive:
the paper's choices), the ORM on the final-answer grade at the last step end.

:func:`train_and_score` runs one: ``prmkit.train.loop.train`` into ``OUT/model`` (a plain prmkit model
folder: ``prmkit score`` reads it), then ``prmkit.score.score_file`` of every pool into
``OUT/scored-<pool>.jsonl.gz``, prmkit records that ``prmkit eval bon`` reads. :func:`step_probabilities`
and :func:`solution_column` read those files back for the studies.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np

from prmkit.lab.config import RM_BASE as BASE
from prmkit.lab.config import lab_rm
from prmkit.train.config import TrainConfig


def job_config(rm: TrainConfig, kind: str, data: str, out: str, base_dir: str, seed: int, progress: bool,
               device: str = "auto") -> TrainConfig:
    """``rm`` for one job: its kind, data, output, seed, and ``base`` resolved to the base folder."""
    def resolve(text: str) -> str:
        head, sep, tail = text.rpartition(":")
        return f"{head}{sep}{base_dir}" if tail == BASE else text

    # cpu_threads 0: the job's own torch threads (its worker's, ``--threads``), not the config's one
    return dataclasses.replace(rm, kind=kind, data=data, out=out, seed=seed, progress=progress, device=device,
                               base_model=resolve(rm.base_model), features=resolve(rm.features), cpu_threads=0)


def lab_score_config(name: str = "", progress: bool = False, device: str = "auto"):
    """How a lab job scores with a reward model (``prmkit score``'s config): batches of 64, a fresh output (no
    resume), and the job's own torch threads (``cpu_threads=0``: its worker's, ``--threads``)."""
    from prmkit.score import ScoreConfig

    return ScoreConfig(name=name, batch_size=64, progress=progress, resume=False, device=device, cpu_threads=0)


def train_and_score(out: Path, kind: str, train_file: str, rm: TrainConfig, seed: int, base_dir: str,
                    pools: dict[str, str], column: str = "", progress: bool = False, device: str = "auto") -> dict:
    """Train a ``kind`` reward model on every record of ``train_file`` into ``out/model`` and score each pool
    (name -> solutions file) into ``out/scored-<name>.jsonl.gz`` under the score name ``column`` (default: kind)."""
    from prmkit.device import torch_device
    from prmkit.score import Scorer, score_file
    from prmkit.train.loop import train

    start = time.perf_counter()
    cfg = job_config(rm, kind, str(train_file), str(out / "model"), base_dir, seed, progress, device)
    metrics = train(cfg)
    train_seconds = time.perf_counter() - start
    scored = {}
    if pools:
        score_cfg = lab_score_config(column or kind, progress, device)
        scorer = Scorer(out / "model", device=torch_device(device))
        for name, pool_file in pools.items():
            scored[name] = score_file(out / "model", pool_file, out / f"scored-{name}.jsonl.gz", score_cfg, scorer)
    return {"metrics": metrics, "final_loss": final_loss(out / "model"), "train_seconds": round(train_seconds, 1),
            "score_seconds": round(time.perf_counter() - start - train_seconds, 1),
            "scored": {k: v["scored"] for k, v in scored.items()}}


def final_loss(model_dir: Path, last: int = 3) -> float:
    """Mean of the last ``last`` logged training losses."""
    from prmkit.train.metrics import read_losses

    return float(np.mean(read_losses(model_dir)[-last:]))


def step_probabilities(path: str | os.PathLike) -> list[np.ndarray]:
    """Per solution of a scored file, ``[scored steps, 2]`` (positive, negative) probabilities of its PRM."""
    from prmkit.io import read_solutions

    out = []
    for sol in read_solutions(path):
        rows = [(s.scores["p_pos"], s.scores["p_neg"]) for s in sol.steps if "p_pos" in s.scores]
        out.append(np.asarray(rows, dtype=float).reshape(-1, 2))
    return out


def solution_column(path: str | os.PathLike, column: str) -> np.ndarray:
    """Every solution's score ``column`` in a scored file; -inf where it has none (e.g. an ORM whose last
    step was cut by truncation)."""
    from prmkit.io import read_solutions

    return np.array([sol.scores.get(column, -np.inf) for sol in read_solutions(path)], dtype=float)


__all__ = ["BASE", "job_config", "lab_rm", "lab_score_config", "solution_column", "step_probabilities", "train_and_score"]
