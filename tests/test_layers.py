"""The core/lab line: prmkit's layers (``[tool.importlinter]`` in pyproject.toml) hold, name every part of
the package, and a new import across them is caught."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (the dev extra has it)")


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-cache"], check=False, cwd=cwd, capture_output=True, text=True, timeout=300)


def layers() -> list[str]:
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    return [name.strip() for layer in contract["layers"] for name in layer.split("|")]


def test_the_layers_hold():
    run = lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout


def test_every_part_of_prmkit_is_in_a_layer():
    parts = {f"prmkit.{p.stem}" for p in (ROOT / "prmkit").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert parts == set(layers())


def test_a_core_module_that_imports_the_lab_breaks_the_contract(tmp_path):
    shutil.copytree(ROOT / "prmkit", tmp_path / "prmkit", ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    generate = tmp_path / "prmkit" / "generate" / "backend.py"
    generate.write_text(generate.read_text() + "\nfrom prmkit.lab.backend import lab_backend  # noqa\n")
    run = lint(tmp_path)
    assert run.returncode == 1 and "prmkit.generate.backend -> prmkit.lab.backend" in run.stdout, run.stdout
