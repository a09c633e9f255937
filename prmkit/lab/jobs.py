"""The lab's jobs and the runner that runs them: resumable jobs keyed by what their outputs depend on, and a
graph of them run on a pool of worker processes, each job as soon as the jobs it reads are done.

- :func:`run_job` runs ``fn(tmp_folder, *args)`` unless ``folder`` holds a ``done.json`` with the same key;
  outputs are written to a temporary sibling renamed into place, and an interrupted job of the same key
  resumes in its partial folder.
- :class:`Node` is a job of a graph (its call, its stage, the folders it reads); :meth:`Runner.graph` runs a
  list of them, the first ready in list order first, and times every stage; :meth:`Runner.stage` runs a
  list of jobs that read nothing of one another (the studies' stages).
- :func:`init_worker` and :func:`init_pool_worker` set up a process for lab jobs (its torch threads, quiet
  transformers, and a worker that exits with the run that started it).

``prmkit lab run`` (:mod:`prmkit.lab.run`) and every study (:mod:`prmkit.lab.study.protocol`) run on it.
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
from typing import Self


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


_threads = 1
"""The torch threads this process's lab jobs use: what :func:`init_worker` was last given (``--threads``)."""


def init_worker(threads: int | None = None) -> None:
    """Set up a worker process (or this one) for lab jobs: ``threads`` torch threads (one by default: two
    fight on a shared 2-core machine; more change only the float kernels, which is how the lab checks that
    its numbers survive them), quiet transformers. A job calls it with no ``threads`` and keeps what its
    worker was set up with; the lab's training and scoring configs then leave the count alone
    (``cpu_threads=0``), so ``--threads`` reaches every job."""
    import torch
    import transformers

    global _threads
    _threads = _threads if threads is None else threads
    torch.set_num_threads(_threads)
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


@dataclass(frozen=True)
class Node:
    """A job of a run's graph (:meth:`Runner.graph`): ``call`` is ``(folder, key, fn, *args)`` as
    :func:`run_job` takes it, ``stage`` the stage its wall time counts towards, ``after`` the folders of the
    jobs whose outputs it reads (it starts once they are done)."""

    call: tuple
    stage: str
    after: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return self.call[0]

    @property
    def key(self) -> str:
        return self.call[1]


def _check_graph(nodes: list[Node]) -> None:
    """Refuse two jobs writing one folder and a job reading a folder no job writes."""
    folders = [n.folder for n in nodes]
    if twice := sorted({f for f in folders if folders.count(f) > 1}):
        raise ValueError(f"two jobs write {twice[0]}")
    known = set(folders)
    for n in nodes:
        if missing := [a for a in n.after if a not in known]:
            raise ValueError(f"{n.folder} reads {missing}, which no job of this run writes")


def expect_done(out: Path) -> dict:
    """The job of a node kept only for its finished outputs (:func:`finished`): it never runs."""
    raise RuntimeError(f"{out}: a finished job was expected here (its done.json went missing while the run "
                       "started); run the command again")


def finished(folder: str, key: str, stage: str) -> Node:
    """A node for a job found done when the graph was built: what it read need not run again."""
    return Node((folder, key, expect_done), stage)


def stop_processes(processes, grace: float = 10.0) -> None:
    """Terminate ``processes`` (SIGTERM), then kill any still alive after ``grace`` seconds."""
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


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
            futures = [self._executor().submit(run_job, *c) for c in todo]
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

    def graph(self, nodes: list[Node]) -> dict[str, dict]:
        """Run ``nodes``, each as soon as the jobs it reads are done, ``jobs`` at a time; of those ready, the
        first in list order first (so a list that puts the longest chain first keeps every worker busy).
        Returns every node's ``done.json`` by folder. Stages overlap: a stage's wall time runs from its first
        job's start to its last job's end (jobs found done count only when nothing of the stage ran)."""
        from concurrent.futures import FIRST_COMPLETED, wait

        from tqdm.auto import tqdm

        _check_graph(nodes)
        self._totals = {n.stage: sum(m.stage == n.stage for m in nodes) for n in nodes}
        self._spans = {stage: {"jobs": 0, "ran": 0, "job_seconds": 0.0} for stage in self._totals}
        pending, running, done = list(nodes), {}, {}
        self._bar = tqdm(total=len(nodes), desc="lab run", unit="job", disable=not self.progress, file=sys.stderr)
        while pending or running:
            while self._start_ready(pending, running, done):  # until a pass starts and finishes nothing
                pass
            if not running:
                if pending:
                    raise ValueError(f"these jobs wait on one another: {[n.folder for n in pending]}")
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                node, start = running.pop(future)
                self._finish(done, node, future.result(), start)
        self._bar.close()
        self.timings.update({stage: self.timings.pop(stage) for stage in self._totals})  # in the list's order
        return done

    def _start_ready(self, pending: list, running: dict, done: dict) -> bool:
        """Finish the ready jobs found done, start the others while a worker is free (with one job: run the
        first here); whether anything finished or started."""
        for node in [n for n in pending if all(a in done for a in n.after)]:
            if is_done(Path(node.folder), node.key):
                pending.remove(node)
                self._finish(done, node, run_job(*node.call), None)
                return True
            if self.jobs > 1 and len(running) < self.jobs:
                pending.remove(node)
                running[self._executor().submit(run_job, *node.call)] = (node, time.perf_counter())
                return True
            if self.jobs <= 1 and not running:
                pending.remove(node)
                start = time.perf_counter()
                self._finish(done, node, run_job(*node.call), start)
                return True
        return False

    def _finish(self, done: dict, node: Node, info: dict, start: float | None) -> None:
        """Record a finished job (``start`` None: found done, not run); log its stage once all of it is done."""
        done[node.folder] = info
        span = self._spans[node.stage]
        span["jobs"] += 1
        span["job_seconds"] += info.get("seconds", 0)
        if start is not None:
            span["ran"] += 1
            span["start"] = min(span.get("start", start), start)
            span["end"] = time.perf_counter()
        self._bar.update(1)
        if span["jobs"] == self._totals[node.stage]:
            self._stage_done(node.stage, span)

    def _stage_done(self, name: str, span: dict) -> None:
        wall = span.get("end", 0.0) - span.get("start", 0.0)
        self.timings[name] = {"wall_seconds": round(wall, 1), "jobs": span["jobs"], "ran": span["ran"],
                              "job_seconds": round(span["job_seconds"], 1)}
        self.log(f"stage {name}: {span['ran']} of {span['jobs']} jobs run, {wall:.1f} s from its first start to its "
                 "last end" + ("" if span["ran"] else " (all cached)"))

    def _executor(self):
        if self._pool is None:
            import multiprocessing

            self._pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=init_pool_worker, initargs=(self.threads,))
        return self._pool

    def close(self, now: bool = False) -> None:
        """Shut the workers down: jobs not yet started never start; the running ones finish (after a job's
        failure their work is kept), or with ``now`` (the run was killed: SIGTERM, Ctrl-C) are stopped at once,
        their partial folders left for a rerun to resume. A kill that arrives while this waits stops them too.
        Waiting on a killed run's jobs kept them training for as long as they had left, writing into its folder
        after it seemed gone."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        # the pool's own processes, read before a shutdown forgets them: a library caller's other children are
        # not this runner's to stop (concurrent.futures keeps no public list of them)
        workers = list((getattr(pool, "_processes", None) or {}).values())
        try:
            pool.shutdown(wait=not now, cancel_futures=True)
        except BaseException:  # killed while waiting: left alone, the pool's exit would wait on its workers for ever
            now = True
            raise
        finally:
            if now:
                stop_processes(workers)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, error, trace) -> None:
        self.close(now=kind is not None and issubclass(kind, (KeyboardInterrupt, SystemExit)))


__all__ = [
    "Node",
    "Runner",
    "expect_done",
    "finished",
    "init_pool_worker",
    "init_worker",
    "is_done",
    "key_of",
    "run_job",
    "stop_processes",
]
