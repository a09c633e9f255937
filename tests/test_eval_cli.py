"""``prmkit eval bon`` / ``eval steps`` end to end on small files and on the real candidate pools."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from prmkit.cli import HelpFormatter, evaluate, report
from prmkit.io import write_records
from prmkit.schema import Problem, Solution


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="prmkit", formatter_class=HelpFormatter)
    sub = parser.add_subparsers(required=True)
    evaluate.register(sub)
    report.register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def scored_file(path, problems=6, samples=4, seed=0):
    rng = np.random.default_rng(seed)
    sols = []
    for p in range(problems):
        for i in range(samples):
            ok = bool(rng.random() < 0.6)
            sol = Solution.from_steps(Problem(f"p{p}", answer="1", id=f"p{p}"), ["s1", "s2"],
                                      answer="1" if ok else str(2 + i % 2), grade="correct" if ok else "incorrect",
                                      scores={"orm": float(rng.random() * 0.5 + 0.5 * ok)})
            for step in sol.steps:
                step.scores["p"] = float(np.clip(rng.normal(0.5 + 0.3 * ok, 0.2), 0, 1))
            sols.append(sol)
    write_records(path, sols)
    return path


def test_eval_bon_small_file_end_to_end(tmp_path, capsys):
    path = scored_file(tmp_path / "scored.jsonl")
    out = tmp_path / "run"
    assert run_cli(["eval", "bon", str(path), "--score", "orm,p:min", "--ns", "1,2,4", "--answer-key", "exact",
                    "--bootstrap", "200", "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bon_acc[orm]" in printed and "maj_acc" in printed and "first_acc" in printed
    result = json.loads((out / "bon.json").read_text())
    for name in ["bon_acc@4[orm]", "bon_acc@2[p:min]", "maj_acc@4", "weighted_acc@4[orm]", "pass@4", "first_acc"]:
        assert name in result["metrics"], name
    m = result["metrics"]
    assert m["pass@4"]["estimate"] >= m["bon_acc@4[orm]"]["estimate"]
    lo, hi = m["bon_acc@2[orm]"]["ci95"]
    assert lo <= m["bon_acc@2[orm]"]["estimate"] <= hi
    assert (out / "bon.png").stat().st_size > 1000
    assert run_cli(["report", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "Best-of-N" in html


def test_eval_bon_rejects_n_beyond_pool(tmp_path):
    path = scored_file(tmp_path / "s.jsonl", problems=2, samples=2)
    with pytest.raises(ValueError, match="--pad-to"):
        run_cli(["eval", "bon", str(path), "--ns", "4", "--answer-key", "exact", "--no-vote"])
    assert run_cli(["eval", "bon", str(path), "--ns", "4", "--pad-to", "8", "--answer-key", "exact", "--no-vote",
                    "--bootstrap", "50"]) == 0


def test_eval_steps_end_to_end(tmp_path, capsys):
    rng = np.random.default_rng(0)
    records = []
    for i in range(60):
        n = int(rng.integers(2, 6))
        label = int(rng.integers(-1, n))
        scores = rng.beta(5, 2, n)
        if label >= 0:
            scores[label] = rng.beta(2, 5)
        records.append({"id": str(i), "steps": ["x"] * n, "label": label, "p_correct": scores.tolist()})
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(records))
    out = tmp_path / "run"
    assert run_cli(["eval", "steps", str(path), "--out-dir", str(out)]) == 0
    assert "threshold" in capsys.readouterr().out
    result = json.loads((out / "steps.json").read_text())
    assert result["kind"] == "steps" and "toy" in result["subsets"] and 0 <= result["mean_f1"] <= 1
    assert {"steps_f1.png", "steps_reliability.png"} == set(result["figures"])
    assert run_cli(["report", str(out)]) == 0
    assert "ProcessBench" in (out / "report.html").read_text()


@pytest.mark.shared_data
@pytest.mark.slow
def test_eval_bon_on_real_pools(shared_data, tmp_path, capsys):
    qwen = shared_data / "candidates" / "qwen25math_math_cot_100.jsonl"
    assert run_cli(["eval", "bon", str(qwen), "--score", "pred_score", "--out-dir", str(tmp_path / "q")]) == 0
    m = json.loads((tmp_path / "q" / "bon.json").read_text())["metrics"]
    assert m["pass@8"]["estimate"] == pytest.approx(0.96)
    assert m["bon_acc@1[pred_score]"]["estimate"] == pytest.approx(0.91)  # = mean accuracy of a random sample
    assert m["first_acc"]["estimate"] == pytest.approx(0.90)
    assert m["pass@8"]["estimate"] >= m["bon_acc@8[pred_score]"]["estimate"] >= m["bon_acc@1[pred_score]"]["estimate"]
    gsm = shared_data / "candidates" / "gsm8k_example_model_solutions.jsonl"
    assert run_cli(["eval", "bon", str(gsm), "--out-dir", str(tmp_path / "g"), "--name", "gsm8k"]) == 0
    g = json.loads((tmp_path / "g" / "gsm8k.json").read_text())["metrics"]
    assert g["pass@4"]["estimate"] > g["maj_acc@4"]["estimate"] > g["first_acc"]["estimate"]


def test_eval_bon_reports_ungradable_samples_left_out(tmp_path, capsys):
    """A sample whose grade is unparseable (a grader timeout) is left out of best-of-N and counted: were
    it a wrong answer, the highest-scored sample here would make bon_acc@1 of the orm 0."""
    path = tmp_path / "scored.jsonl"
    sols = []
    for p in range(3):
        for answer, grade, score in (("1", "correct", 0.5), ("2", "unparseable", 0.9), ("3", "incorrect", 0.1)):
            sols.append(Solution.from_steps(Problem(f"p{p}", answer="1", id=f"p{p}"), ["s1"], answer=answer,
                                            grade=grade, scores={"orm": score}))
    write_records(path, sols)
    out = tmp_path / "run"
    assert run_cli(["eval", "bon", str(path), "--score", "orm", "--ns", "1,2", "--answer-key", "exact",
                    "--bootstrap", "50", "--out-dir", str(out)]) == 0
    assert "3 samples left out as ungradable" in capsys.readouterr().out
    result = json.loads((out / "bon.json").read_text())
    assert result["pool"]["ungradable_left_out"] == 3 and result["pool"]["samples"] == 6
    assert result["metrics"]["bon_acc@2[orm]"]["estimate"] == 1.0
