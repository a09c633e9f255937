"""``prmkit lab run`` killed while a reward model trains, then rerun: the outputs equal an uninterrupted run's.

A module of its own, at a small size (a narrow base, reward models of a few hundred steps), so that it runs
beside the quick preset's shared run rather than after it on the same worker (``--dist loadscope`` keeps a
module on one worker). Both runs use one worker process, as every lab run in the suite does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from prmkit.cli import main

SMALL = {"eval_problems": 6, "eval_samples": 8, "ood_problems": 4, "ood_samples": 8, "train_problems": 60,
         "train_samples": 2, "pretrain_problems": 40, "ood_pretrain_problems": 10, "base.hidden_size": 32,
         "base.intermediate_size": 64, "base.layers": 1, "base.heads": 2, "base.steps": 20, "base.batch_size": 8,
         "base.warmup": 2, "rm.max_steps": 240, "rm.batch_size": 8, "rm.restarts": 2, "rm.save_every": 20,
         "rm.eval_every": 20, "rm.early_stop_patience": 0, "rm.early_stop_min_steps": 0, "bootstrap": 20}
"""Reward models long enough to be killed mid-training (a checkpoint every 20 steps), two restarts each."""


def argv_for(out) -> list[str]:
    sets = [a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]
    return ["lab", "run", "--preset", "quick", "--seeds", "0", "--out-dir", str(out), "--no-progress", "--workers", "1",
            *sets]


def training(out) -> list:
    """Checkpoints of a reward model's restart still training (its job's folder not yet renamed into place)."""
    return list(out.glob("seed-0/restarts/.*.part/run/checkpoints/step-*/COMPLETE"))


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_an_interrupted_run_resumes_to_the_same_bytes(tmp_path, monkeypatch):
    """Kill a one-seed run after a reward model's first checkpoint; the rerun's outputs equal the uninterrupted
    run's (models, scored files), so a killed job's checkpoints resume it exactly."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PRMKIT_CACHE", str(cache))
    done = tmp_path / "whole"
    assert main(argv_for(done)) == 0

    out = tmp_path / "killed"
    argv = [sys.executable, "-m", "prmkit", *argv_for(out)]
    env = {**os.environ, "PRMKIT_CACHE": str(cache)}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 600
    while not training(out) and time.time() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "seed-0" / "score-eval").exists(), "the run finished before it could be interrupted"
    assert training(out), "no reward model was mid-training when the run was killed"
    subprocess.run(argv, env=env, check=True, capture_output=True, timeout=900)
    # every model and scored file; each model's own scored copy names its model's folder (meta.scored_by), so
    # it differs between two run folders: the merged file, which the evaluation reads, carries its scores
    files = sorted(p.relative_to(done / "seed-0") for p in (done / "seed-0").glob("**/*") if p.is_file()
                   and p.suffix in (".gz", ".safetensors") and "checkpoints" not in p.parts
                   and not (p.parent.parent.name == "scores" and not p.parent.name.startswith("label-free")))
    assert files and any(p.name == "model.safetensors" for p in files)
    assert list(done.glob("seed-0/restarts/*/run/model.safetensors"))
    assert not list(done.glob("seed-0/restarts/*/run/checkpoints")), "a finished restart keeps no checkpoints"
    for rel in files:
        assert (out / "seed-0" / rel).read_bytes() == (done / "seed-0" / rel).read_bytes(), rel
