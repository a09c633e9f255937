"""Restarts: several runs from distinct seeds, and the one that does best on held-out labelled data kept.

Reward models trained on a few thousand labels can stall: the loss sits at the entropy of the class
prior and the run ends having learned the base rate only, or half-way; which seed stalls is a matter
of luck (the lab measured step AUROC 0.90 and 0.98 from two seeds of one recipe). With
``restarts: k``, :func:`train_with_restarts` trains ``k`` runs whose model initialisation and batch order
come from seeds ``seed, seed + 1000, ...``, each into ``OUT/restarts/r<i>/`` and each evaluated on the
same held-out split of the *labelled* data (``eval_data``, or ``eval_fraction`` of the problems split
with ``seed`` for every restart), and keeps the best by ``select_metric``: step AUROC against the
held-out labels for a PRM, held-out loss for an ORM or an LM, among the runs that did not stall (the
plateau check of :func:`prmkit.train.plateau.plateau_check`: a held-out loss no better than the base
rate's; a stalled run is kept only when every run stalled). Never anything the labels do not give
(the lab's oracle is not consulted). The chosen run is moved to ``OUT``; ``OUT/restarts.json`` lists
every restart's metrics and the choice. A rerun resumes: finished restarts are kept, an interrupted one
resumes from its checkpoint.

>>> pick([{"step_auroc": 0.7}, {"step_auroc": 0.9}, {"step_auroc": float("nan")}], "step_auroc")
1
>>> pick([{"eval_loss": 0.5}, {"eval_loss": 0.4}], "eval_loss")
1
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

from prmkit.train.early_stop import HIGHER_IS_BETTER, selection_metric

SEED_STRIDE = 1000


def pick(metrics: list[dict], metric: str) -> int:
    """Index of the best run by ``metric`` (NaN or missing never wins; the first of equals). Runs that the
    plateau check caught (they learned the base rate only) are rejected first, unless every run was.

    >>> pick([{"step_auroc": 0.9, "plateau": True}, {"step_auroc": 0.8, "plateau": False}], "step_auroc")
    1
    """
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
    scores = [sign * m.get(metric, math.nan) for m in metrics]
    valid = [i for i, s in enumerate(scores) if not math.isnan(s)]
    if any(not metrics[i].get("plateau") for i in valid):
        valid = [i for i in valid if not metrics[i].get("plateau")]
    if not valid:
        raise ValueError(f"no restart has a held-out {metric}: is the held-out split empty?")
    return max(valid, key=lambda i: (scores[i], -i))


def train_with_restarts(cfg, train_once) -> dict:
    """Train ``cfg.restarts`` runs with ``train_once(cfg_i)``, move the best to ``cfg.out``; its metrics."""
    out = Path(cfg.out)
    recipe = _recipe(cfg)
    if cfg.resume and (out / "restarts.json").is_file():
        record = json.loads((out / "restarts.json").read_text())
        if record.get("recipe") == recipe:
            return record["chosen_metrics"]
    if not cfg.resume or _recorded_recipe(out) not in (None, recipe):
        shutil.rmtree(out / "restarts", ignore_errors=True)  # not to resume: a fresh set of restarts
    if not cfg.eval_data and cfg.eval_fraction <= 0:
        raise ValueError("restarts need held-out labelled data to choose on: set eval_data or eval_fraction > 0")
    metric = selection_metric(cfg)
    (out / "restarts").mkdir(parents=True, exist_ok=True)
    if _is_main():
        (out / "restarts" / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")
    runs = []
    for r in range(cfg.restarts):
        metrics = train_restart(cfg, r, train_once)
        if "stopped_at" in metrics:  # --stop-after: the whole job stops here, resumable
            return metrics
        runs.append({"seed": restart_config(cfg, r).seed, **metrics})
    best = pick(runs, metric)
    from accelerate import PartialState

    state = PartialState()
    if state.is_main_process:  # under several processes, one moves the files while the others wait
        _promote(out / "restarts" / f"r{best}", out)
        record = {"metric": metric, "chosen": best, "runs": runs, "chosen_metrics": runs[best], "recipe": recipe,
                  "rejected": [i for i, r in enumerate(runs) if r.get("plateau")]}
        (out / "restarts.json").write_text(json.dumps(record, indent=2) + "\n")
    state.wait_for_everyone()
    return runs[best]


def restart_config(cfg, r: int, folder: str | None = None):
    """Restart ``r``'s own config: one run, seed ``seed + 1000 r``, the held-out split of ``seed`` (every restart
    is chosen on the same split), into ``folder`` (default ``OUT/restarts/r<r>``)."""
    return dataclasses.replace(cfg, restarts=1, out=str(folder or Path(cfg.out) / "restarts" / f"r{r}"),
                               seed=cfg.seed + SEED_STRIDE * r,
                               split_seed=cfg.split_seed if cfg.split_seed is not None else cfg.seed)


def train_restart(cfg, r: int, train_once, folder: str | None = None) -> dict:
    """Train restart ``r`` of ``cfg`` (into ``folder``, default ``OUT/restarts/r<r>``) unless its
    ``final_metrics.json`` says it is done; its metrics. Restarts are independent runs, so they may run apart (the
    lab runs them as jobs of their own, in parallel) and be put into ``OUT/restarts/`` for
    :func:`train_with_restarts` to choose among."""
    run_cfg = restart_config(cfg, r, folder)
    done = Path(run_cfg.out) / "final_metrics.json"
    if done.is_file():
        return json.loads(done.read_text())
    metrics = train_once(run_cfg)
    if "stopped_at" not in metrics and _is_main():
        done.write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


RUN_ONLY = ("progress", "resume", "stop_after", "tensorboard", "out")
"""Settings that change how a run is watched or stopped, not what it trains."""


def _recipe(cfg) -> dict:
    """What a set of restarts depends on: every setting but :data:`RUN_ONLY`."""
    return {k: v for k, v in cfg.to_dict().items() if k not in RUN_ONLY}


def _recorded_recipe(out: Path) -> dict | None:
    path = out / "restarts" / "recipe.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _is_main() -> bool:
    from accelerate import PartialState

    return PartialState().is_main_process


def _promote(chosen: Path, out: Path) -> None:
    """Move the chosen run's model files into ``out``; the restarts' folders are removed."""
    for item in chosen.iterdir():
        if item.name in ("checkpoints", "final_metrics.json"):
            continue
        target = out / item.name
        if target.is_dir():
            shutil.rmtree(target)
        item.replace(target)
    shutil.rmtree(out / "restarts")


__all__ = ["pick", "restart_config", "train_restart", "train_with_restarts"]
