"""Shared test fixtures.

Real public data lives outside the repository in ``../shared/data`` (``PRMKIT_SHARED_DATA``
overrides the path). Tests that need it take the ``shared_data`` fixture and are skipped, with the
reason, where it is absent (a user's fresh clone); CI always has it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    return Path(os.environ.get("PRMKIT_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_collection_modifyitems(config, items):
    """A ``gpu``-marked test is skipped, with the reason, where torch sees no CUDA GPU: the marker alone puts a
    test in the GPU tier, which ``scripts/gpu_check.py`` runs whole (``-m gpu``)."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu:
        return
    import torch

    if not torch.cuda.is_available():
        for item in gpu:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (the gpu tier: scripts/gpu_check.py runs it)"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data not found at {path} (set PRMKIT_SHARED_DATA to run these tests)")
    return path


@pytest.fixture(scope="session")
def lab_jobs() -> int:
    """Worker processes for a lab run inside a test: 1 under xdist, where every xdist worker is already one
    of the machine's processes (2 workers x the runner's 2 jobs put 4 torch processes on 2 cores), else 2."""
    return 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2


@pytest.fixture
def lab_cache(tmp_path_factory, monkeypatch) -> Path:
    """A ``PRMKIT_CACHE`` shared by every lab test of this session (all xdist workers), so the lab's base
    model is pretrained once per session rather than once per test; ``tests/test_lab_run.py`` keeps its own
    empty cache on purpose (it tests pretraining from nothing)."""
    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "prmkit-lab-cache"
    shared.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PRMKIT_CACHE", str(shared))
    return shared


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory):
    """A folder with ``train.jsonl`` (96 toy solutions) and ``eval.jsonl`` (32), for tiny training runs."""
    from prmkit.io import write_records
    from prmkit.testing.toydata import make_solutions

    folder = tmp_path_factory.mktemp("data")
    write_records(folder / "train.jsonl", make_solutions(96, seed=1))
    write_records(folder / "eval.jsonl", make_solutions(32, seed=2))
    return folder


def save_tiny_lm(folder: Path, seed: int = 0) -> Path:
    """A tiny Llama-style causal LM (random weights of ``seed``) and its tokenizer, saved to ``folder``."""
    from prmkit.model.tiny import build_preset

    texts = [f"{a} + {b} = {a + b}\n# Answer\n\n{a + b}" for a in range(20) for b in range(10)]
    model, tok = build_preset("tiny-llama", texts, "AutoModelForCausalLM", 300, seed=seed)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory) -> Path:
    """A folder holding a tiny Llama-style causal LM (random weights) and its tokenizer, saved with
    ``save_pretrained`` so that tests load it through the real ``from_pretrained`` path."""
    return save_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="session")
def other_tiny_lm(tmp_path_factory) -> Path:
    """:func:`tiny_lm` with other weights (seed 1): another model of the same shape and tokenizer."""
    return save_tiny_lm(tmp_path_factory.mktemp("other-tiny-lm"), seed=1)


@pytest.fixture(scope="session")
def tiny_prm(tmp_path_factory) -> Path:
    """A tiny PRM folder (4 optimiser steps on toy data, through ``prmkit train``): for serving, scoring and
    critic tests that need a real model, not a good one."""
    from prmkit.io import write_records
    from prmkit.testing.toydata import make_solutions
    from prmkit.train.config import TrainConfig
    from prmkit.train.loop import train

    folder = tmp_path_factory.mktemp("tiny-prm")
    write_records(folder / "train.jsonl", make_solutions(64, seed=1))
    train(TrainConfig(data=str(folder / "train.jsonl"), out=str(folder / "model"), max_steps=4, batch_size=8,
                      eval_fraction=0, save_every=0, progress=False, tensorboard=False))
    return folder / "model"
