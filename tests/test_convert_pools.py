"""Candidate pools and whole-text solutions into prmkit records: ``qwen-candidates``, ``gsm8k-examples``,
``text``, run as the user runs them (``prmkit data convert``, ``data validate``, ``eval bon``, ``score``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prmkit.cli import main
from prmkit.convert import FORMATS, Options
from prmkit.convert.candidates import from_qwen
from prmkit.io import read_solutions
from prmkit.schema import SchemaError

QWEN = "candidates/qwen25math_math_cot_100.jsonl"
GSM8K = "candidates/gsm8k_example_model_solutions.jsonl"


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- text ------------------------------------------------------------------------------------------

TEXT_ROWS = [
    {"problem": "2+3?", "solution": "2 + 3 = 5.\nSo \\boxed{5}.", "answer": "5"},
    {"problem": "2+3?", "solution": "2 + 3 = 6. Then 6 it is.\n# Answer\n\n6", "answer": "5"},
    {"problem": "7*6?", "solution": "It is 42.", "answer": 42},
    {"problem": "no gold?", "solution": "x\n\\boxed{1}", "meta": {"model": "m"}},
]


def test_text_converts_with_ids_answers_and_grades(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "answers.jsonl", TEXT_ROWS), tmp_path / "pool.jsonl"
    status, printed, _ = run(capsys, "data", "convert", "--from", "text", "--to", "prmkit", src, out)
    assert status == 0 and "read 4 records, wrote 4 rows, rejected 0" in printed
    sols = list(read_solutions(out))
    assert [s.id for s in sols] == ["0/0", "0/1", "1/0", "2/0"]
    assert [s.problem.id for s in sols] == ["0", "0", "1", "2"]
    assert [s.answer for s in sols] == ["5", "6", None, "1"]
    assert [s.grade for s in sols] == ["correct", "incorrect", "incorrect", None]  # no answer: wrong; no gold: no grade
    assert sols[1].texts == ["2 + 3 = 6. Then 6 it is.", "# Answer\n\n6"]  # newline: the paper's format
    assert sols[2].problem.answer == "42"
    assert sols[3].meta == {"model": "m", "prmkit_split": {"how": "newline"}}
    assert all(r is None for s in sols for r in s.ratings)  # cut by prmkit, so unlabelled
    assert run(capsys, "data", "validate", out)[1].strip() == f"{out}: valid (4 solutions)"


def test_text_split_option_changes_the_steps(tmp_path, capsys):
    src = write_jsonl(tmp_path / "answers.jsonl", TEXT_ROWS[1:2])
    out = tmp_path / "s.jsonl"
    assert run(capsys, "data", "convert", "--from", "text", "--split", "sentences", src, out)[0] == 0
    [s] = read_solutions(out)
    assert s.texts == ["2 + 3 = 6.", "Then 6 it is.", "# Answer\n\n6"]
    assert s.meta["prmkit_split"] == {"how": "sentences"}


def test_text_given_ids_number_the_samples_of_each_problem(tmp_path, capsys):
    rows = [{"id": 7, "problem": "q", "solution": "a"}, {"id": "x", "problem": "r", "solution": "b"},
            {"id": 7, "problem": "q", "solution": "c"}]
    src = write_jsonl(tmp_path / "t.jsonl", rows)
    assert run(capsys, "data", "convert", "--from", "text", src, tmp_path / "o.jsonl")[0] == 0
    assert [s.id for s in read_solutions(tmp_path / "o.jsonl")] == ["7/0", "x/0", "7/1"]


def test_text_typo_is_an_error_naming_line_and_field_and_the_way_on(tmp_path, capsys):
    rows = [TEXT_ROWS[0], {"problem": "q", "solution": "a", "anwser": "1"}, TEXT_ROWS[2]]
    src, out = write_jsonl(tmp_path / "t.jsonl", rows), tmp_path / "o.jsonl"
    status, _, err = run(capsys, "data", "convert", "--from", "text", src, out)
    assert status == 2 and not out.exists()
    assert f"{src}:2: field 'anwser': unknown field" in err and "rerun with --skip-invalid" in err
    status, printed, _ = run(capsys, "data", "convert", "--from", "text", "--skip-invalid", src, out)
    assert status == 0 and "rejected 1" in printed
    # the rejected row kept its number, so the ids after it do not depend on it being fixed
    assert [s.id for s in read_solutions(out)] == ["0/0", "2/0"]


def test_text_rows_with_and_without_ids_are_refused(tmp_path, capsys):
    src = write_jsonl(tmp_path / "t.jsonl", [{"id": "3", "problem": "q", "solution": "a"},
                                             {"problem": "r", "solution": "b"}])
    status, _, err = run(capsys, "data", "convert", "--from", "text", src, tmp_path / "o.jsonl")
    assert status == 2 and ":2: field 'id': some rows have an id and others not" in err


def test_split_is_refused_where_steps_exist_not_ignored(tmp_path, capsys):
    src = write_jsonl(tmp_path / "pb.jsonl", [{"id": "a", "generator": "m", "problem": "q", "steps": ["x"],
                                              "final_answer_correct": True, "label": -1}])
    status, _, err = run(capsys, "data", "convert", "--from", "processbench", "--split", "blank", src,
                         tmp_path / "o.jsonl")
    assert status == 2 and "'processbench' rows hold their steps already" in err
    with pytest.raises(ValueError, match="split must be one of"):
        Options(split="lines")
    assert {n for n, f in FORMATS.items() if f.split} == {"qwen-candidates", "gsm8k-examples", "text"}


# --- qwen-candidates on hand-made rows -------------------------------------------------------------

ROW = {"idx": 5, "question": "1+1?", "answer": "2", "gt": "2", "query": "1+1?",
       "code": ["1+1 = 2.\n\n\\[\n2\n\\]", "It is 3."], "pred": ["2", ""],
       "score": [True, False], "pred_score": [[0.9], [0.1]]}


def test_qwen_row_becomes_one_solution_per_sample():
    a, b = from_qwen(ROW, 1)
    assert (a.id, b.id, a.problem.id) == ("5/0", "5/1", "5")
    assert a.texts == ["1+1 = 2.", "\\[\n2\n\\]"]  # a display equation stays one step (paragraphs)
    assert (a.answer, a.grade, a.scores) == ("2", "correct", {"pred_score": 0.9})
    assert (b.answer, b.grade) == (None, "incorrect")  # "" in pred: the file found no answer
    assert a.problem.meta == {}  # query and gt are copies of question and answer


def test_qwen_without_grades_is_graded_against_the_reference():
    row = {k: v for k, v in ROW.items() if k not in ("pred", "score")}
    a, b = from_qwen({**row, "code": ["So \\boxed{2}.", "So \\boxed{3}."]}, 1)
    assert (a.answer, a.grade, b.answer, b.grade) == ("2", "correct", "3", "incorrect")


@pytest.mark.parametrize("change, field", [
    ({"pred": ["2"]}, "pred"), ({"pred_score": [[1], [1, 2]]}, "pred_score[1]"),
    ({"score": [True, "yes"]}, "score[1]"), ({"code": ["a", "  "]}, "code[1]"),
    ({"report": [None]}, "report")])
def test_qwen_bad_rows_name_the_field(change, field):
    with pytest.raises(SchemaError) as e:
        from_qwen({**ROW, **change}, 1)
    assert e.value.field == field


# --- the real pools --------------------------------------------------------------------------------

def _bon(capsys, path, out, *flags) -> dict:
    """The metrics of ``prmkit eval bon PATH --out-dir OUT FLAGS``."""
    status, _, _ = run(capsys, "eval", "bon", path, "--bootstrap", "100", "--out-dir", out, *flags)
    assert status == 0
    return json.loads((out / "bon.json").read_text())["metrics"]


@pytest.mark.shared_data
def test_qwen_candidates_convert_validate_and_evaluate(shared_data, tmp_path, capsys):
    src, pool = shared_data / QWEN, tmp_path / "pool.jsonl"
    status, printed, _ = run(capsys, "data", "convert", "--from", "qwen-candidates", "--to", "prmkit",
                             src, pool)
    assert status == 0 and printed.strip() == f"{src} -> {pool}: read 800 records, wrote 800 rows, rejected 0"
    assert run(capsys, "data", "validate", pool)[1].strip() == f"{pool}: valid (800 solutions)"
    sols = list(read_solutions(pool))
    raw = [json.loads(line) for line in src.read_text().splitlines()]
    assert [s.id for s in sols] == [f"{r['idx']}/{j}" for r in raw for j in range(8)]
    assert [s.grade == "correct" for s in sols] == [ok for r in raw for ok in r["score"]]
    assert [s.scores["pred_score"] for s in sols] == [x[0] for r in raw for x in r["pred_score"]]
    assert sols[0].texts[3] == "\\[\n10 \\cdot 6 \\cdot 7\n\\]" and len(sols[0].texts) == 9
    assert not any("\n\n" in t for s in sols for t in s.texts)
    assert sols[0].problem.answer == "420" and sols[0].problem.level == "Level 3"
    # the file's own reward score gives the numbers `eval bon` gives on the original file
    converted = _bon(capsys, pool, tmp_path / "converted", "--score", "pred_score")
    assert converted == _bon(capsys, src, tmp_path / "original", "--score", "pred_score")
    assert converted["bon_acc@8[pred_score]"]["estimate"] == pytest.approx(0.94)


@pytest.mark.shared_data
def test_gsm8k_examples_convert_validate_and_evaluate(shared_data, tmp_path, capsys):
    src, pool = shared_data / GSM8K, tmp_path / "gsm.jsonl"
    status, printed, _ = run(capsys, "data", "convert", "--from", "gsm8k-examples", src, pool)
    assert status == 0 and "read 5276 records, wrote 5276 rows, rejected 0" in printed
    assert run(capsys, "data", "validate", pool)[1].strip() == f"{pool}: valid (5276 solutions)"
    sols = list(read_solutions(pool))
    first = sols[0]
    assert (first.id, first.generator.name, first.answer) == ("0/0", "6b_finetuning", "26")
    assert first.grade == "incorrect"
    assert first.texts[-1] == "A: 26" and first.problem.answer == "18"
    raw = [json.loads(line) for line in src.read_text().splitlines()]
    models = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
    assert [s.grade == "correct" for s in sols] == [r[m]["is_correct"] for r in raw for m in models]
    flags = ("--no-vote", "--answer-key", "exact")
    converted = _bon(capsys, pool, tmp_path / "converted", *flags)
    assert converted == _bon(capsys, src, tmp_path / "original", *flags)


@pytest.mark.shared_data
def test_prm800k_sample_files_are_read_by_the_prm800k_reader(shared_data, tmp_path, capsys):
    # openr's samples_prm800k.jsonl holds verbatim PRM800K lines: the prm800k reader is the reader
    src, out = shared_data / "prm800k/openr_samples_prm800k.jsonl", tmp_path / "p.jsonl"
    status, printed, _ = run(capsys, "data", "convert", "--from", "prm800k", src, out)
    assert status == 0 and "read 6 records, wrote 6 rows, rejected 0" in printed
    # one name, one schema: prm800k-samples, the released scored samples, is another format, not an alias
    status, _, err = run(capsys, "data", "convert", "--from", "prm800k-samples", src, tmp_path / "s.jsonl")
    assert status == 2 and "openr_samples_prm800k.jsonl:1: field 'problem': missing required field" in err


@pytest.mark.shared_data
@pytest.mark.slow
def test_candidates_convert_score_evaluate_with_no_glue(shared_data, tmp_path, capsys, monkeypatch):
    """The issue's three commands, in order, with a tiny PRM trained for the test."""
    from prmkit.io import write_records
    from prmkit.testing.toydata import make_solutions
    from prmkit.train.config import TrainConfig
    from prmkit.train.loop import train

    monkeypatch.chdir(tmp_path)
    write_records("train.jsonl", make_solutions(64, seed=1))
    train(TrainConfig(data="train.jsonl", out="M", max_steps=2, batch_size=8, eval_fraction=0, save_every=0,
                      progress=False, tensorboard=False))
    Path("cands.jsonl").write_text("".join((shared_data / QWEN).read_text().splitlines(True)[:4]))
    capsys.readouterr()
    convert = ["data", "convert", "--from", "qwen-candidates", "--to", "prmkit", "cands.jsonl", "pool.jsonl"]
    assert run(capsys, *convert)[0] == 0
    assert run(capsys, "score", "--model", "M", "pool.jsonl", "scored.jsonl", "--no-progress")[0] == 0
    status, printed, _ = run(capsys, "eval", "bon", "scored.jsonl", "--score", "prm_min,pred_score",
                             "--no-vote", "--bootstrap", "100")
    assert status == 0 and "bon_acc[prm_min]" in printed and "bon_acc[pred_score]" in printed
