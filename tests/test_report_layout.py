"""Report layout with many score columns: the comparison with majority voting fits the page (checked in
headless Chromium at 1280 px, with a screenshot), the wide table scrolls sideways with its row names in
view, figures keep their legend off the axes and band each scorer's best-of-N curve while few, and the
lab report ends in no long dump.

The browser test needs /usr/bin/chromium (or $PRMKIT_CHROMIUM) and the playwright package;
`eval "$(bash scripts/services.sh)"` provides them. Skipped, with the reason, without.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

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
from prmkit.schema import Generator, Problem, Solution

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
    assert html.count("<table") == 3 == html.count("<div class='table-wrap'><table")  # provenance, comparison, wide
    wide = html[html.index("<details><summary>Every number"):]
    header = re.search(r"<table><tr>(.*?)</tr>", wide).group(1)
    assert header.count("<th>") == 1 + 9 + 1 + 1 + 9  # N, best-of-N, pass, majority, weighted votes
    compare = re.search(r"<table class='compare'><thead><tr>(.*?)</tr>", html).group(1)
    assert compare.count("<th>") == 6  # whatever the number of scorers: a row per scorer, not a column
    style = css()
    assert ".table-wrap{overflow-x:auto" in style
    first_column = re.findall(r"td:first-child,th:first-child\{([^}]*)\}", style)
    assert any("position:sticky" in rule and "left:0" in rule for rule in first_column)


def test_each_scorers_best_of_n_curve_keeps_its_band_beside_the_votes():
    result = nine_column_result()
    for kept in (["orm"], ["orm", "prm_min"]):
        curves = {k: v for k, v in result["curves"].items()
                  if k in ("pass", "maj_acc", "first_acc") or k[k.find("[") + 1:-1] in kept}
        fig = bon_figure({"ns": result["ns"], "curves": curves})
        assert bands(fig.axes[0]) == len(kept) + 1  # each scorer's best-of-N and majority vote, not the weighted
        title = fig.axes[0].get_title()  # it names the banded curves
        assert all(c in title for c in kept) and "majority vote" in title and "weighted" not in title


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

    html = str(config_block(dataclasses.asdict(preset("easy"))))
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


# --- in a real browser --------------------------------------------------------------------------------

CHROMIUM = os.environ.get("PRMKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
STAMP = {"model": "/models/prm-tiny", "weights": "0f" * 32, "kind": "prm", "aggregations": ["min"], "neutral": ""}


def nine_column_run(tmp_path) -> Path:
    """``prmkit eval bon`` on a pool scored by nine columns, as ``prmkit score`` leaves a file (a stamp
    naming the model, a generator), some ORM scores lost to truncation and one ungradable sample."""
    from prmkit.cli import main

    rng = np.random.default_rng(0)
    sols = []
    for p in range(16):
        for i in range(8):
            ok = bool(rng.random() < 0.45)
            sol = Solution.from_steps(Problem(f"q{p}", answer="1", id=f"p{p}"), ["a", "b"],
                                      answer="1" if ok else str(2 + i % 3),
                                      grade="unparseable" if (p, i) == (3, 3) else "correct" if ok else "incorrect",
                                      generator=Generator("policy-7b"), meta={"scored_by": {"prm": STAMP}})
            sol.scores = {c: float(0.12 * j * ok + rng.random()) for j, c in enumerate(NINE)}
            if (p * 8 + i) % 17 == 0:
                sol.scores.pop("orm")
            sols.append(sol)
    write_records(tmp_path / "scored.jsonl", sols)
    assert main(["eval", "bon", str(tmp_path / "scored.jsonl"), "--score", ",".join(NINE), "--n", "1,2,4,8",
                 "--answer-key", "exact", "--bootstrap", "200", "--out-dir", str(tmp_path / "run")]) == 0
    return write_report(tmp_path / "run")


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium; "
                                                        "scripts/services.sh does)")
def test_report_in_chromium_at_1280px_fits_and_shows_its_warnings_and_provenance(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (its driver, no browser)")
    report = nine_column_run(tmp_path)
    shot = tmp_path / "report-1280.png"
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.as_uri())
        fit = page.eval_on_selector("table.compare", "t => [t.parentElement.scrollWidth, t.parentElement.clientWidth,"
                                                     " document.documentElement.scrollWidth, window.innerWidth]")
        boxes = {name: page.locator(f"#{name}") for name in ("provenance", "warnings")}
        visible = {name: box.is_visible() for name, box in boxes.items()}
        text = {name: box.inner_text() for name, box in boxes.items()}
        wide = page.eval_on_selector("details .table-wrap", "w => [w.scrollWidth, w.clientWidth]")
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert fit[0] <= fit[1] and fit[2] <= fit[3]  # the comparison, and the page, need no sideways scrollbar
    assert visible == {"provenance": True, "warnings": True}
    assert "/models/prm-tiny" in text["provenance"] and "policy-7b (128)" in text["provenance"]
    assert str(tmp_path / "scored.jsonl") in text["provenance"]
    assert "have no score 'orm'" in text["warnings"] and "1 samples left out as ungradable" in text["warnings"]
    assert wide[0] > wide[1]  # the full table, collapsed, still is wider than the page: it scrolls in its box
    assert shot.stat().st_size > 10_000
