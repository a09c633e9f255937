"""``prmkit report``: one self-contained HTML page, the comparison with majority voting first, then the
figure and every number; what produced the numbers and what the command warned about at the top."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from prmkit.cli import main
from prmkit.evaluate.curves import evaluate_pool
from prmkit.evaluate.plots import plot_bon
from prmkit.evaluate.pool import pool_from_lists
from prmkit.evaluate.report import (
    comparison_curves,
    comparison_groups,
    load_results,
    read_provenance,
    result_warnings,
    write_report,
)
from prmkit.io import write_json, write_records
from prmkit.schema import Generator, Problem, Solution

PRM_STAMP = {"model": "/models/prm-tiny", "weights": "0f" * 32, "kind": "prm", "aggregations": ["min", "product"],
             "neutral": "positive"}
ORM_STAMP = {"model": "/models/orm-tiny", "weights": "a1" * 32, "kind": "orm", "aggregations": [], "neutral": ""}


def scored_pool_file(path, problems: int = 8, samples: int = 6, unscored=(1, 7, 20), ungradable=(5,)):
    """A pool as ``prmkit score`` leaves it: PRM and ORM scores, ``meta.scored_by`` stamps, a generator name;
    the samples ``unscored`` lost their ORM score to truncation, the ``ungradable`` ones have no verdict."""
    rng = np.random.default_rng(0)
    sols = []
    for p in range(problems):
        for i in range(samples):
            k = p * samples + i
            ok = bool(rng.random() < 0.5)
            grade = "unparseable" if k in ungradable else "correct" if ok else "incorrect"
            sol = Solution.from_steps(Problem(f"q{p}", answer="1", id=f"p{p}"), ["a", "b"],
                                      answer="1" if ok else str(2 + i % 3), grade=grade,
                                      generator=Generator("policy-7b", {"temperature": 0.8}),
                                      meta={"scored_by": {"prm": PRM_STAMP, "orm": ORM_STAMP}, "split": "test",
                                            "row": k})
            sol.scores = {"prm_min": float(0.6 * ok + 0.5 * rng.random()), "prm_product": float(rng.random()),
                          "orm": float(0.3 * ok + 0.7 * rng.random())}
            if k in unscored:
                del sol.scores["orm"]
                sol.scores["orm_steps_lost"] = 2
            sols.append(sol)
    write_records(path, sols)
    return path


@pytest.fixture
def run_dir(tmp_path):
    """``prmkit eval bon`` run for real on :func:`scored_pool_file`: the run folder it wrote."""
    scored = scored_pool_file(tmp_path / "scored.jsonl")
    assert main(["eval", "bon", str(scored), "--score", "prm_min,prm_product,orm", "--ns", "1,2,4,6",
                 "--answer-key", "exact", "--bootstrap", "200", "--out-dir", str(tmp_path / "run")]) == 0
    return tmp_path / "run"


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
    assert "not recorded (this result was written before eval bon recorded provenance)" in html


def test_report_on_empty_folder_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no evaluation results"):
        write_report(tmp_path)


def test_report_names_its_data_and_models_warns_and_compares_with_majority_first(run_dir, tmp_path):
    html = write_report(run_dir).read_text()
    order = [html.index(s) for s in ("id='provenance'", "id='warnings'", "<table class='compare'>",
                                     "data:image/png", "<details><summary>Every number")]
    assert order == sorted(order)  # provenance, warnings, the comparison, the figure, every number (collapsed)
    provenance = html[order[0]:order[1]]
    assert str(tmp_path / "scored.jsonl") in provenance and "policy-7b (48)" in provenance
    assert "prm_min, prm_product: prm: /models/prm-tiny (weights 0f0f0f0f0f…, kind prm" in provenance
    assert "orm: orm: /models/orm-tiny" in provenance and "split: test" in provenance and "row:" not in provenance
    warnings = html[order[1]:order[2]]
    assert "3 of 47 samples (in 3 of 8 problems) have no score &#39;orm&#39;" in warnings
    assert "lost steps to truncation (orm_steps_lost)" in warnings  # the cause, joined to its warning
    assert "1 samples left out as ungradable" in warnings
    header = re.search(r"<table class='compare'><thead><tr>(.*?)</tr>", html).group(1)
    assert header.count("<th>") == 6 and "majority vote [95% CI]" in header
    assert "best-of-N − majority [95% CI]" in header
    assert html.count("<tbody>") == 4 and html.count("<td class='name'>") == 4 * 3  # a block per N, a row per scorer


def test_comparison_difference_is_paired_and_coloured_only_when_its_interval_excludes_zero():
    # the scorer picks a correct sample in every problem; majority votes for the wrong answer in most
    answers = [["1", "2", "2", "2"]] * 6 + [["1", "1", "2", "2"]] * 6
    correct = [[1, 0, 0, 0]] * 6 + [[1, 1, 0, 0]] * 6
    pool = pool_from_lists(answers, correct, {"good": [[.9, .1, .2, .3]] * 12, "same": [[.5] * 4] * 12},
                           answer_key="exact")
    paired = evaluate_pool(pool, ["good", "same"], [1, 4], n_boot=300, per_problem=comparison_curves(["good", "same"]))
    groups = comparison_groups(paired)
    assert [g["n"] for g in groups] == [1, 4] and [r["scorer"] for r in groups[1]["rows"]] == ["good", "same"]
    good = groups[1]["rows"][0]
    estimate = paired["curves"]["bon_acc[good]"]["estimate"][1] - paired["curves"]["maj_acc"]["estimate"][1]
    assert good["diff"].startswith(f"{100 * estimate:+.1f} [") and good["sign"] == "better"
    low, high = (float(x) for x in re.search(r"\[(\S+), (\S+)\]", good["diff"]).groups())
    assert low <= 100 * estimate <= high
    unpaired = evaluate_pool(pool, ["good"], [1, 4], n_boot=300)
    row = comparison_groups(unpaired)[1]["rows"][0]
    assert row["diff"] == f"{100 * estimate:+.1f}" and row["sign"] == ""  # no interval without per-problem values


def test_without_voting_the_page_says_there_is_no_baseline(tmp_path):
    pool = pool_from_lists([["1", "2"]] * 4, [[1, 0]] * 4, {"rm": [[.9, .1]] * 4}, answer_key="exact")
    result = {"kind": "bon", "source": ["t.jsonl"], **evaluate_pool(pool, ["rm"], [1, 2], vote=False, n_boot=50)}
    assert result_warnings(result) == [("majority voting was not computed (eval bon --no-vote): the scorers have "
                                        "no baseline here")]
    write_json(tmp_path / "bon.json", result)
    html = write_report(tmp_path).read_text()
    header = re.search(r"<table class='compare'><thead><tr>(.*?)</tr>", html).group(1)
    assert "majority" not in header and header.count("<th>") == 4


def test_provenance_of_a_file_scored_by_two_models_and_of_other_formats(tmp_path):
    path = scored_pool_file(tmp_path / "s.jsonl")
    prov = read_provenance(path, "prmkit", ["orm"], limit=10)
    assert prov["records_read"] == 10 and prov["stopped_after"] == 10 and prov["generators"] == {"policy-7b": 10}
    assert list(prov["scored_by"]) == ["prm", "orm"] and "row" not in prov["meta"]  # 10 distinct values: an id
    assert prov["inputs"][0]["bytes"] == path.stat().st_size
    assert set(read_provenance(path, "qwen-candidates", ["pred_score"])) == {"inputs", "format", "columns"}
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[3]["meta"]["scored_by"]["orm"] = {**ORM_STAMP, "model": "/models/other"}
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = {"kind": "bon", "pool": {}, "curves": {"maj_acc": {}}, "settings": {"columns": []},
              "provenance": read_provenance(path, "prmkit", ["orm"])}
    assert result_warnings(result) == [("the scores named orm come from 2 different models or settings "
                                        "(meta.scored_by differs between records): one column mixes them")]
