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


def test_a_table_across_domains_reads_every_summary_its_block_names(tmp_path):
    """A block naming files joined by commas: one table, each row led by its summary's domain (a summary without
    the field is the ledger's); a name that is no table is refused."""
    import pytest

    from prmkit.lab.doctables import ACROSS_DOMAINS

    ledger = json.loads((REPO / "docs" / "results" / "calibration-2.json").read_text())
    plans = json.loads((REPO / "docs" / "results" / "calibration-plans-7.json").read_text())
    (tmp_path / "a.json").write_text(json.dumps(ledger))
    (tmp_path / "b.json").write_text(json.dumps(plans))
    out = render_doc("<!-- generated: domains-calibration a.json,b.json -->\nold\n<!-- end generated -->\n", tmp_path)
    rows = [line for line in out.splitlines() if line.startswith(("| ledger |", "| plans |"))]
    pass64 = 100 * plans["candidates"][plans["chosen"]]["stats"]["pass@64"]
    assert "old" not in out and f"| plans | pass@64 | {pass64:.1f} | 70-85 |" in rows
    assert {r.split(" | ")[0] for r in rows} == {"| ledger", "| plans"} and "domains-calibration" in ACROSS_DOMAINS
    with pytest.raises(ValueError, match="unknown generated table 'domains-nothing'"):
        render_doc("<!-- generated: domains-nothing a.json,b.json -->\n<!-- end generated -->\n", tmp_path)


def test_the_committed_summaries_ran_on_the_pinned_stack():
    from prmkit.stack import GRADE_PACKAGES, PACKAGES, READ_PACKAGES, RL_PACKAGES, read_pins

    pins = read_pins(REPO / "constraints.txt")
    assert set(pins) == {*PACKAGES, *RL_PACKAGES, *GRADE_PACKAGES, *READ_PACKAGES}, "constraints.txt pins exactly the packages a summary may record"
    for path in sorted((REPO / "docs" / "results").glob("*.json")):
        stack = json.loads(path.read_text()).get("stack")
        if stack is not None:  # summaries from before the stack was recorded have none
            assert set(stack) >= set(PACKAGES), f"{path.name} records no version of {set(PACKAGES) - set(stack)}"
            assert stack == {k: pins[k] for k in stack}, f"{path.name} ran on {stack}, constraints.txt pins {pins}"
