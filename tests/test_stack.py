"""Where a summary's numbers came from: the source commit of this checkout, and the numeric stack."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from prmkit.stack import numeric_stack, run_record, source_commit

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout (an installed copy has no commit)")
def test_the_commit_is_this_checkout_s():
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert source_commit()["commit"] == head and run_record()["commit"] == head


def test_the_stack_names_each_package_and_strips_local_tags():
    stack = numeric_stack(("orjson", "no-such-package"))
    assert stack["no-such-package"] == "absent" and "+" not in stack["torch"] and stack["orjson"] != "absent"
