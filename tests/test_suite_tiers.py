"""How the suite is run: the GPU tier is a marker, not a file list (every test that needs CUDA is marked
``gpu``, the marker alone skips it on a CPU, ``scripts/gpu_check.py`` runs the tier whole), and
``scripts/test.sh`` distributes the tests so that a module-scoped fixture is built once."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def collected(*args: str) -> set[str]:
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                         cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    return {line.split("::")[-1].split("[")[0] for line in run.stdout.splitlines() if "::" in line}


def test_every_test_that_needs_cuda_is_in_the_gpu_tier_and_gpu_check_runs_it():
    files = ["tests/test_score_equivalence.py", "tests/test_train_packing.py", "tests/test_train_ddp.py",
             "tests/test_generate_gpu.py"]
    tier = collected("-m", "gpu", *files)
    assert {"test_gpu_scores_match_cpu", "test_packed_equals_padded_on_gpu", "test_gpu_bf16_run",
            "test_gpu_hf_backend_samples_in_bf16"} <= tier
    skip_by_hand = "skipif(not torch.cuda" + ".is_available()"  # split, so that this file does not match itself
    for path in (ROOT / "tests").glob("test_*.py"):  # no other way to need CUDA than the marker
        assert skip_by_hand not in path.read_text(), path.name
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    assert gpu_check.GPU_TESTS[-3:] == ["-m", "gpu", "tests"]


def test_the_marker_alone_skips_on_a_cpu(tmp_path):
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_x.py").write_text("import pytest\n\n@pytest.mark.gpu\ndef test_x():\n    assert False\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs CUDA\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)
    if torch.cuda.is_available():
        assert "1 failed" in run.stdout, run.stdout
    else:
        assert "1 skipped" in run.stdout and "needs a CUDA GPU" in run.stdout, run.stdout


def test_the_suites_distribution_builds_a_module_fixture_once(tmp_path):
    """scripts/test.sh's xdist options send a module's tests to one worker: a module-scoped fixture (the lab
    runs, the trained models) is built once, not once per worker."""
    options = (ROOT / "scripts" / "test.sh").read_text().split("-m pytest", 1)[1].split('"$@"')[0].split()
    assert "-n" in options and "--dist" in options
    fixture = ("import os, pytest\n\n@pytest.fixture(scope='module')\ndef built(tmp_path_factory):\n"
               "    open(os.environ['BUILT'], 'a').write(os.environ.get('PYTEST_XDIST_WORKER', '-') + '\\n')\n\n")
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(fixture + "".join(f"def test_{i}(built):\n    pass\n\n" for i in range(6)))
    log = tmp_path / "built.txt"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
                         env={**os.environ, "BUILT": str(log)})
    assert "12 passed" in run.stdout, run.stdout
    assert len(log.read_text().split()) == 2  # once per module, whatever the workers
