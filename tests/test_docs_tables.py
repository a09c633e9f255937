"""The numbers in the docs are generated from the committed run summaries, and match them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from prmkit.lab.doctables import TABLES, render_doc

REPO = Path(__file__).resolve().parents[1]


def test_every_generated_table_matches_its_committed_summary():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "docs_tables.py"), "--check"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, f"regenerate with `python scripts/docs_tables.py`:\n{done.stdout}{done.stderr}"


def test_the_lab_doc_has_its_generated_tables():
    text = (REPO / "docs" / "lab.md").read_text()
    for name in ("lab-eval", "lab-ood", "lab-targets", "lab-wall"):
        assert f"<!-- generated: {name} " in text, name


def test_a_changed_summary_changes_the_doc(tmp_path):
    summary = json.loads((REPO / "docs" / "results" / "lab-default.json").read_text())
    summary["results"][str(summary["seeds"][0])]["eval"]["prm_step_auroc"] = 0.123456
    (tmp_path / "s.json").write_text(json.dumps(summary))
    doc = "<!-- generated: lab-eval s.json -->\nold\n<!-- end generated -->\n"
    out = render_doc(doc, tmp_path)
    assert "| 0.123 |" in out.replace(" | 0.123 ", " | 0.123 |") and "old" not in out
    assert set(TABLES) >= {"lab-eval", "lab-ood", "lab-targets", "lab-wall"}
