"""Two CPU processes (gloo DDP, launched by torchrun; accelerate picks up the world) train and score like one.

Tolerance: the final weights of 2 processes x batch 4 and 1 process x batch 8 agree to 1e-5 (the
gradient is the same sum, reduced in a different order; measured differences are ~1e-7).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from prmkit.io import write_records
from prmkit.testing.toydata import make_solutions

pytestmark = pytest.mark.slow
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]


def _run(args: list[str], processes: int, cwd: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = TORCHRUN + ["--nproc_per_node", str(processes), "-m", "prmkit", *args]
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_processes_equal_one(tmp_path):
    write_records(tmp_path / "train.jsonl", make_solutions(64, seed=1))
    common = ["train", "prm", "--data", "train.jsonl", "--max-steps", "4", "--eval-every", "2",
              "--eval-fraction", "0.2", "--save-every", "0", "--no-progress", "--no-tensorboard"]
    _run(common + ["--out-dir", "two", "--batch-size", "4"], 2, tmp_path)
    _run(common + ["--out-dir", "one", "--batch-size", "8"], 1, tmp_path)
    one, two = load_file(str(tmp_path / "one" / "model.safetensors")), load_file(str(tmp_path / "two" / "model.safetensors"))
    diff = max((one[k] - two[k]).abs().max().item() for k in one)
    assert diff < 1e-5, diff
    assert one.keys() == two.keys()

    # Scoring with two processes shards the input and merges it in input order.
    write_records(tmp_path / "in.jsonl", make_solutions(9, seed=4))
    _run(["score", "--model", "one", "in.jsonl", "out2.jsonl", "--no-progress", "--batch-size", "2"], 2, tmp_path)
    _run(["score", "--model", "one", "in.jsonl", "out1.jsonl", "--no-progress"], 1, tmp_path)
    import json
    a = [json.loads(x) for x in (tmp_path / "out1.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "out2.jsonl").read_text().splitlines()]
    assert [r["id"] for r in a] == [r["id"] for r in b] and len(a) == 9
    for x, y in zip(a, b):
        assert x["scores"].keys() == y["scores"].keys()
        assert all(abs(x["scores"][k] - y["scores"][k]) < 1e-5 for k in x["scores"])
    assert not list(tmp_path.glob(".out2.jsonl.part*"))


def test_two_processes_equal_one_with_features(tmp_path):
    """The same with a base pretrained by ``kind lm`` and surprise features through the adapter."""
    write_records(tmp_path / "train.jsonl", make_solutions(64, seed=1))
    quiet = ["--save-every", "0", "--no-progress", "--no-tensorboard", "--eval-fraction", "0"]
    _run(["train", "lm", "--data", "train.jsonl", "--out-dir", "base", "--max-steps", "4",
          "--batch-size", "8", *quiet], 1, tmp_path)
    common = ["train", "prm", "--data", "train.jsonl", "--base-model", "base", "--features", "surprise:base",
              "--head", "classify", "--new-lr", "0.01", "--max-steps", "4", *quiet]
    _run(common + ["--out-dir", "two", "--batch-size", "4"], 2, tmp_path)
    _run(common + ["--out-dir", "one", "--batch-size", "8"], 1, tmp_path)
    for name in ("model.safetensors", "feature_adapter.safetensors"):
        one, two = load_file(str(tmp_path / "one" / name)), load_file(str(tmp_path / "two" / name))
        assert one.keys() == two.keys()
        assert max((one[k] - two[k]).abs().max().item() for k in one) < 1e-5, name


@pytest.mark.gpu
def test_gpu_bf16_run(tmp_path):
    write_records(tmp_path / "train.jsonl", make_solutions(64, seed=1))
    env = {**os.environ}
    cmd = [sys.executable, "-m", "prmkit", "train", "prm", "--data", "train.jsonl", "--out-dir", "gpu", "--max-steps", "4",
           "--batch-size", "8", "--no-progress"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "gpu" / "model.safetensors").exists()
