"""A study killed part-way resumes where it stopped (issue 33, "studies that run in pieces"): the real command in
a process of its own, killed with SIGKILL while a reward model trains, then run again. The finished data job is
not redone, the killed job's checkpoints are picked up, and the study ends with every output."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TINY = ["--set", "budget.budgets=64,128", "--set", "budget.rm_steps=60", "--set", "budget.eval_problems=8",
        "--set", "budget.eval_samples=4", "--set", "bootstrap=20", "--set", "rm.save_every=10"]
"""The budget study at a size where one reward model trains for some seconds, checkpointing as it goes."""


def command(out: Path, workers: int = 1) -> list[str]:
    return [sys.executable, "-m", "prmkit", "lab", "study", "budget", "--preset", "quick", "--seeds", "0",
            *TINY, "--out-dir", str(out), "--workers", str(workers), "--no-progress"]


def wait_for(condition, proc, timeout: float = 600.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the study ended (rc {proc.returncode}) before it could be killed part-way")
        if time.monotonic() > end:
            raise AssertionError("the study never reached the point to kill it at")
        time.sleep(0.2)


def alive(group: int) -> list[int]:
    """The processes of session ``group`` still running (zombies are gone)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,sid=,stat="], check=False, capture_output=True, text=True).stdout.split()
    return [int(pid) for pid, sid, stat in zip(out[::3], out[1::3], out[2::3]) if int(sid) == group and "Z" not in stat]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGKILL, every process", "SIGTERM, the command alone, its workers training"])
def test_a_study_killed_while_a_model_trains_resumes_where_it_stopped(tmp_path, lab_cache, how):
    """SIGKILL of the whole group, as a crash; SIGTERM of the command alone, as ``kill`` or a scheduler sends it:
    the command stops its workers at once and exits (before, it waited while they trained to the end, and a run
    that seemed gone went on writing into its folder)."""
    env = {**os.environ, "PRMKIT_CACHE": str(lab_cache)}
    root = tmp_path / "study-budget" / "seed-0"
    log = open(tmp_path / "first.log", "w")
    term = how.startswith("SIGTERM")
    proc = subprocess.Popen(command(tmp_path, 2 if term else 1), env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        def training_checkpointed() -> bool:  # a reward model's partial folder holds a complete checkpoint
            return any(root.glob(".rm-*.part/**/checkpoints/step-*/COMPLETE"))

        wait_for(training_checkpointed, proc)
        if term:
            os.kill(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=30) == 143  # SIGTERM as the CLI ends on it; its models had most of 60 steps left
            deadline = time.monotonic() + 15
            while alive(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not alive(proc.pid), "a worker outlived the command"
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None or alive(proc.pid):
            with contextlib.suppress(ProcessLookupError):  # the group may have gone meanwhile
                os.killpg(proc.pid, signal.SIGKILL)
    data_done = json.loads((root / "data" / "done.json").read_text())
    partial = [p.name for p in root.glob(".rm-*.part")]
    assert partial and not (tmp_path / "study-budget" / "summary.json").exists()

    again = subprocess.run(command(tmp_path), env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    summary = json.loads((tmp_path / "study-budget" / "summary.json").read_text())
    assert summary["timings"]["data"]["ran"] == 0  # the finished job is kept as it was
    assert json.loads((root / "data" / "done.json").read_text()) == data_done
    assert not list(root.glob(".*.part"))  # every partial folder finished and renamed into place
    for name in partial:
        assert (root / name[1:-len(".part")] / "done.json").is_file()
    assert "resumed from" in again.stdout + again.stderr  # the killed model went on from its checkpoint
    assert set(summary["accuracy"]) >= {"prm", "orm"}
