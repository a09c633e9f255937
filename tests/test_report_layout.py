"""Report layout with many score columns: tables scroll sideways with their row names in view, figures
keep their legend off the axes and draw few CI bands, and the lab report ends in no long dump."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
from matplotlib.collections import PolyCollection

from prmkit.evaluate import plots
from prmkit.evaluate.curves import evaluate_pool
from prmkit.evaluate.html import config_block, css
from prmkit.evaluate.plots import BANDS_UP_TO, bon_figure, bon_panels, plot_bon
from prmkit.evaluate.pool import pool_from_lists
from prmkit.evaluate.report import write_report
from prmkit.io import write_json, write_records

NINE = ["prm_min", "prm_product", "prm_last", "prm_mean", "orm", "likelihood_mean", "likelihood_min", "rm_a", "rm_b"]


def nine_column_result(vote: bool = True) -> dict:
    """An ``evaluate_pool`` result on a toy pool scored by nine columns, better and worse ones."""
    rng = np.random.default_rng(0)
    answers = [[str(rng.integers(0, 3)) for _ in range(8)] for _ in range(12)]
    correct = [[int(a == "0") for a in row] for row in answers]
    scores = {c: [[float(0.15 * i * k + rng.random()) for k in row] for row in correct] for i, c in enumerate(NINE)}
    pool = pool_from_lists(answers, correct, scores, answer_key="exact")
    return {"kind": "bon", "source": ["toy.jsonl"], **evaluate_pool(pool, NINE, [1, 2, 4, 8], vote=vote, n_boot=50)}


def legend_is_off_the_axes(fig) -> bool:
    """No axes has a legend of its own, and every figure legend lies inside the figure and off every axes."""
    fig.canvas.draw()
    if any(ax.get_legend() is not None for ax in fig.axes) or not fig.legends:
        return False
    for legend in fig.legends:
        box = legend.get_window_extent()
        if box.x0 < 0 or box.y0 < 0 or box.x1 > fig.bbox.x1 or box.y1 > fig.bbox.y1:
            return False
        if any(box.overlaps(ax.get_window_extent()) for ax in fig.axes):
            return False
    return True


def bands(ax) -> int:
    return sum(isinstance(c, PolyCollection) for c in ax.collections)


def test_wide_report_table_scrolls_with_its_first_column_in_view(tmp_path):
    result = nine_column_result()
    plot_bon(result, tmp_path / "bon.png")
    write_json(tmp_path / "bon.json", {**result, "figures": ["bon.png"]})
    html = write_report(tmp_path).read_text()
    assert html.count("<table") == 1 == html.count("<div class='table-wrap'><table>")
    header = re.search(r"<table><tr>(.*?)</tr>", html).group(1)
    assert header.count("<th>") == 1 + 9 + 1 + 1 + 9  # N, best-of-N, pass, majority, weighted votes
    style = css()
    assert ".table-wrap{overflow-x:auto" in style
    first_column = re.findall(r"td:first-child,th:first-child\{([^}]*)\}", style)
    assert any("position:sticky" in rule and "left:0" in rule for rule in first_column)


def test_many_curves_are_small_multiples_with_few_bands_and_the_legend_below():
    result = nine_column_result()
    fig = bon_figure(result)
    assert [ax.get_title().split(" (")[0] for ax in fig.axes] == ["best-of-N", "weighted vote"]
    assert all(len(ax.get_lines()) == 9 + 2 + 1 for ax in fig.axes)  # scorers, pass and majority, first sample
    assert all(bands(ax) == 2 for ax in fig.axes)  # the panel's best at the largest N and majority vote
    best = max((f"bon_acc[{c}]" for c in NINE), key=lambda k: result["curves"][k]["estimate"][-1])
    assert best[len("bon_acc["):-1] in fig.axes[0].get_title() and "majority vote" in fig.axes[0].get_title()
    assert legend_is_off_the_axes(fig)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:3] == ["pass@N (oracle)", "majority vote", "first sample"] and sorted(labels[3:]) == sorted(NINE)


def test_few_curves_keep_every_band():
    result = nine_column_result(vote=False)
    result["curves"] = {k: v for k, v in result["curves"].items() if k in ("bon_acc[orm]", "pass", "first_acc")}
    fig = bon_figure(result)
    assert len(fig.axes) == 1 and bands(fig.axes[0]) == 2 and legend_is_off_the_axes(fig)
    assert bon_panels(list(result["curves"])) == [("bon_acc", ["bon_acc[orm]"])]
    assert len(bon_panels([f"bon_acc[{c}]" for c in NINE])) == 1  # one kind: one panel, bands thinned
    assert BANDS_UP_TO == 3


def test_config_block_is_collapsed_and_compact():
    from prmkit.lab import preset

    html = str(config_block(dataclasses.asdict(preset("default"))))
    assert html.startswith("<h2>Configuration</h2>\n<details><summary>") and "<pre" not in html
    assert "<td>domain</td><td>family=&#34;ledger&#34;, steps=[6, 8]," in html
    assert config_block(json.dumps({"a": 1})) == config_block({"a": 1})  # JSON text, as the study pages pass it


@pytest.fixture
def lab_run(tmp_path, monkeypatch):
    """A finished lab run folder without any model (tiny pools, random scores, evaluated for real), with a
    label-budget sweep; every figure the report saves is kept, open, in ``figures``."""
    from prmkit.lab import generate_pool, preset
    from prmkit.lab.report import write_lab_report
    from prmkit.lab.scoring import evaluate_scored

    cfg = preset("quick").replace({"bootstrap": 20, "label_budgets": "8"})
    columns = ("prm_min", "prm_product", "prm_last", "prm_mean", "orm", "likelihood_mean", "likelihood_min",
               "prm8_min", "prm8_product", "orm8")
    rng = np.random.default_rng(0)
    for pool in ("eval", "ood"):
        sols = generate_pool(cfg, 0, pool, problems=4, samples=4)
        for sol in sols:
            for step in sol.steps:
                step.scores.update(p_correct=float(rng.random()), base_logp_min=-float(rng.random()))
            sol.scores.update({c: float(rng.random()) for c in columns})
        scored = tmp_path / "seed-0" / "score" / f"{pool}.jsonl.gz"
        scored.parent.mkdir(parents=True, exist_ok=True)
        write_records(scored, sols)
        write_json(tmp_path / "seed-0" / "evaluate" / f"{pool}.json", evaluate_scored(scored, cfg, 0))
    figures = []
    save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: (figures.append(fig), save(fig, path))[1])
    timings = {"data": {"wall_seconds": 1.0, "jobs": 1, "ran": 1, "job_seconds": 1.0}}
    write_lab_report(tmp_path, cfg, [0], timings, "prmkit lab run --preset quick")
    return tmp_path, figures


def test_lab_report_ends_compactly_and_keeps_legends_off_the_curves(lab_run):
    run_dir, figures = lab_run
    html = (run_dir / "report.html").read_text()
    assert all(block.count("\n") < 60 for block in re.findall(r"<pre.*?</pre>", html, re.DOTALL))
    assert "<h2>Configuration</h2>\n<details>" in html and html.rstrip().endswith("</details>\n</body></html>")
    assert html.count("<table") == html.count("<div class='table-wrap'><table")
    assert "&lt;p class" not in html  # the AUROC-per-error note is HTML, not escaped text
    assert len(figures) == 3  # best-of-N held-out and OOD, the sweep
    assert all(legend_is_off_the_axes(fig) for fig in figures)
