"""``prmkit lab run``: generate -> label -> pretrain (cached) -> features -> train PRM and ORM -> score -> evaluate -> report.

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
features     the base model's per-token surprise, per pool          ``features-<pool>/features.npz``
rm           train PRM and ORM (per label budget), score the         ``rm-<kind>-<budget>/``: ``model.pt``,
             eval and ood pools with them                           ``probs-<pool>.npz``
score        scored pools as prmkit records                         ``score/<pool>.jsonl.gz``
evaluate     best-of-N, votes, pass@N with CIs; step AUROC          ``evaluate/*.json``
report       every seed: figures, tables, config, wall times       ``RUN_DIR/report.html``
===========  =====================================================  ===================================

Heavy jobs run in ``jobs`` worker processes (one torch thread each: two threads fight on a shared
2-core machine); the main process shows one progress bar per stage.
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

import numpy as np

from prmkit.lab.config import LabConfig
from prmkit.lab.domain import config_hash

POOLS = ("eval", "ood")
KINDS = ("prm", "orm")
PRM_AGGREGATIONS = ("min", "product", "last", "mean")


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

    The outputs are written to a temporary sibling renamed into place, with ``done.json`` last.
    """
    folder = Path(folder)
    if is_done(folder, key):
        return {**json.loads((folder / "done.json").read_text()), "cached": True}
    tmp = folder.with_name(f".{folder.name}.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    start = time.perf_counter()
    info = fn(tmp, *args) or {}
    done = {"key": key, "seconds": round(time.perf_counter() - start, 2), **info}
    (tmp / "done.json").write_text(json.dumps(done, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return {**done, "cached": False}


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"


@dataclass
class Runner:
    """Runs a stage's jobs (in ``jobs`` processes) and keeps the wall time of every stage."""

    jobs: int = 1
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
                                                 initializer=_init_worker)
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

def job_data(out: Path, cfg: LabConfig, seed: int) -> dict:
    """Generate the eval, train and ood pools of ``seed`` and label the train pool."""
    from prmkit.io import write_records
    from prmkit.lab.labellers import label
    from prmkit.lab.pools import generate_pool
    from prmkit.lab.stats import pool_stats

    stats = {}
    for split in ("eval", "train", "ood"):
        pool = generate_pool(cfg, seed, split)
        write_records(out / f"{split}.jsonl.gz", pool)
        if split != "train":
            stats[split] = {k: v for k, v in pool_stats(pool).items() if not isinstance(v, dict)}
        else:
            write_records(out / "labelled.jsonl.gz", label(pool, cfg.labellers, seed))
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return {"solutions": {k: v["solutions"] for k, v in stats.items()}}


def job_base(out: Path, cfg: LabConfig, progress: bool) -> dict:
    from prmkit.lab.base import ensure_base

    folder = ensure_base(cfg, progress=progress, log=lambda *a: None)
    info = json.loads((folder / "base.json").read_text())
    (out / "base.json").write_text(json.dumps({**info, "path": str(folder)}, indent=2) + "\n")
    return {"path": str(folder), "pretrain_seconds": info.get("seconds"), "final_loss": info.get("final_loss")}


def job_features(out: Path, base_dir: str, pool_file: str, max_length: int, progress: bool) -> dict:
    from prmkit.io import read_solutions
    from prmkit.lab.base import lab_format, load_base
    from prmkit.lab.features import token_features

    _init_worker()
    model, tok = load_base(base_dir)
    sols = list(read_solutions(pool_file))
    feats = token_features(model, tok, sols, lab_format(max_length), progress=progress,
                           desc=f"features {Path(pool_file).name}")
    feats.save(out / "features.npz")
    return {"solutions": len(sols), "tokens": int(feats.offsets[-1])}


def job_rm(out: Path, kind: str, budget: int, cfg: LabConfig, seed: int, base_dir: str, data_dir: str,
           feat_dirs: dict, progress: bool, pools: tuple[str, ...] = POOLS) -> dict:
    """Train one reward model on the first ``budget`` labelled solutions, then score ``pools`` with it."""
    from prmkit.io import read_solutions

    name = "labelled" if kind == "prm" else "train"
    sols = list(read_solutions(Path(data_dir) / f"{name}.jsonl.gz"))[:budget]
    targets = {p: (str(Path(data_dir) / f"{p}.jsonl.gz"), feat_dirs[p]) for p in pools}
    info = train_and_score(out, kind, sols, feat_dirs["train"], cfg, seed, base_dir, targets, progress,
                           desc=f"train {kind} ({budget} labels, seed {seed})")
    return {**info, "budget": budget}


def train_and_score(out: Path, kind: str, sols: list, train_features: str, cfg: LabConfig, seed: int, base_dir: str,
                    pools: dict[str, tuple[str, str]], progress: bool, desc: str = "") -> dict:
    """Train a ``kind`` reward model on ``sols`` and save it in ``out`` (``model.pt``, ``rm.json``); score
    each pool (name -> (solutions file, features folder)) into ``out/probs-<name>.npz``."""
    from prmkit.io import read_solutions
    from prmkit.lab.base import lab_format, load_base
    from prmkit.lab.features import Features
    from prmkit.lab.rm import rm_probabilities, save_rm, train_rm

    _init_worker()
    fmt = lab_format(cfg.base.max_length)
    start = time.perf_counter()
    model, info = train_rm(kind, sols, Features.load(Path(train_features) / "features.npz"), base_dir, cfg.rm,
                           seed, fmt, progress=progress, desc=desc)
    save_rm(out, model, info, cfg.rm)
    train_seconds = time.perf_counter() - start
    tok = load_base(base_dir)[1]
    for name, (pool_file, feat_dir) in pools.items():
        pool_sols = list(read_solutions(pool_file))
        feats = Features.load(Path(feat_dir) / "features.npz")
        probs = rm_probabilities(model, tok, pool_sols, feats, fmt, progress=progress, desc=f"score {name} ({kind})")
        save_probs(out / f"probs-{name}.npz", probs)
    return {"final_loss": info["final_loss"], "examples": info["data"]["examples"],
            "train_seconds": round(train_seconds, 1), "score_seconds": round(time.perf_counter() - start - train_seconds, 1)}


def save_probs(path: Path, probs: list[np.ndarray]) -> None:
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in probs])]).astype(np.int64)
    values = np.concatenate([p.reshape(-1, 2) for p in probs]) if probs else np.zeros((0, 2))
    np.savez(path, values=values.astype(np.float64), offsets=offsets)


def load_probs(path: Path) -> list[np.ndarray]:
    with np.load(path) as d:
        values, offsets = d["values"], d["offsets"]
    return [values[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def job_score(out: Path, cfg: LabConfig, base_dir: str, data_dir: str, feat_dirs: dict, rm_dirs: dict) -> dict:
    """Scored eval and ood pools as prmkit records (see :mod:`prmkit.lab.scoring`)."""
    from prmkit.lab.scoring import write_scored

    counts = {}
    for pool in POOLS:
        probs = {name: Path(d) / f"probs-{pool}.npz" for name, d in rm_dirs.items()}
        counts[pool] = write_scored(out / f"{pool}.jsonl.gz", cfg, base_dir, Path(data_dir) / f"{pool}.jsonl.gz",
                                    Path(feat_dirs[pool]) / "features.npz", {k: p for k, p in probs.items() if p.exists()})
    return {"solutions": counts}


def job_evaluate(out: Path, cfg: LabConfig, score_dir: str, seed: int) -> dict:
    from prmkit.lab.scoring import evaluate_scored

    summary = {}
    for pool in POOLS:
        result = evaluate_scored(Path(score_dir) / f"{pool}.jsonl.gz", cfg, seed)
        (out / f"{pool}.json").write_text(json.dumps(result, indent=2) + "\n")
        summary[pool] = {k: result["headline"][k] for k in list(result["headline"])[:4]}
    return summary


# --- the pipeline -----------------------------------------------------------------------------------

def budgets(cfg: LabConfig) -> list[int]:
    """Label budgets of the run: the sweep's and the full train split, ascending."""
    return sorted({*cfg.label_budgets, cfg.labelled})


def run_lab(cfg: LabConfig, seeds: list[int], run_dir: str | os.PathLike, jobs: int = 2, progress: bool = True,
            command: str = "", log=print) -> dict:
    """Run every stage for every seed into ``run_dir``; return the summary (also ``summary.json``)."""
    _init_worker()  # this process runs the single-job stages (the base model's pretraining among them)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2, default=str) + "\n")
    runner = Runner(jobs=jobs, progress=progress, log=log)
    start = time.perf_counter()
    try:
        sd = {s: run_dir / f"seed-{s}" for s in seeds}
        data_key = {s: key_of(cfg.domain, cfg.ood, cfg.generator, cfg.labellers,
                              [cfg.sizes(x) for x in ("eval", "train", "ood")], s) for s in seeds}
        runner.stage("data", [(str(sd[s] / "data"), data_key[s], job_data, cfg, s) for s in seeds])
        from prmkit.lab.base import base_key

        bkey = base_key(cfg.base, cfg)
        base_info = runner.stage("base", [(str(run_dir / "base"), bkey, job_base, cfg, progress)])[0]  # in this process
        base_dir = base_info["path"]
        inner = progress and jobs == 1
        fcalls, fdirs = [], {s: {} for s in seeds}
        for s in seeds:
            for pool in ("train", *POOLS):
                folder = sd[s] / f"features-{pool}"
                fdirs[s][pool] = str(folder)
                fcalls.append((str(folder), key_of(data_key[s], bkey, pool, cfg.base.max_length), job_features,
                               base_dir, str(sd[s] / "data" / f"{pool}.jsonl.gz"), cfg.base.max_length, inner))
        runner.stage("features", fcalls)
        rcalls, rdirs = [], {s: {} for s in seeds}
        for s in seeds:
            for budget in budgets(cfg)[::-1]:
                for kind in KINDS:
                    folder = sd[s] / f"rm-{kind}-{budget}"
                    rdirs[s][f"{kind}@{budget}"] = str(folder)
                    key = key_of(data_key[s], bkey, cfg.rm, kind, budget, cfg.base.max_length)
                    pools = POOLS if budget == cfg.labelled else ("eval",)  # the sweep is about held-out problems
                    rcalls.append((str(folder), key, job_rm, kind, budget, cfg, s, base_dir, str(sd[s] / "data"),
                                   fdirs[s], inner, pools))
        runner.stage("rm", rcalls)
        rm_keys = {s: [json.loads((Path(d) / "done.json").read_text())["key"] for d in rdirs[s].values()] for s in seeds}
        runner.stage("score", [(str(sd[s] / "score"), key_of(rm_keys[s], data_key[s], bkey, cfg.labelled, 2),
                                job_score, cfg, base_dir, str(sd[s] / "data"), fdirs[s], rdirs[s]) for s in seeds])
        score_keys = {s: json.loads((sd[s] / "score" / "done.json").read_text())["key"] for s in seeds}
        runner.stage("evaluate", [(str(sd[s] / "evaluate"),
                                   key_of(score_keys[s], cfg.vote_target_se, cfg.bootstrap, 2),
                                   job_evaluate, cfg, str(sd[s] / "score"), s) for s in seeds])
    finally:
        runner.close()
    from prmkit.lab.report import write_lab_report

    t = time.perf_counter()
    summary = write_lab_report(run_dir, cfg, seeds, runner.timings, command)
    runner.timings["report"] = {"wall_seconds": round(time.perf_counter() - t, 1)}
    summary["timings"] = runner.timings
    summary["total_wall_seconds"] = round(time.perf_counter() - start, 1)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(f"report: {run_dir / 'report.html'} ({summary['total_wall_seconds']:.0f} s in all)")
    return summary


__all__ = ["budgets", "config_hash", "key_of", "run_job", "run_lab", "train_and_score"]
