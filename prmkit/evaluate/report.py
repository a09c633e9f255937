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

import base64
import html
import json
import os
from pathlib import Path

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


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%}
.note{color:#555;font-size:13px}code{background:#f6f6f6;padding:0 3px}"""


def render_report(run_dir: str | os.PathLike, results: list[dict]) -> str:
    """The HTML text of the report for ``results`` (figures are read from ``run_dir``)."""
    parts = [(f"<!doctype html><html><head><meta charset='utf-8'><title>prmkit report: "
              f"{html.escape(Path(run_dir).name)}</title><style>{_CSS}</style></head><body>"),
             (f"<h1>prmkit evaluation report</h1><p class='note'>run folder <code>{html.escape(str(run_dir))}</code>; "
              "definitions in docs/evaluation.md.</p>")]
    for result in results:
        parts.append(_bon_section(result) if result["kind"] == "bon" else _steps_section(result))
        parts.extend(_figure(Path(run_dir) / name) for name in result.get("figures", []))
    parts.append("</body></html>")
    return "\n".join(parts)


def _figure(path: Path) -> str:
    if not path.exists():
        return f"<p class='note'>figure {html.escape(path.name)} is missing</p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"<figure><img alt='{html.escape(path.name)}' src='data:image/png;base64,{data}'></figure>"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _bon_section(result: dict) -> str:
    curves = {k: v for k, v in result["curves"].items() if k != "first_acc"}
    names = sorted(curves, key=lambda k: (k != "pass", not k.startswith("bon"), k))
    rows = []
    for j, n in enumerate(result["ns"]):
        row = [str(n)]
        for name in names:
            c = curves[name]
            cell = f"{_pct(c['estimate'][j])} [{_pct(c['ci_low'][j])}, {_pct(c['ci_high'][j])}]"
            row.append(cell + (f" ±{100 * c['mc_se'][j]:.2f}" if "mc_se" in c else ""))
        rows.append(row)
    first = result["curves"]["first_acc"]
    pool = result["pool"]
    return (f"<h2>Best-of-N: {html.escape(', '.join(result.get('source', [])))}</h2>"
            f"<p class='note'>{pool['problems']} problems, {pool['samples']} samples "
            f"({pool['samples_per_problem'][0]}-{pool['samples_per_problem'][1]} per problem, padded to "
            f"{pool['pad_to']}), {pool['answerless']} without an answer. Accuracy in %, 95% bootstrap CI over "
            "problems in brackets, ± the Monte-Carlo standard error of voting.</p>"
            + _table(["N"] + names, rows)
            + f"<p>first sample: {_pct(first['estimate'][0])} [{_pct(first['ci_low'][0])}, "
              f"{_pct(first['ci_high'][0])}]</p>")


def _steps_section(result: dict) -> str:
    rows = [[name, str(s["n"]), _pct(s["acc_erroneous"]), _pct(s["acc_correct"]), _pct(s["f1"])]
            for name, s in result["subsets"].items()]
    extra = [f"mean F1 over subsets: <b>{_pct(result['mean_f1'])}</b>",
             f"threshold {result['threshold']:.3f}, chosen on {html.escape(', '.join(result.get('threshold_chosen_on', [])))}"]
    for key, label in (("step_auroc", "step AUROC"), ("step_accuracy", "step accuracy at the threshold")):
        if key in result:
            extra.append(f"{label}: {result[key]:.3f}")
    if result.get("calibration"):
        extra.append(f"expected calibration error: {result['calibration']['ece']:.3f}")
    return (f"<h2>ProcessBench-style step evaluation: {html.escape(', '.join(result.get('source', [])))}</h2>"
            + _table(["subset", "solutions", "acc. erroneous", "acc. correct", "F1"], rows)
            + "<p>" + "<br>".join(extra) + "</p>")
