"""One self-contained HTML page for a run folder: tables of every number, figures embedded as base64.

A run folder holds what ``prmkit eval bon`` and ``prmkit eval steps`` wrote: JSON results (``kind``
``"bon"`` or ``"steps"``) naming their figures under ``"figures"``. The page needs no other file.

>>> import os, tempfile
>>> run = tempfile.mkdtemp()
>>> html = render_report(run, [{"kind": "steps", "source": ["x.json"], "threshold": 0.5, "mean_f1": 0.8,
...     "subsets": {"x": {"n": 2, "n_erroneous": 1, "n_correct": 1, "acc_erroneous": 1.0, "acc_correct": 0.5,
...     "f1": 0.667}}, "figures": []}])
>>> "ProcessBench" in html and "0.500" in html
True
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from markupsafe import Markup

from prmkit.evaluate.html import bon_section, figure, page, steps_section
from prmkit.io import atomic_output


def load_results(run_dir: str | os.PathLike) -> list[dict]:
    """Every prmkit evaluation JSON in ``run_dir`` (files with a ``kind`` of ``bon`` or ``steps``), sorted by name."""
    out = []
    for path in sorted(Path(run_dir).glob("*.json")):
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
        if isinstance(value, dict) and value.get("kind") in ("bon", "steps"):
            value["_file"] = path.name
            out.append(value)
    return out


def write_report(run_dir: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Write ``RUN_DIR/report.html`` (or ``out``); raise ValueError when the folder has no results."""
    results = load_results(run_dir)
    if not results:
        raise ValueError(f"no evaluation results (*.json from prmkit eval) in {run_dir}")
    target = Path(out) if out else Path(run_dir) / "report.html"
    with atomic_output(target) as f:
        f.write(render_report(run_dir, results))
    return target


def render_report(run_dir: str | os.PathLike, results: list[dict]) -> str:
    """The HTML text of the report for ``results`` (figures are read from ``run_dir``)."""
    body = [Markup("<p class='note'>run folder <code>{}</code>; definitions in docs/evaluation.md.</p>").format(
        str(run_dir))]
    for result in results:
        body.append(bon_section(result) if result["kind"] == "bon" else steps_section(result))
        body.extend(figure(Path(run_dir) / name) for name in result.get("figures", []))
    return page(f"prmkit report: {Path(run_dir).name}", body, heading="prmkit evaluation report")
