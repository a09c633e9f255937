"""The lab run as a graph of jobs (:meth:`prmkit.lab.run.Runner.graph`): every job starts once the jobs it reads
are done, workers stay busy across what used to be stage barriers, and a finished job is never run again.

Also the pieces the graph needs to run a reward model's restarts apart and to share the base model's surprise
between processes: a restart trained alone equals the same restart trained by ``restarts: k``, and features
saved by one process are the numbers another would compute.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from prmkit.lab.jobs import Node, Runner


def _write(out: Path, name: str, reads: tuple[str, ...] = ()) -> dict:
    """A job that records when it ran and what it read (every input must already be done)."""
    seen = [json.loads((Path(r) / "done.json").read_text())["name"] for r in reads]
    time.sleep(0.05)
    (out / "out.txt").write_text(name)
    return {"name": name, "read": seen, "at": time.time()}


def _node(tmp: Path, name: str, stage: str, after: tuple[str, ...] = ()) -> Node:
    reads = tuple(str(tmp / a) for a in after)
    return Node((str(tmp / name), f"key-{name}", _write, name, reads), stage, reads)


def test_a_job_starts_only_after_what_it_reads_and_each_runs_once(tmp_path):
    nodes = [_node(tmp_path, "data", "data"), _node(tmp_path, "base", "base"),
             _node(tmp_path, "rm", "rm", ("data", "base")), _node(tmp_path, "score", "score", ("rm", "data")),
             _node(tmp_path, "eval", "evaluate", ("score",))]
    runner = Runner(jobs=1, progress=False, log=lambda *a: None)
    done = runner.graph(nodes)
    assert done[str(tmp_path / "eval")]["read"] == ["score"]
    assert done[str(tmp_path / "score")]["read"] == ["rm", "data"]
    at = {n: done[str(tmp_path / n)]["at"] for n in ("data", "base", "rm", "score", "eval")}
    assert at["data"] < at["rm"] and at["base"] < at["rm"] < at["score"] < at["eval"]
    assert list(runner.timings) == ["data", "base", "rm", "score", "evaluate"]
    assert all(t["ran"] == 1 for t in runner.timings.values())
    again = Runner(jobs=1, progress=False, log=lambda *a: None)
    assert again.graph(nodes)[str(tmp_path / "eval")]["cached"] is True
    assert all(t["ran"] == 0 and t["jobs"] == 1 for t in again.timings.values())


def test_of_the_jobs_ready_the_first_listed_runs_first(tmp_path):
    nodes = [_node(tmp_path, "a", "s"), _node(tmp_path, "late", "s", ("a",)), _node(tmp_path, "b", "s"),
             _node(tmp_path, "c", "s")]
    done = Runner(jobs=1, progress=False, log=lambda *a: None).graph(nodes)
    order = sorted(done, key=lambda f: done[f]["at"])
    assert [Path(f).name for f in order] == ["a", "late", "b", "c"]  # "late" is ready before b and listed first


def test_two_workers_overlap_stages_and_the_stage_wall_spans_its_jobs(tmp_path):
    nodes = [_node(tmp_path, f"x{i}", "x") for i in range(3)] + [_node(tmp_path, "y", "y", ("x0",))]
    runner = Runner(jobs=2, progress=False, log=lambda *a: None)
    try:
        done = runner.graph(nodes)
    finally:
        runner.close()
    assert done[str(tmp_path / "y")]["read"] == ["x0"]
    assert runner.timings["x"]["jobs"] == 3 and runner.timings["x"]["ran"] == 3
    assert runner.timings["x"]["job_seconds"] >= 0.15


def test_a_graph_that_waits_on_itself_or_on_nothing_is_refused(tmp_path):
    runner = Runner(jobs=1, progress=False, log=lambda *a: None)
    with pytest.raises(ValueError, match="no job of this run writes"):
        runner.graph([_node(tmp_path, "a", "s", ("missing",))])
    with pytest.raises(ValueError, match="wait on one another"):
        runner.graph([_node(tmp_path, "a", "s", ("b",)), _node(tmp_path, "b", "s", ("a",))])
    with pytest.raises(ValueError, match="two jobs write"):
        runner.graph([_node(tmp_path, "a", "s"), _node(tmp_path, "a", "t")])


def _slow(out: Path) -> dict:
    time.sleep(0.5)
    return {"name": "slow"}


def test_a_resumed_graph_starts_what_its_finished_jobs_make_ready_and_times_only_what_ran(tmp_path):
    first = [_node(tmp_path, "x", "s"), _node(tmp_path, "y", "s", ("x",))]
    Runner(jobs=1, progress=False, log=lambda *a: None).graph(first)
    slow = Node((str(tmp_path / "slow"), "k", _slow), "t")
    later = [*first, slow, _node(tmp_path, "z", "s", ("y", "slow")), _node(tmp_path, "w", "u", ("z",))]
    for jobs in (1, 2):
        for folder in ("slow", "z", "w"):
            shutil.rmtree(tmp_path / folder, ignore_errors=True)
        runner = Runner(jobs=jobs, progress=False, log=lambda *a: None)
        try:
            done = runner.graph(later)
        finally:
            runner.close()
        assert done[str(tmp_path / "x")]["cached"] and not done[str(tmp_path / "z")]["cached"]
        assert done[str(tmp_path / "w")]["read"] == ["z"]
        assert runner.timings["s"]["ran"] == 1 and runner.timings["s"]["jobs"] == 3
        if jobs == 1:  # from z's start, not from when x and y were found done, before the slow job
            assert runner.timings["s"]["wall_seconds"] < 0.4


def test_saved_surprise_is_what_another_process_would_compute(tmp_path):
    import torch

    from prmkit.lab.base import build_model, lab_tokenizer
    from prmkit.lab.config import BaseConfig
    from prmkit.model.features import SurpriseSource

    torch.manual_seed(0)
    tok = lab_tokenizer()
    model = build_model(BaseConfig(hidden_size=32, layers=1, heads=2, intermediate_size=64), tok)
    model.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    rng = np.random.default_rng(0)
    tokens = [rng.integers(5, 900, size=int(n)).tolist() for n in rng.integers(3, 40, size=20)]
    first = SurpriseSource(tmp_path / "base", keep=True)
    expected = first.raw(tokens)
    first.save(tmp_path / "surprise.npz")
    second = SurpriseSource(tmp_path / "base", keep=True)
    second.load(tmp_path / "surprise.npz")
    second._forward = None  # every solution must come from the file: a forward pass here would fail
    assert all(np.array_equal(a, b) for a, b in zip(expected, second.raw(tokens), strict=True))
    np.savez(tmp_path / "old.npz", lengths=np.array([2]), ids=np.array([1, 2]), pairs=np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="old.npz: no 'source' array"):
        second.load(tmp_path / "old.npz")
    with np.load(tmp_path / "surprise.npz") as f:
        digest = str(f["source"])
    np.savez(tmp_path / "bad.npz", source=np.array(digest), lengths=np.array([3]), ids=np.array([1, 2]),
             pairs=np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="bad.npz: its token ids"):
        second.load(tmp_path / "bad.npz")
    other = build_model(BaseConfig(hidden_size=32, layers=1, heads=2, intermediate_size=64, seed=1), tok)
    other.save_pretrained(tmp_path / "other")
    tok.save_pretrained(tmp_path / "other")
    with pytest.raises(ValueError, match="features of another source model"):
        SurpriseSource(tmp_path / "other", keep=True).load(tmp_path / "surprise.npz")


def test_a_restart_trained_alone_is_the_same_run_as_under_restarts(toy_data, tmp_path):
    import dataclasses

    from prmkit.train.config import TrainConfig
    from prmkit.train.loop import train, train_once
    from prmkit.train.restarts import train_restart

    cfg = TrainConfig(data=str(toy_data / "train.jsonl"), eval_data=str(toy_data / "eval.jsonl"), max_steps=4,
                      batch_size=8, restarts=2, log_every=1, save_every=0, eval_every=0, progress=False,
                      tensorboard=False, max_length=128, out=str(tmp_path / "together"))
    together = train(cfg)
    record = json.loads((tmp_path / "together" / "restarts.json").read_text())
    alone = dataclasses.replace(cfg, out=str(tmp_path / "apart"))
    second = train_restart(alone, 1, train_once, str(tmp_path / "apart-r1"))
    assert second == {k: v for k, v in record["runs"][1].items() if k != "seed"}
    assert json.loads((tmp_path / "apart-r1" / "final_metrics.json").read_text()) == second
    assert together == record["runs"][record["chosen"]]


def _threads_in_training(out: Path, data: str) -> dict:
    """A lab job's view of its torch threads: at its start (``init_worker()``) and after a training run of a lab
    recipe (``job_config``) and a scoring config (``lab_score_config``) have set theirs."""
    import torch

    from prmkit.lab.config import lab_rm
    from prmkit.lab.jobs import init_worker
    from prmkit.lab.rm import job_config, lab_score_config
    from prmkit.train.loop import train_once

    init_worker()
    start = torch.get_num_threads()
    cfg = job_config(lab_rm(base_model="tiny-llama", features="", restarts=1, max_steps=1, batch_size=8, eval_every=0,
                            early_stop_patience=0, early_stop_min_steps=0, save_every=0, log_every=1),
                     "prm", data, str(out / "model"), "unused", 0, False, "cpu")
    train_once(cfg)
    assert lab_score_config().cpu_threads == 0
    return {"start": start, "after": torch.get_num_threads()}


def test_the_run_s_torch_threads_reach_training_in_every_job(toy_data, tmp_path):
    """``--threads 2``: a worker set up with two threads trains on two (the jobs and the training loop used
    to set one again, so the float-kernel check ran its models on one thread)."""
    node = Node((str(tmp_path / "job"), "k", _threads_in_training, str(toy_data / "train.jsonl")), "rm")
    runner = Runner(jobs=2, threads=2, progress=False, log=lambda *a: None)
    try:
        seen = runner.graph([node, _node(tmp_path, "other", "rm")])[node.folder]
    finally:
        runner.close()
    assert (seen["start"], seen["after"]) == (2, 2)


def _fail_after_marking(out: Path, marker: str) -> dict:
    """A job that fails, once it has left a mark that it ran."""
    Path(marker).write_text("failing")
    raise ValueError("this job fails")


def _sleep(out: Path, seconds: float) -> dict:
    time.sleep(seconds)
    return {}


KILLED_WHILE_WAITING = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from prmkit.cli import sigterm_as_exit
from prmkit.lab.jobs import Node, Runner
from test_lab_graph import _fail_after_marking, _sleep

tmp = Path({tmp!r})
with sigterm_as_exit(), Runner(jobs=2, progress=False, log=print) as runner:
    runner.graph([Node((str(tmp / "long"), "k-long", _sleep, 120.0), "s"),
                  Node((str(tmp / "bad"), "k-bad", _fail_after_marking, str(tmp / "failed")), "s")])
"""


@pytest.mark.timeout(120)
def test_a_kill_while_the_runner_waits_on_the_jobs_left_after_a_failure_stops_them(tmp_path):
    """After one job fails the runner waits for the others (their work is kept); a SIGTERM meanwhile must stop
    them and end the command, not leave it waiting on its workers for ever."""
    import os
    import signal
    import subprocess
    import sys

    script = KILLED_WHILE_WAITING.format(tests=str(Path(__file__).parent), tmp=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "failed").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(1.0)  # the failure reaches the runner, which now waits for the long job
        assert proc.poll() is None, proc.communicate()[0]
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) == 143, proc.communicate()[0]
        assert (tmp_path / ".long.part").is_dir()  # the stopped job's partial folder, for a rerun
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
