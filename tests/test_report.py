"""``prmkit report``: one self-contained HTML page."""

from __future__ import annotations

import json

import pytest

from prmkit.evaluate.curves import evaluate_pool
from prmkit.evaluate.plots import plot_bon
from prmkit.evaluate.pool import pool_from_lists
from prmkit.evaluate.report import load_results, write_report
from prmkit.io import write_json


def test_report_embeds_figures_and_tables(tmp_path):
    pool = pool_from_lists([["1", "2", "1"]] * 5, [[1, 0, 1]] * 5, {"rm": [[0.9, 0.1, 0.5]] * 5}, answer_key="exact")
    result = {"kind": "bon", "source": ["toy.jsonl"], **evaluate_pool(pool, ["rm"], [1, 3], n_boot=100)}
    plot_bon(result, tmp_path / "bon.png")
    result["figures"] = ["bon.png", "absent.png"]
    write_json(tmp_path / "bon.json", result)
    (tmp_path / "other.json").write_text(json.dumps({"not": "a result"}))
    assert [r["_file"] for r in load_results(tmp_path)] == ["bon.json"]
    html = write_report(tmp_path).read_text()
    assert html.count("data:image/png;base64,") == 1 and "absent.png is missing" in html
    assert "bon_acc[rm]" in html and "first sample" in html and "<script" not in html


def test_report_on_empty_folder_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no evaluation results"):
        write_report(tmp_path)
