"""The documentation site (mkdocs.yml): its strict build passes, so no page links to a page or a name that
does not exist, and a broken link does fail it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")

pytestmark = pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed (the dev extra has it)")


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site)], cwd=root, capture_output=True,
                          text=True, check=False, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_strictly_with_the_api_reference(tmp_path):
    run = build(ROOT, tmp_path / "site")
    assert run.returncode == 0, run.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert 'id="prmkit.io.read_solutions"' in api and 'id="prmkit.evaluate.bon"' in api  # from the docstrings
    assert '<span class="gp">&gt;&gt;&gt; </span>' in api  # doctests as code (scripts/griffe_doctests.py)
    assert (tmp_path / "site" / "lab" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path):
    for name in ("docs", "prmkit", "scripts"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    page = tmp_path / "docs" / "schema.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    run = build(tmp_path, tmp_path / "site")
    assert run.returncode != 0 and "no-such-page.md" in run.stderr, run.stderr[-3000:]
