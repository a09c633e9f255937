"""``prmkit lab run``: generate -> label -> pretrain (cached) -> train PRM and ORM -> score -> evaluate -> report.

Every model is trained by the product's loop (:func:`prmkit.train.loop.train`: the base by next-token
prediction, the reward models on labels and grades) and every pool is scored by :func:`prmkit.score.score_file`;
the scored pools are prmkit JSONL that ``prmkit eval bon`` reads, giving the report's numbers.

Every stage is a set of *jobs*; a job writes its outputs into ``RUN_DIR/seed-S/<job>/`` through a
temporary folder renamed into place, with a ``done.json`` holding the *key* (a hash of everything its
output depends on) and its compute time. A rerun skips every job whose ``done.json`` carries the same
key, so an interrupted run resumes where it stopped and a finished run is re-reported in seconds;
change a setting and exactly the jobs that depend on it run again.

===========  =====================================================  ===================================
stage        jobs (per seed unless said)                            outputs
===========  =====================================================  ===================================
data         generate eval, train, ood pools; label train           ``data/*.jsonl.gz``, ``stats.json``
base         pretrain the base model once for all seeds (cached     ``$PRMKIT_CACHE/lab-base/<key>/``,
             in the cache folder by config hash)                    ``RUN_DIR/base.json``
rm           ``prmkit train`` PRM and ORM (per label budget) with   ``rm-<kind>-<budget>/model/``
             the base's surprise as features
score        per pool: the base's label-free scores and every       ``score-<pool>/<pool>.jsonl.gz``
             model's (``prmkit score``), one file

evaluate     best-of-N, votes, pass@N with CIs; step AUROC          ``evaluate/*.json``
report       every seed: figures, tables, config, wall times       ``RUN_DIR/report.html``
===========  =====================================================  ===================================

Heavy jobs run in ``jobs`` worker processes (one torch thread each: two threads fight on a shared
2-core machine); the main process shows one progress bar per stage. With ``device`` CUDA, the same
jobs run one at a time on the GPU.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from prmkit.lab.arms import PAPER, WRONG_SHARE, count_of, recipe_for
from prmkit.lab.config import LabConfig
from prmkit.lab.stack import run_record

POOLS = ("eval", "ood")
RM_VERSION = 3
"""Part of the reward-model and score job keys: bumped when their outputs change meaning (2: the product path;
3: every arm validated on the shared validation split)."""
KINDS = ("prm", "orm")


def key_of(*parts) -> str:
    """A 16-hex-digit hash of JSON-able parts (dataclasses by their fields)."""
    plain = [dataclasses.asdict(p) if dataclasses.is_dataclass(p) else p for p in parts]
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:16]


# --- the job mechanism ------------------------------------------------------------------------------

def is_done(folder: Path, key: str) -> bool:
    done = folder / "done.json"
    return done.is_file() and json.loads(done.read_text()).get("key") == key


def run_job(folder: str, key: str, fn, *args) -> dict:
    """Run ``fn(tmp_folder, *args)`` unless ``folder`` is done with ``key``; return its ``done.json``.

    The outputs are written to a temporary sibling renamed into place, with ``done.json`` last. A rerun
    after an interruption hands ``fn`` the same temporary folder as it was (when the key is the same),
    so a job that checkpoints resumes; ``fn`` must overwrite what it rewrites.
    """
    folder = Path(folder)
    if is_done(folder, key):
        return {**json.loads((folder / "done.json").read_text()), "cached": True}
    tmp = folder.with_name(f".{folder.name}.part")
    # an interrupted job of the same key keeps its partial outputs (a training job resumes from its
    # checkpoints and finished restarts); any other leftover is removed
    if not (tmp / ".key").is_file() or (tmp / ".key").read_text() != key:
        shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / ".key").write_text(key)
    start = time.perf_counter()
    info = fn(tmp, *args) or {}
    done = {"key": key, "seconds": round(time.perf_counter() - start, 2), **info}
    (tmp / "done.json").write_text(json.dumps(done, indent=2) + "\n")
    (tmp / ".key").unlink()
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return {**done, "cached": False}


def init_worker(threads: int = 1) -> None:
    """Set up a worker process (or this one) for lab jobs: ``threads`` torch threads (one by default: two
    fight on a shared 2-core machine; more change only the float kernels, which is how the lab checks that
    its numbers survive them), quiet transformers."""
    import torch
    import transformers

    torch.set_num_threads(threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    transformers.utils.logging.disable_progress_bar()  # one bar per stage is enough
    transformers.utils.logging.set_verbosity_error()  # a new head's "newly initialised" report is expected


def init_pool_worker(threads: int = 1) -> None:
    """:func:`init_worker` for a pool process, which also exits when the run that started it dies (Linux):
    a ``kill`` of the run would otherwise leave its workers training, holding the cores."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    init_worker(threads)


@dataclass
class Runner:
    """Runs a stage's jobs (in ``jobs`` processes) and keeps the wall time of every stage."""

    jobs: int = 1
    threads: int = 1
    progress: bool = True
    log: object = print
    timings: dict = field(default_factory=dict)
    _pool: object = None

    def stage(self, name: str, calls: list[tuple]) -> list[dict]:
        """Run ``calls`` (``(folder, key, fn, *args)``) and return their ``done.json`` in order."""
        from tqdm.auto import tqdm

        start = time.perf_counter()
        todo = [c for c in calls if not is_done(Path(c[0]), c[1])]
        bar = tqdm(total=len(calls), initial=len(calls) - len(todo), desc=f"stage {name}", unit="job",
                   disable=not self.progress, file=sys.stderr)
        if self.jobs > 1 and len(todo) > 1:
            if self._pool is None:
                import multiprocessing

                self._pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=init_pool_worker, initargs=(self.threads,))
            futures = [self._pool.submit(run_job, *c) for c in todo]
            for f in futures:
                f.result()
                bar.update(1)
        else:
            for c in todo:
                run_job(*c)
                bar.update(1)
        bar.close()
        out = [run_job(*c) for c in calls]  # all done now: reads done.json
        wall = time.perf_counter() - start
        self.timings[name] = {"wall_seconds": round(wall, 1), "jobs": len(calls), "ran": len(todo),
                              "job_seconds": round(sum(d.get("seconds", 0) for d in out), 1)}
        self.log(f"stage {name}: {len(todo)} of {len(calls)} jobs run, {wall:.1f} s"
                 + ("" if todo else " (all cached)"))
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


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
           progress: bool, pools: tuple[str, ...] = (), device: str = "auto", selector: str = "") -> dict:
    """Train reward model ``name`` (``prm``, ``orm`` or a paper arm: :mod:`prmkit.lab.arms`) on its data at
    ``budget`` labels into ``out/model``, validated on the seed's shared validation split (never trained
    on); score ``pools`` with it when asked (the lab run scores in its own stage, the budget study here).
    The paper's PRM first has its set chosen by ``selector`` (a model folder) and labelled, in ``out/select``."""
    import dataclasses

    from prmkit.io import write_records
    from prmkit.lab.arms import (
        count_of,
        held_problems,
        kind_of,
        select_convincing,
        training_set,
        validation_set,
    )
    from prmkit.lab.rm import train_and_score

    init_worker()
    kind, rm, chosen = kind_of(name), recipe_for(cfg.rm, count_of(name, budget, cfg)), {}
    if name == PAPER["prm"]:
        (out / "select").mkdir(exist_ok=True)
        chosen = select_convincing(out / "select", cfg, seed, data_dir, selector, device)
        (out / "select" / "selection.json").write_text(json.dumps(chosen, indent=2) + "\n")
    # a recipe that reads held-out labels gets the seed's shared validation split; one that does not (the
    # studies': their design counts every label) trains on all
    held = held_problems(data_dir, seed) if uses_validation(rm) else set()
    write_records(out / "train.jsonl.gz", training_set(name, count_of(name, budget, cfg), data_dir, out / "select", held))
    if held:
        write_records(out / "valid.jsonl.gz", validation_set(kind, budget, data_dir, held))
        rm = dataclasses.replace(rm, eval_data=str(out / "valid.jsonl.gz"))
    targets = {p: str(Path(data_dir) / f"{p}.jsonl.gz") for p in pools}
    info = train_and_score(out, kind, out / "train.jsonl.gz", rm, seed, base_dir, targets,
                           score_name(name, budget, cfg), progress, device)
    return {**info, "budget": budget, **({"selection": chosen} if chosen else {})}


def uses_validation(rm) -> bool:
    """Whether a reward-model recipe reads held-out labels: to choose among restarts, to stop early, or to
    be evaluated during training (``eval_every``)."""
    return rm.restarts > 1 or rm.early_stop_patience > 0 or rm.eval_every > 0


def score_name(name: str, budget: int, cfg: LabConfig) -> str:
    """The score name of a reward model: ``prm`` / ``orm`` (or a paper arm's name) at the run's full label
    budget, else ``prmB`` / ``ormB``."""
    return name if budget == cfg.labelled else f"{name}{budget}"


def solution_score_name(name: str, budget: int, cfg: LabConfig) -> str:
    """The solution score the lab ranks by: ``<name>_min`` for a PRM (:data:`prmkit.lab.study.core.AGGREGATION`),
    ``<name>`` for an ORM."""
    column = score_name(name, budget, cfg)
    return f"{column}_min" if name.startswith("prm") else column


def job_score(out: Path, pool: str, cfg: LabConfig, base_dir: str, pool_file: str, models: dict[str, str],
              progress: bool, device: str = "auto") -> dict:
    """One pool scored by the base model (label-free) and by every reward model (``prmkit score``, one
    :class:`~prmkit.score.Scorer` each), all in ``out/<pool>.jsonl.gz``. ``models``: score name -> model folder.

    When the reward models read the base's own surprise (``rm.features: surprise:base``, the recipe),
    they and the label-free scores share one feature source, so each solution's is computed once."""
    from prmkit.device import torch_device
    from prmkit.lab.config import RM_BASE, lab_format
    from prmkit.lab.likelihood import write_label_free
    from prmkit.lab.scoring import merge_scored
    from prmkit.model.features import SurpriseSource
    from prmkit.score import ScoreConfig, Scorer, score_file

    init_worker()
    on = torch_device(device)
    shared = cfg.rm.features == f"surprise:{RM_BASE}"
    source = SurpriseSource(base_dir, on, keep=shared)
    base_file = out / f".{pool}-label-free.jsonl.gz"
    write_label_free(base_file, pool_file, base_dir, lab_format(cfg.base.max_length), on, source)
    scored, seconds = [], {}
    for name, model in sorted(models.items()):
        start = time.perf_counter()
        path = out / f".{pool}-{name}.jsonl.gz"
        scorer = Scorer(model, device=on, features=source if shared else None)
        score_file(model, pool_file, path, ScoreConfig(name=name, batch_size=64, progress=progress, resume=False,
                                                       device=device), scorer)
        scored.append(path)
        seconds[name] = round(time.perf_counter() - start, 1)
    n = merge_scored(out / f"{pool}.jsonl.gz", base_file, scored)
    for path in [base_file, *scored]:
        path.unlink()
    return {"solutions": n, "models": sorted(models), "score_seconds": seconds}


def job_evaluate(out: Path, cfg: LabConfig, scored: dict[str, str], seed: int) -> dict:
    """Every number of the report from each pool's scored file (``scored``: pool -> file)."""
    from prmkit.lab.scoring import evaluate_scored

    summary = {}
    for pool in POOLS:
        result = evaluate_scored(scored[pool], cfg, seed)
        (out / f"{pool}.json").write_text(json.dumps(result, indent=2) + "\n")
        summary[pool] = {k: result["headline"][k] for k in list(result["headline"])[:4]}
    return summary


# --- the pipeline -----------------------------------------------------------------------------------

def done_key(folder) -> str:
    """The key a finished job folder was made under (its ``done.json``)."""
    return json.loads((Path(folder) / "done.json").read_text())["key"]


def budgets(cfg: LabConfig) -> list[int]:
    """Label budgets of the run: the sweep's and the full train split, ascending."""
    return sorted({*cfg.label_budgets, cfg.labelled})


def rm_calls(cfg: LabConfig, sd: dict, data_key: dict, bkey: str, base_dir: str, inner: bool, device: str,
             names: list[tuple[str, int]], selector: dict | None = None):
    """Jobs training the reward models ``names`` (``(name, budget)``) of every seed, and their folders by seed,
    then ``(name, budget)``; ``selector``: the seed's selector model folder, for the paper's PRM."""
    calls, dirs = [], {s: {} for s in sd}
    for s, seed_dir in sd.items():
        for name, budget in names:
            folder = seed_dir / f"rm-{name}-{budget}"
            dirs[s][(name, budget)] = folder
            chooser = str(selector[s]) if selector and name == PAPER["prm"] else ""
            count = count_of(name, budget, cfg)
            key = key_of(data_key[s], bkey, recipe_for(cfg.rm, count), name, budget, cfg.labelled, RM_VERSION, count,
                         [done_key(Path(chooser).parent), WRONG_SHARE, cfg.labellers] if chooser else [])
            calls.append((str(folder), key, job_rm, name, budget, cfg, s, base_dir, str(seed_dir / "data"), inner,
                          (), device, chooser))
    return calls, dirs


def rm_names(cfg: LabConfig) -> tuple[list, list]:
    """The reward models of a run: the equal-data pair at every budget, then (a stage of their own: the paper's
    PRM is chosen by the equal-data PRM) the paper's arms, the longer ORM first so that two workers share it."""
    equal = [(kind, budget) for budget in budgets(cfg)[::-1] for kind in KINDS]
    if not cfg.paper_arms:
        return equal, []
    return equal, [(PAPER["orm"], cfg.labelled), (PAPER["prm"], cfg.labelled)]


def score_calls(cfg: LabConfig, sd: dict, data_key: dict, bkey: str, base_dir: str, rm_dirs: dict, inner: bool,
                device: str):
    """The score stage's jobs (every seed and pool) and the scored file of each, by seed, then pool."""
    calls, scored = [], {s: {} for s in sd}
    for s, seed_dir in sd.items():
        for pool in POOLS:
            # the sweep's models score the held-out pool only: the sweep is about held-out problems
            models = {score_name(name, b, cfg): str(d / "model") for (name, b), d in rm_dirs[s].items()
                      if pool == "eval" or b == cfg.labelled}
            keys = sorted(done_key(rm_dirs[s][kb]) for kb in rm_dirs[s] if score_name(*kb, cfg) in models)
            folder = seed_dir / f"score-{pool}"
            scored[s][pool] = str(folder / f"{pool}.jsonl.gz")
            calls.append((str(folder), key_of(keys, data_key[s], bkey, pool, RM_VERSION), job_score, pool, cfg,
                          base_dir, str(seed_dir / "data" / f"{pool}.jsonl.gz"), models, inner, device))
    return calls, scored


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


def data_key_of(cfg: LabConfig, seed: int, bkey: str) -> str:
    """The cache key of a seed's data job: everything its pools and labels depend on (the lm policy's pools
    are its base model's, ``bkey``; the rule-based policy's depend on no model)."""
    policy = [] if cfg.policy == "rules" else [cfg.policy, bkey]
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
    init_worker(threads)  # this process runs the single-job stages (the base model's pretraining among them)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2, default=str) + "\n")
    runner = Runner(jobs=jobs, threads=threads, progress=progress, log=log)
    start = time.perf_counter()
    try:
        sd = {s: run_dir / f"seed-{s}" for s in seeds}
        from prmkit.lab.base import base_key

        bkey = base_key(cfg.base, cfg, device)
        data_key = {s: data_key_of(cfg, s, bkey) for s in seeds}
        runner.stage("data", [(str(sd[s] / "data"), data_key[s], job_data, cfg, s, device) for s in seeds])
        base_info = runner.stage("base", [(str(run_dir / "base"), bkey, job_base, cfg, progress, device)])[0]
        base_dir = base_info["path"]
        inner = progress and jobs == 1
        first, after = rm_names(cfg)
        rcalls, rdirs = rm_calls(cfg, sd, data_key, bkey, base_dir, inner, device, first)
        runner.stage("rm", rcalls)
        if after:  # the paper's arms: its PRM's set is chosen by the seed's equal-data PRM
            selector = {s: rdirs[s][("prm", cfg.labelled)] / "model" for s in seeds}
            pcalls, pdirs = rm_calls(cfg, sd, data_key, bkey, base_dir, inner, device, after, selector)
            runner.stage("rm-paper", pcalls)
            for s in seeds:
                rdirs[s].update(pdirs[s])
        scalls, scored = score_calls(cfg, sd, data_key, bkey, base_dir, rdirs, inner, device)
        runner.stage("score", scalls)
        score_keys = {s: [done_key(Path(f).parent) for f in scored[s].values()] for s in seeds}
        runner.stage("evaluate", [(str(sd[s] / "evaluate"),
                                   key_of(score_keys[s], cfg.vote_target_se, cfg.bootstrap, 3),
                                   job_evaluate, cfg, scored[s], s) for s in seeds])
    finally:
        runner.close()
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


__all__ = ["budgets", "data_key_of", "init_pool_worker", "init_worker", "key_of", "run_job", "run_lab"]
