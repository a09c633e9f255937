"""``prmkit lab run``: generate -> label -> pretrain (cached) -> train PRM and ORM -> score -> evaluate -> report.

Every model is trained by the product's loop (:func:`prmkit.train.loop.train`: the base by next-token
prediction, the reward models on labels and grades) and every pool is scored by :func:`prmkit.score.score_file`;
the scored pools are prmkit JSONL that ``prmkit eval bon`` reads, giving the report's numbers.

A run is a graph of *jobs* (:class:`~prmkit.lab.jobs.Node`, :mod:`prmkit.lab.jobs`); a job writes its outputs into ``RUN_DIR/seed-S/<job>/`` through a
temporary folder renamed into place, with a ``done.json`` holding the *key* (a hash of everything its
output depends on, the keys of the jobs it reads among them) and its compute time. A rerun skips every job
whose ``done.json`` carries the same key, so an interrupted run resumes where it stopped and a finished run
is re-reported in seconds; change a setting and exactly the jobs that depend on it run again.

===========  =====================================================  ===================================
stage        jobs (per seed unless said)                            outputs
===========  =====================================================  ===================================
data         generate eval, train, ood pools; label train           ``data/*.jsonl.gz``, ``stats.json``
base         pretrain the base model once for all seeds (cached     ``$PRMKIT_CACHE/lab-base/<key>/``,
             in the cache folder by config hash)                    ``RUN_DIR/base.json``
rm           ``prmkit train`` PRM and ORM (per label budget) with   ``restarts/<model>-r<i>/``,
             the base's surprise as features: each restart a job,   ``rm-<kind>-<budget>/model/``
             then the choice among them
rm-paper     the paper's arms: the set chosen by the equal-data     ``select-prm_paper-<budget>/``,
             PRM, then restarts and choice as above                 ``rm-<arm>-<budget>/model/``
score        per pool: the base's label-free scores (and its        ``scores/``,
             surprise, kept), one job per reward model              ``score-<pool>/<pool>.jsonl.gz``
             (``prmkit score``), then one merged file
evaluate     best-of-N, votes, pass@N with CIs; step AUROC          ``evaluate/*.json``
report       every seed: figures, tables, config, wall times       ``RUN_DIR/report.html``
===========  =====================================================  ===================================

Jobs run in ``jobs`` worker processes (one torch thread each: two threads fight on a shared 2-core
machine), each as soon as the jobs it reads are done (:meth:`~prmkit.lab.jobs.Runner.graph`), so no worker waits at a stage's
end while another finishes the stage's longest job; the main process shows one progress bar. A job's
numbers do not depend on which worker ran it or when: a restart trained alone is the run it would be
among the others (:func:`prmkit.train.restarts.train_restart`), and the surprise a scoring job reads is the
one the label-free job computed. With ``device`` CUDA, the same jobs run one at a time on the GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from prmkit.lab.arms import PAPER, WRONG_SHARE, count_of, kind_of, recipe_for
from prmkit.lab.config import RM_BASE, LabConfig, lab_format
from prmkit.lab.jobs import Node, Runner, finished, init_worker, is_done, key_of
from prmkit.stack import run_record

POOLS = ("eval", "ood")
RM_VERSION = 3
"""Part of the reward-model and score job keys: bumped when their outputs change meaning (2: the product path;
3: every arm validated on the shared validation split)."""
EVALUATE_VERSION = 6
"""Part of the evaluation jobs' key: bumped when an evaluation holds other numbers (4: the classes of best-of-N
picks, the paper PRM by product, both scores' per-problem curves; 5: a pick-share curve for every class, zeros
where a pool has none; 6: votes drawn in blocks of one ordering, every curve on the same draws, a pilot of 32
rounds), so a resumed run never keeps an older one."""
KINDS = ("prm", "orm")


# --- jobs -------------------------------------------------------------------------------------------

def job_data(out: Path, cfg: LabConfig, seed: int, device: str = "auto") -> dict:
    """Generate the eval, train and ood pools of ``seed`` and label the train pool; with the paper's arms,
    also ``orm_ratio`` x as many uniform samples of the training problems (``orm.jsonl.gz``: the paper
    ORM's data and the selector's candidates, graded by final answer only)."""
    from prmkit.io import write_records
    from prmkit.lab.labellers import label
    from prmkit.lab.pools import generate_pool
    from prmkit.lab.stats import pool_stats

    stats = {}
    for split in ("eval", "train", "ood"):
        pool = generate_pool(cfg, seed, split, device=device)
        write_records(out / f"{split}.jsonl.gz", pool)
        if split != "train":
            stats[split] = {k: v for k, v in pool_stats(pool).items() if not isinstance(v, dict)}
        else:
            write_records(out / "labelled.jsonl.gz", label(pool, cfg.labellers, seed))
    if cfg.paper_arms:
        orm = generate_pool(cfg, seed, "train", samples=cfg.train_samples * cfg.orm_ratio, device=device)
        write_records(out / "orm.jsonl.gz", orm)
        stats["orm"] = {k: v for k, v in pool_stats(orm).items() if not isinstance(v, dict)}
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return {"solutions": {k: v["solutions"] for k, v in stats.items()}}


def job_base(out: Path, cfg: LabConfig, progress: bool, device: str = "auto") -> dict:
    from prmkit.lab.base import ensure_base

    folder = ensure_base(cfg, progress=progress, log=lambda *a: None, device=device)
    info = json.loads((folder / "base.json").read_text())
    (out / "base.json").write_text(json.dumps({**info, "path": str(folder)}, indent=2) + "\n")
    return {"path": str(folder), "pretrain_seconds": info.get("seconds"), "final_loss": info.get("final_loss")}


def job_rm(out: Path, name: str, budget: int, cfg: LabConfig, seed: int, base_dir: str, data_dir: str,
           progress: bool, pools: tuple[str, ...] = (), device: str = "auto", select_dir: str = "",
           restart_dirs: tuple[str, ...] = (), prepared: str = "") -> dict:
    """Train reward model ``name`` (``prm``, ``orm`` or a paper arm: :mod:`prmkit.lab.arms`) on its data at
    ``budget`` labels into ``out/model``, validated on the seed's shared validation split (never trained
    on); score ``pools`` with it when asked (the lab run scores in its own stage, the budget study here).
    The paper's PRM takes the set a :func:`job_select` folder ``select_dir`` holds. ``restart_dirs``: the
    :func:`job_restart` folders of its restarts, already trained (the lab run trains them in parallel) on the
    data :func:`job_restart_data` wrote in ``prepared``; this job then only chooses among them."""
    from prmkit.lab.rm import train_and_score

    init_worker()
    chosen = {}
    if select_dir:
        shutil.copytree(select_dir, out / "select", dirs_exist_ok=True, ignore=shutil.ignore_patterns("done.json"))
        chosen = json.loads((out / "select" / "selection.json").read_text())
    elif name == PAPER["prm"]:
        raise ValueError(f"{name}: its set is chosen by a job of its own (job_select); pass its folder as select_dir")
    if prepared:  # the data its restarts trained on, written once
        for file in ("train.jsonl.gz", "valid.jsonl.gz"):
            if (Path(prepared) / file).is_file():
                shutil.copyfile(Path(prepared) / file, out / file)
        rm = arm_recipe(name, budget, cfg, out)
    else:
        rm = arm_data(out, name, budget, cfg, seed, data_dir, out / "select")
    if restart_dirs:  # a partial folder of this key may hold restarts of another recipe: these replace them
        shutil.rmtree(out / "model" / "restarts", ignore_errors=True)
    for r, folder in enumerate(restart_dirs):
        shutil.copytree(Path(folder) / "run", out / "model" / "restarts" / f"r{r}",
                        ignore=shutil.ignore_patterns("checkpoints"))
    targets = {p: str(Path(data_dir) / f"{p}.jsonl.gz") for p in pools}
    info = train_and_score(out, kind_of(name), out / "train.jsonl.gz", rm, seed, base_dir, targets,
                           score_name(name, budget, cfg), progress, device)
    if restart_dirs:  # the restarts' own training time (and their features'), not just the choice's
        spent = sum(done_seconds(d) for d in [*restart_dirs, *([prepared] if prepared else [])])
        info["train_seconds"] = round(info["train_seconds"] + spent, 1)
    return {**info, "budget": budget, **({"selection": chosen} if chosen else {})}


def arm_recipe(name: str, budget: int, cfg: LabConfig, folder: Path):
    """The recipe arm ``name`` trains by (its step cap counted in passes over its data), validated on the split
    :func:`arm_data` wrote in ``folder/valid.jsonl.gz``, where it wrote one."""
    return validated_on(recipe_for(cfg.rm, count_of(name, budget, cfg)), folder / "valid.jsonl.gz")


def validated_on(rm, valid: Path | None):
    """``rm`` validated on the labelled split in file ``valid``, where the recipe reads held-out labels
    (:func:`uses_validation`) and the file exists; else ``rm`` as it is."""
    if valid is not None and Path(valid).is_file() and uses_validation(rm):
        return dataclasses.replace(rm, eval_data=str(valid))
    return rm


def arm_data(out: Path, name: str, budget: int, cfg: LabConfig, seed: int, data_dir: str, select_dir: Path):
    """Write arm ``name``'s training set (and the seed's validation split, when its recipe reads held-out
    labels) into ``out``; its recipe (:func:`arm_recipe`)."""
    from prmkit.io import write_records
    from prmkit.lab.arms import held_problems, training_set, validation_set

    # a recipe that reads held-out labels gets the seed's shared validation split; one that does not (the
    # studies': their design counts every label) trains on all
    held = held_problems(data_dir, seed) if uses_validation(recipe_for(cfg.rm, count_of(name, budget, cfg))) else set()
    write_records(out / "train.jsonl.gz", training_set(name, count_of(name, budget, cfg), data_dir, select_dir, held))
    (out / "valid.jsonl.gz").unlink(missing_ok=True)
    if held:
        write_records(out / "valid.jsonl.gz", validation_set(kind_of(name), budget, data_dir, held))
    return arm_recipe(name, budget, cfg, out)


def restart_recipe(folder: Path, name: str, budget: int, cfg: LabConfig, seed: int, base_dir: str, device: str):
    """Reward model ``name``'s training config on the data :func:`arm_data` wrote into ``folder``."""
    from prmkit.lab.rm import job_config

    rm = arm_recipe(name, budget, cfg, folder)
    return job_config(rm, kind_of(name), str(folder / "train.jsonl.gz"), str(folder / "model"), base_dir, seed, False,
                      device)


def job_restart_data(out: Path, name: str, budget: int, cfg: LabConfig, seed: int, base_dir: str, data_dir: str,
                     select_dir: str = "", device: str = "auto") -> dict:
    """Reward model ``name``'s training and validation sets for all its restarts, and (when its recipe reads
    features) the base's surprise on them in ``out/surprise.npz``, computed as the first restart would
    compute it (:func:`prmkit.train.loop.save_features_of`)."""
    from prmkit.train.loop import save_features_of
    from prmkit.train.restarts import restart_config

    init_worker()
    arm_data(out, name, budget, cfg, seed, data_dir, Path(select_dir) if select_dir else out)
    run_cfg = restart_recipe(out, name, budget, cfg, seed, base_dir, device)
    if not run_cfg.features:
        return {}
    return {"solutions": save_features_of(restart_config(run_cfg, 0, str(out / "run")), out / "surprise.npz")}


def job_restart(out: Path, name: str, budget: int, cfg: LabConfig, seed: int, base_dir: str, restart: int,
                prepared: str, device: str = "auto") -> dict:
    """Restart ``restart`` of reward model ``name`` alone, into ``out/run`` (:func:`prmkit.train.restarts.train_restart`:
    the same run as the ``restart``-th of :func:`job_rm`'s, so restarts may train in parallel and
    :func:`job_rm` choose among them), on the data and features :func:`job_restart_data` wrote in ``prepared``."""
    from prmkit.device import torch_device
    from prmkit.train.loop import features_from, train_once
    from prmkit.train.restarts import train_restart

    init_worker()
    run_cfg = restart_recipe(Path(prepared), name, budget, cfg, seed, base_dir, device)
    shared = (features_from(run_cfg, Path(prepared) / "surprise.npz", torch_device(device)) if run_cfg.features
              else contextlib.nullcontext())
    with shared:
        metrics = train_restart(run_cfg, restart, train_once, str(out / "run"))
    # a finished restart never resumes: its checkpoints (optimiser states, about 20 MB) would only fill the run
    # folder, as the restarts' folders did not when one job trained them all and kept the chosen one
    shutil.rmtree(out / "run" / "checkpoints", ignore_errors=True)
    return {"metrics": metrics}


def job_select(out: Path, cfg: LabConfig, seed: int, data_dir: str, selector: str, device: str = "auto") -> dict:
    """The paper PRM's set, chosen by ``selector`` (a model folder) and labelled, into ``out``
    (:func:`prmkit.lab.arms.select_convincing`), with what was chosen in ``out/selection.json``."""
    from prmkit.lab.arms import select_convincing

    init_worker()
    chosen = select_convincing(out, cfg, seed, data_dir, selector, device)
    (out / "selection.json").write_text(json.dumps(chosen, indent=2) + "\n")
    return {"selection": chosen}


def done_seconds(folder: str | Path) -> float:
    """The compute time a finished job folder recorded (its ``done.json``)."""
    return float(json.loads((Path(folder) / "done.json").read_text()).get("seconds", 0.0))


def uses_validation(rm) -> bool:
    """Whether a reward-model recipe reads held-out labels: to choose among restarts, to stop early, or to
    be evaluated during training (``eval_every``)."""
    return rm.restarts > 1 or rm.early_stop_patience > 0 or rm.eval_every > 0


def score_name(name: str, budget: int, cfg: LabConfig) -> str:
    """The score name of a reward model: ``prm`` / ``orm`` (or a paper arm's name) at the run's full label
    budget, else ``prmB`` / ``ormB``."""
    return name if budget == cfg.labelled else f"{name}{budget}"


def solution_score_name(name: str, budget: int, cfg: LabConfig) -> str:
    """The solution score a study ranks by: ``<name>_min`` for a PRM (:data:`prmkit.lab.study.core.AGGREGATION`),
    ``<name>`` for an ORM."""
    column = score_name(name, budget, cfg)
    return f"{column}_min" if name.startswith("prm") else column


def job_label_free(out: Path, pool: str, cfg: LabConfig, base_dir: str, pool_file: str, device: str = "auto") -> dict:
    """A pool with the base model's label-free scores (``out/<pool>.jsonl.gz``). When the reward models read
    the base's own surprise (``rm.features: surprise:base``, the recipe), the surprise computed on the way is
    kept in ``out/surprise.npz`` for every model's :func:`job_score_model`, so each solution's is computed once."""
    from prmkit.device import torch_device
    from prmkit.lab.likelihood import write_label_free
    from prmkit.model.features import SurpriseSource

    init_worker()
    source = SurpriseSource(base_dir, torch_device(device), keep=True)
    n = write_label_free(out / f"{pool}.jsonl.gz", pool_file, base_dir, lab_format(cfg.base.max_length),
                         torch_device(device), source)
    if shares_surprise(cfg):
        source.save(out / "surprise.npz")
    return {"solutions": n}


def shares_surprise(cfg: LabConfig) -> bool:
    """Whether the reward models read the base model's surprise (the label-free scores' own numbers)."""
    return cfg.rm.features == f"surprise:{RM_BASE}"


def job_score_model(out: Path, pool: str, cfg: LabConfig, base_dir: str, pool_file: str, label_free_dir: str,
                    name: str, model: str, device: str = "auto") -> dict:
    """One pool scored by one reward model (``prmkit score``) into ``out/<pool>.jsonl.gz`` under score name
    ``name``, reading the base's surprise from :func:`job_label_free`'s folder where the model shares it."""
    from prmkit.device import torch_device
    from prmkit.lab.rm import lab_score_config
    from prmkit.model.features import SurpriseSource
    from prmkit.score import Scorer, score_file

    init_worker()
    on, source = torch_device(device), None
    if shares_surprise(cfg):
        source = SurpriseSource(base_dir, on, keep=True)
        source.load(Path(label_free_dir) / "surprise.npz")
    scorer = Scorer(model, device=on, features=source)
    info = score_file(model, pool_file, out / f"{pool}.jsonl.gz", lab_score_config(name, device=device), scorer)
    return {"solutions": info["scored"], "model": model}


def job_merge(out: Path, pool: str, label_free_dir: str, scored: dict[str, str]) -> dict:
    """The pool's label-free records with every model's scores (``scored``: score name -> its
    :func:`job_score_model` folder), in ``out/<pool>.jsonl.gz``: the file the evaluation reads."""
    from prmkit.lab.scoring import merge_scored

    files = [Path(scored[name]) / f"{pool}.jsonl.gz" for name in sorted(scored)]
    n = merge_scored(out / f"{pool}.jsonl.gz", Path(label_free_dir) / f"{pool}.jsonl.gz", files)
    return {"solutions": n, "models": sorted(scored)}


def job_evaluate_pool(out: Path, cfg: LabConfig, pool: str, scored: str, seed: int) -> dict:
    """Every number of the report on one pool, from its scored file, into ``out/<pool>.json``; its headline."""
    from prmkit.lab.scoring import evaluate_scored

    result = evaluate_scored(scored, cfg, seed)
    (out / f"{pool}.json").write_text(json.dumps(result, indent=2) + "\n")
    return {k: result["headline"][k] for k in list(result["headline"])[:4]}


def job_evaluate(out: Path, parts: dict[str, str]) -> dict:
    """Every pool's numbers in ``out/<pool>.json``, gathered from ``parts`` (pool -> the :func:`job_evaluate_pool`
    folder that evaluated it: the lab run evaluates the pools in parallel)."""
    summary = {}
    for pool in POOLS:
        shutil.copyfile(Path(parts[pool]) / f"{pool}.json", out / f"{pool}.json")
        summary[pool] = {k: v for k, v in json.loads((Path(parts[pool]) / "done.json").read_text()).items()
                         if k not in ("key", "seconds")}
    return summary


# --- the pipeline -----------------------------------------------------------------------------------

def budgets(cfg: LabConfig) -> list[int]:
    """Label budgets of the run: the sweep's and the full train split, ascending."""
    return sorted({*cfg.label_budgets, cfg.labelled})


def rm_names(cfg: LabConfig) -> tuple[list, list]:
    """The reward models of a run: the equal-data pair at every budget, then (a stage of their own: the paper's
    PRM is chosen by the equal-data PRM) the paper's arms, the longer ORM first so that two workers share it."""
    equal = [(kind, budget) for budget in budgets(cfg)[::-1] for kind in KINDS]
    if not cfg.paper_arms:
        return equal, []
    return equal, [(PAPER["orm"], cfg.labelled), (PAPER["prm"], cfg.labelled)]


@dataclass
class SeedGraph:
    """The jobs of one seed (:class:`~prmkit.lab.jobs.Node`), built in the order the runner should start them: the
    longest chain first (the equal-data PRM, which chooses the paper PRM's set, then that set and that PRM),
    then the rest. Every key is derived from the keys of the jobs a job reads, as :func:`run_job` records
    them, so the keys are known before anything runs."""

    cfg: LabConfig
    seed: int
    run_dir: Path
    bkey: str
    base_dir: str
    base_folder: str
    inner: bool = False
    device: str = "auto"
    chain: list = field(default_factory=list)
    """The jobs of the longest chain (the selector, the paper PRM's set and the paper PRM): started first."""
    nodes: list = field(default_factory=list)
    """The seed's other jobs."""
    models: dict = field(default_factory=dict)
    """``(name, budget)`` -> ``(folder, key)`` of each reward model."""

    def __post_init__(self):
        self.folder = self.run_dir / f"seed-{self.seed}"
        self.data_dir = str(self.folder / "data")
        self.data_key = data_key_of(self.cfg, self.seed, self.bkey, self.device)
        self.needs = (self.data_dir, self.base_folder)

    def data(self) -> Node:
        return Node((self.data_dir, self.data_key, job_data, self.cfg, self.seed, self.device), "data")

    def reward_models(self) -> None:
        """Every reward model, the selector first; restarts as jobs of their own (they run in parallel)."""
        first, after = rm_names(self.cfg)
        selector = ("prm", self.cfg.labelled)
        paper_prm = [m for m in after if m[0] == PAPER["prm"]]
        for name, budget in [selector, *paper_prm, *[m for m in after if m not in paper_prm],
                             *[m for m in first if m != selector]]:
            stage = "rm-paper" if (name, budget) in after else "rm"
            into = self.chain if (name, budget) in (selector, *paper_prm) else self.nodes
            into += self.reward_model(name, budget, stage, self.models[selector] if (name, budget) in paper_prm
                                      else None)

    def reward_model(self, name: str, budget: int, stage: str, selector: tuple[str, str] | None) -> list[Node]:
        """The jobs of one reward model (``selector``: the folder and key of the model choosing its set)."""
        cfg, folder = self.cfg, str(self.folder / f"rm-{name}-{budget}")
        count = count_of(name, budget, cfg)
        recipe = recipe_for(cfg.rm, count)
        key = key_of(self.data_key, self.bkey, recipe, name, budget, cfg.labelled, RM_VERSION, count,
                     [selector[1], WRONG_SHARE, cfg.labellers] if selector else [])
        self.models[(name, budget)] = (folder, key)
        if is_done(Path(folder), key):  # nothing it would read needs to run
            return [finished(folder, key, stage)]
        nodes, needs, select = [], self.needs, ""
        if selector:
            select = str(self.folder / f"select-{name}-{budget}")
            nodes.append(Node((select, key_of(selector[1], self.data_key, WRONG_SHARE, cfg.labellers,
                                              cfg.train_samples, "select"), job_select, cfg, self.seed,
                               self.data_dir, str(Path(selector[0]) / "model"), self.device),
                              stage, (*needs, selector[0])))
            needs = (*needs, select)
        restarts = [str(self.folder / "restarts" / f"{name}-{budget}-r{r}")
                    for r in range(recipe.restarts if recipe.restarts > 1 else 0)]
        prepared = str(self.folder / "restarts" / f"{name}-{budget}-data") if restarts else ""
        if prepared:  # the data, and the base's surprise on it, written once for every restart
            nodes.append(Node((prepared, key_of(key, "data"), job_restart_data, name, budget, cfg, self.seed,
                               self.base_dir, self.data_dir, select, self.device), stage, needs))
        for r, restart in enumerate(restarts):
            nodes.append(Node((restart, key_of(key, "restart", r), job_restart, name, budget, cfg, self.seed,
                               self.base_dir, r, prepared, self.device), stage, (*needs, prepared)))
        nodes.append(Node((folder, key, job_rm, name, budget, cfg, self.seed, self.base_dir, self.data_dir,
                           self.inner, (), self.device, select, tuple(restarts), prepared), stage,
                          (*needs, *restarts, *([prepared] if prepared else []))))
        return nodes

    def scoring(self) -> dict[str, Node]:
        """Per pool: the label-free scores, one job per reward model, and their merge (the scored file)."""
        merges = {}
        for pool in POOLS:
            # the sweep's models score the held-out pool only: the sweep is about held-out problems
            models = {score_name(name, b, self.cfg): fk for (name, b), fk in self.models.items()
                      if pool == "eval" or b == self.cfg.labelled}
            folder = str(self.folder / f"score-{pool}")
            key = key_of(sorted(k for _, k in models.values()), self.data_key, self.bkey, pool, RM_VERSION)
            if is_done(Path(folder), key):
                merges[pool] = finished(folder, key, "score")
                continue
            pool_file = str(Path(self.data_dir) / f"{pool}.jsonl.gz")
            free = str(self.folder / "scores" / f"label-free-{pool}")
            self.nodes.append(Node((free, key_of(self.data_key, self.bkey, pool, self.cfg.base.max_length,
                                                 shares_surprise(self.cfg), RM_VERSION), job_label_free, pool,
                                    self.cfg, self.base_dir, pool_file, self.device), "score", self.needs))
            scored = {}
            for name, (model, model_key) in models.items():
                scored[name] = str(self.folder / "scores" / f"{pool}-{name}")
                self.nodes.append(Node((scored[name], key_of(model_key, self.data_key, self.bkey, pool, RM_VERSION),
                                        job_score_model, pool, self.cfg, self.base_dir, pool_file, free, name,
                                        str(Path(model) / "model"), self.device), "score", (model, free)))
            merges[pool] = Node((folder, key, job_merge, pool, free, scored), "score", (free, *scored.values()))
        self.nodes += merges.values()
        return merges

    def evaluation(self, merges: dict[str, Node]) -> dict[str, str]:
        """Each pool evaluated in a job of its own, then gathered in ``evaluate/`` (what the report reads)."""
        scored = {pool: str(Path(node.folder) / f"{pool}.jsonl.gz") for pool, node in merges.items()}
        key = key_of([merges[p].key for p in POOLS], self.cfg.vote_target_se, self.cfg.bootstrap, EVALUATE_VERSION)
        folder = str(self.folder / "evaluate")
        if is_done(Path(folder), key):
            self.nodes.append(finished(folder, key, "evaluate"))
            return scored
        parts = {pool: str(self.folder / "scores" / f"evaluate-{pool}") for pool in POOLS}
        for pool in POOLS:
            self.nodes.append(Node((parts[pool], key_of(key, pool), job_evaluate_pool, self.cfg, pool, scored[pool],
                                    self.seed), "evaluate", (merges[pool].folder,)))
        self.nodes.append(Node((folder, key, job_evaluate, parts), "evaluate",
                               tuple(parts.values())))
        return scored


def lab_nodes(cfg: LabConfig, seeds: list[int], run_dir: Path, progress: bool, jobs: int, device: str) -> list[Node]:
    """Every job of a lab run: the seeds' data and the base model, then each seed's reward models, scoring and
    evaluation (:class:`SeedGraph`)."""
    from prmkit.lab.base import base_key, base_path

    bkey = base_key(cfg.base, cfg, device)
    base = Node((str(run_dir / "base"), bkey, job_base, cfg, progress, device), "base")
    graphs = [SeedGraph(cfg, s, run_dir, bkey, str(base_path(cfg, device)), base.folder, progress and jobs == 1,
                        device) for s in seeds]
    for g in graphs:
        g.reward_models()
        g.evaluation(g.scoring())
    # every seed's longest chain before any seed's other jobs: a worker free early takes the next seed's chain
    return [*(g.data() for g in graphs), base, *(n for g in graphs for n in g.chain), *(n for g in graphs for n in g.nodes)]


MODEL_METRICS = ("step_auroc", "eval_loss", "eval_prior_loss", "plateau", "best_step", "last_step", "stopped_early")
"""What a summary keeps of each reward model's chosen run (its validation metrics and where it stopped)."""


def model_records(seed_dir: Path) -> dict:
    """Every reward model of a seed: its chosen run's validation metrics, how many restarts stalled, training
    time, and (the paper's PRM) the make-up of its selected set; from the job folders' ``done.json`` and
    ``restarts.json``."""
    out = {}
    for folder in sorted(Path(seed_dir).glob("rm-*")):
        done = json.loads((folder / "done.json").read_text())
        metrics = done.get("metrics", {})
        entry = {k: metrics[k] for k in MODEL_METRICS if k in metrics}
        restarts = folder / "model" / "restarts.json"
        if restarts.is_file():
            record = json.loads(restarts.read_text())
            entry.update(chosen=record["chosen"], restarts=len(record["runs"]), rejected=record.get("rejected", []))
        entry.update(train_seconds=done.get("train_seconds"), **({"selection": done["selection"]}
                                                                 if "selection" in done else {}))
        out[folder.name] = entry
    return out


def data_key_of(cfg: LabConfig, seed: int, bkey: str, device: str = "auto") -> str:
    """The cache key of a seed's data job: everything its pools and labels depend on (the lm policy's pools
    are its base model's, ``bkey``; the sft policy's its fine-tuned model's, keyed by the base and every
    ``sft`` setting; the rule-based policy's depend on no model)."""
    from prmkit.lab.policy import policy_key

    model = policy_key(cfg, device) if cfg.policy == "sft" else bkey
    policy = [] if cfg.policy == "rules" else [cfg.policy, model]
    return key_of(cfg.domain, cfg.ood, cfg.generator, cfg.labellers, [cfg.sizes(x) for x in ("eval", "train", "ood")],
                  seed, [cfg.paper_arms, cfg.orm_ratio] if cfg.paper_arms else [], *policy)


def run_lab(cfg: LabConfig, seeds: list[int], run_dir: str | os.PathLike, jobs: int = 2, progress: bool = True,
            command: str = "", log=print, device: str = "auto", threads: int = 1) -> dict:
    """Run every stage for every seed into ``run_dir``; return the summary (also ``summary.json``).

    ``device``: where training and scoring run (auto: CUDA when visible). On CUDA the heavy stages run
    one job at a time in this process (one GPU, no worker processes); on a CPU, ``jobs`` workers.
    ``threads``: torch threads per process (recorded in the summary, not in any cache key: it changes only
    the float kernels, and the lab's numbers must not depend on them)."""
    from prmkit.device import uses_cuda

    if uses_cuda(device):  # one GPU: its jobs run one at a time in this process
        jobs = 1
    record = run_record()  # the code as it starts: a commit made while it runs is not its source
    init_worker(threads)  # with one job, this process runs every job
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2, default=str) + "\n")
    start = time.perf_counter()
    with Runner(jobs=jobs, threads=threads, progress=progress, log=log) as runner:
        runner.graph(lab_nodes(cfg, seeds, run_dir, progress, jobs, device))
    from prmkit.lab.report import write_lab_report

    t = time.perf_counter()
    summary = write_lab_report(run_dir, cfg, seeds, runner.timings, command)
    runner.timings["report"] = {"wall_seconds": round(time.perf_counter() - t, 1)}
    summary["timings"] = runner.timings
    summary["workers"], summary["threads"] = jobs, threads
    summary["models"] = {str(s): model_records(run_dir / f"seed-{s}") for s in seeds}
    summary.update(record)
    summary["total_wall_seconds"] = round(time.perf_counter() - start, 1)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(f"report: {run_dir / 'report.html'} ({summary['total_wall_seconds']:.0f} s in all)")
    return summary


__all__ = ["SeedGraph", "budgets", "data_key_of", "lab_nodes", "run_lab"]
