"""The studies' protocol: named jobs keyed by what they read, and one driver for every study.

A study is a :class:`Study`: its name, a check of its settings, its stages (named lists of :class:`Job`),
a summary read back from the jobs' outputs, and its pages. :func:`run_study` runs any of them the same
way: the run record taken as it starts, each stage through :class:`~prmkit.lab.run.Runner` (resumable:
:func:`~prmkit.lab.run.run_job`), the summary with the wall time of every stage, the pages, and
``summary.json`` last.

A job is a frozen dataclass; its cache key is the hash of its fields. A field that is another job, or an
:class:`Output` of one, enters as that job's key, so a job reruns when anything upstream of it changed and
never reads a stale input. A job that needs the lab's whole config holds it as ``cfg`` and names the parts
it reads in ``reads``; only those enter the key (a study setting of another stage does not rerun it).
``folder`` (where), ``progress`` and ``device`` (how) never enter it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from prmkit.lab.jobs import key_of
from prmkit.lab.run import RM_VERSION

UNKEYED = frozenset({"folder", "progress", "device", "cfg"})
"""Fields that say where and how a job runs, not what it computes (``cfg`` is keyed through ``reads``)."""


@dataclass(frozen=True)
class Job:
    """One resumable unit of a study: writes its outputs into the folder it is handed (renamed to ``folder``)."""

    folder: str
    progress: bool = dataclasses.field(default=False, kw_only=True)
    device: str = dataclasses.field(default="auto", kw_only=True)

    reads: ClassVar[tuple[str, ...]] = ()
    """Dotted paths of ``cfg`` the job reads (``"synthetic.threshold"``, ``"labellers"``)."""
    version: ClassVar[object] = 1
    """Bumped when the job's outputs change for the same inputs, so that old folders are recomputed."""

    @property
    def plan_kind(self) -> str:
        """What ``--plan`` prices together (:mod:`prmkit.lab.study.plan`): jobs of one kind cost alike per unit of
        :attr:`work`."""
        return type(self).__name__

    @property
    def work(self) -> float:
        """The job's size in its kind's units (samples drawn, optimiser steps): ``--plan`` scales the seconds of the
        done jobs of its kind by it. 1 where every job of a kind costs alike."""
        return 1.0

    @property
    def key(self) -> str:
        parts = {f.name: keyed(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name not in UNKEYED}
        if hasattr(self, "cfg"):
            if not self.reads:
                raise TypeError(f"{type(self).__name__} holds the config but names no field it reads")
            parts["cfg"] = {path: keyed(read(self.cfg, path)) for path in self.reads}
        return key_of(type(self).__name__, self.version, parts)

    def output(self, name: str) -> Output:
        return Output(self, name)

    def run(self, out: Path) -> dict:
        raise NotImplementedError

    def call(self) -> tuple:
        """The job as :meth:`~prmkit.lab.run.Runner.stage` runs it: ``(folder, key, fn)``."""
        return (self.folder, self.key, self.run)


@dataclass(frozen=True)
class Output:
    """A file a job writes: keyed by the job's key and its name, never by where the run folder is."""

    job: Job
    name: str

    @property
    def path(self) -> Path:
        return Path(self.job.folder) / self.name


def keyed(value):
    """``value`` as it enters a key: jobs by their keys, outputs by (key, name), dataclasses by their fields.

    >>> keyed({"a": (1, 2)}), keyed(Output(Job("somewhere"), "x.jsonl")) == keyed(Output(Job("elsewhere"), "x.jsonl"))
    ({'a': [1, 2]}, True)
    """
    if isinstance(value, Job):
        return value.key
    if isinstance(value, Output):
        return [value.job.key, value.name]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): keyed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [keyed(v) for v in value]
    return value


def read(cfg, path: str):
    """The value at dotted ``path`` of ``cfg``.

    >>> from prmkit.lab.config import preset
    >>> read(preset("quick"), "rm.max_steps") == preset("quick").rm.max_steps
    True
    """
    return functools.reduce(getattr, path.split("."), cfg)


@dataclass(frozen=True)
class Seeded(Job):
    """A job of one seed that reads the lab's config (the parts named in ``reads``)."""

    cfg: object = None
    seed: int = 0


@dataclass(frozen=True)
class Base(Job):
    """The lab's base model, in the lab's cache (shared with ``prmkit lab run``), keyed as the cache is."""

    cfg: object = None

    @property
    def key(self) -> str:
        from prmkit.lab.base import base_key

        return base_key(self.cfg.base, self.cfg, self.device)

    @property
    def model_dir(self) -> str:
        """Where the model lies once the job is done (the cache folder, not the job's)."""
        from prmkit.lab.base import base_path

        return str(base_path(self.cfg, self.device))

    def run(self, out: Path) -> dict:
        from prmkit.lab.run import job_base

        return job_base(out, self.cfg, self.progress, self.device)


@dataclass(frozen=True)
class Policy(Base):
    """The base fine-tuned into the sampling policy (``policy=sft``: :mod:`prmkit.lab.policy`), in the lab's
    cache, keyed as the cache is (the base's key and every ``sft`` setting)."""

    @property
    def key(self) -> str:
        from prmkit.lab.policy import policy_key

        return policy_key(self.cfg, self.device)

    @property
    def model_dir(self) -> str:
        from prmkit.lab.policy import policy_path

        return str(policy_path(self.cfg, self.device))

    def run(self, out: Path) -> dict:
        from prmkit.lab.policy import job_policy

        return job_policy(out, self.cfg, self.progress, self.device)


@dataclass(frozen=True)
class TrainScore(Job):
    """A lab reward model trained on every solution of ``train`` (``prm``: step ratings; ``orm``: the outcome
    each record carries, else its grade), then scoring ``pools`` (name -> file): ``model/`` and
    ``scored-<name>.jsonl.gz`` (:func:`prmkit.lab.rm.train_and_score`)."""

    kind: str = "prm"
    train: Output = None
    rm: object = None
    seed: int = 0
    base: Base = None
    pools: dict = dataclasses.field(default_factory=dict)

    version = RM_VERSION  # the lab's reward-model version: a change there recomputes every study's models

    @property
    def work(self) -> float:
        """The optimiser steps ``--plan`` expects it to train (:func:`~prmkit.lab.study.core.expected_steps`)."""
        from prmkit.lab.study.core import expected_steps

        return expected_steps(self.rm)

    @property
    def model_dir(self) -> str:
        return str(Path(self.folder) / "model")

    def run(self, out: Path) -> dict:
        from prmkit.lab.jobs import init_worker
        from prmkit.lab.rm import train_and_score

        init_worker()
        pools = {name: str(o.path) for name, o in self.pools.items()}
        return train_and_score(out, self.kind, str(self.train.path), self.rm, self.seed, self.base.model_dir, pools,
                               self.kind, self.progress, self.device)


@dataclass(frozen=True)
class Context:
    """Where a study's jobs go and how they run: the study folder, each seed's folder, the device, and whether
    a job shows its own progress bars (one worker only)."""

    root: Path
    seeds: tuple[int, ...]
    device: str = "auto"
    progress: bool = False
    inner: bool = False

    def seed_dir(self, seed: int) -> Path:
        return self.root / f"seed-{seed}"

    @property
    def how(self) -> dict:
        """How a heavy job runs: its own progress bars (one worker only) and the device."""
        return {"progress": self.inner, "device": self.device}

    def base(self, cfg, folder: str = "base") -> Base:
        return Base(str(self.root / folder), cfg, progress=self.progress, device=self.device)


def sampler(cfg, base: Base) -> Base | None:
    """What samples a study's pools (its pools are its samples, so they are keyed by it): ``base`` under the
    ``lm`` policy, the :class:`Policy` fine-tuned from it under ``sft``, else nothing but the rule-based
    generator."""
    if cfg.policy == "sft":
        return Policy(str(Path(base.folder).with_name("policy")), cfg, progress=base.progress, device=base.device)
    return base if cfg.policy == "lm" else None


Stages = list[tuple[str, list[Job]]]


@dataclass(frozen=True)
class Study:
    """A study as the driver runs it.

    ``prepare(cfg, seeds)`` checks the settings and returns the config the study runs (its reward-model
    steps, say); ``stages(cfg, ctx)`` lists the named stages; ``summarise(cfg, seeds, root)`` reads every
    number back from the jobs' outputs; ``write_pages(root, cfg, summary, command)`` writes the figures,
    ``section.html`` and ``report.html``. ``packages``: what ``summary["stack"]`` records beyond the lab's.
    """

    name: str
    stages: Callable[..., Stages]
    summarise: Callable[..., dict]
    write_pages: Callable[..., None]
    prepare: Callable = lambda cfg, seeds: cfg
    packages: tuple[str, ...] = ()


def run_study(study: Study, cfg, seeds: list[int], run_dir, jobs: int = 2, progress: bool = True,
              command: str = "", log=print, device: str = "auto") -> dict:
    """Run ``study`` for ``seeds`` into ``RUN_DIR/study-<name>/``; return its summary (also ``summary.json``)."""
    from prmkit.lab.jobs import Runner, init_worker
    from prmkit.lab.study.core import rm_protocol
    from prmkit.stack import run_record

    record = run_record(study.packages)  # the code as it starts: a commit made while it runs is not its source
    cfg = study.prepare(cfg, list(seeds))
    init_worker()
    root = Path(run_dir) / f"study-{study.name}"
    root.mkdir(parents=True, exist_ok=True)
    previous = _read_json(root / "summary.json")
    write_json(root / "config.json", dataclasses.asdict(cfg))
    ctx = Context(root, tuple(seeds), device, progress, progress and jobs == 1)
    start = time.perf_counter()
    with Runner(jobs=jobs, progress=progress, log=log) as runner:
        keys = []
        for name, stage in study.stages(cfg, ctx):
            runner.stage(name, [job.call() for job in stage])
            keys += [job.key for job in stage]
    t = time.perf_counter()
    summary = study.summarise(cfg, list(seeds), root)
    runner.timings["evaluate"] = {"wall_seconds": round(time.perf_counter() - t, 1)}
    summary.update(timings=runner.timings, **record, command=command, rm=rm_protocol(cfg.rm),
                   total_wall_seconds=round(time.perf_counter() - start, 1))
    summary["jobs_key"] = hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]
    summary.update(work_of(previous, summary))
    study.write_pages(root, cfg, summary, command)
    write_json(root / "summary.json", summary)
    log(f"{study.name} study: {root / 'report.html'} ({summary.get('rerun', summary)['total_wall_seconds']:.0f} s in all)")
    return summary


def work_of(previous: dict | None, summary: dict) -> dict:
    """What a rerun that ran no job keeps of the run that did the work: that run's wall times (``timings``,
    ``total_wall_seconds``) and, as ``work``, its commit, command and stack; the rerun's own times and code go to
    ``rerun`` (a rerun re-reads finished jobs, with newer code perhaps: its summary is that code's reading of them).
    Only where the previous summary was written over the very same jobs (``jobs_key``, the digest of every job's
    key) and did work itself (or carries a ``work`` of its own); else nothing changes (``{}``).

    >>> done = {"timings": {"rm": {"ran": 4, "wall_seconds": 90.0}}, "total_wall_seconds": 95.0, "jobs_key": "k",
    ...         "commit": "a", "command": "x", "stack": {}}
    >>> now = {"timings": {"rm": {"ran": 0, "wall_seconds": 0.1}}, "total_wall_seconds": 2.0, "jobs_key": "k", "commit": "b"}
    >>> kept = work_of(done, now)
    >>> kept["timings"] == done["timings"], kept["work"]["commit"], kept["rerun"]["commit"]
    (True, 'a', 'b')
    >>> work_of({**done, "jobs_key": "other"}, now), work_of(None, now), work_of({**done, "timings": now["timings"]}, now)
    ({}, {}, {})
    """
    def ran(s: dict) -> int:
        return sum(t.get("ran", 0) for t in s.get("timings", {}).values())

    if ran(summary) or not previous or previous.get("jobs_key") != summary.get("jobs_key"):
        return {}
    if not (ran(previous) or previous.get("work")):  # a rerun that carried nothing did no work to name
        return {}
    work = previous.get("work") or {k: previous.get(k) for k in ("commit", "command", "stack")}  # a rerun of a rerun
    return {"timings": previous["timings"], "total_wall_seconds": previous.get("total_wall_seconds"), "work": work,
            "rerun": {k: summary.get(k) for k in ("timings", "total_wall_seconds", "commit", "command", "stack")}}


def _read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def job_seconds(root: Path) -> dict:
    """Compute seconds of every job (from its ``done.json``), by folder relative to the study folder."""
    return {str(p.parent.relative_to(root)): json.loads(p.read_text()).get("seconds")
            for p in sorted(Path(root).glob("**/done.json"))}


def write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(value, indent=2, default=float) + "\n")
    tmp.replace(path)


__all__ = ["Base", "Context", "Job", "Output", "Seeded", "Study", "TrainScore", "job_seconds", "keyed", "read", "run_study", "sampler",
           "work_of", "write_json"]
