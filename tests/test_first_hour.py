"""A practitioner's first hour (issue 29, items 3, 4, 6, 11): each test is the user's command and its message."""

from __future__ import annotations

import json

import pytest

from prmkit.cli import main
from prmkit.io import read_solutions, write_records
from prmkit.schema import Problem, Solution
from prmkit.testing.toydata import make_solutions


def _train(tmp_path, name: str, *flags) -> str:
    data = tmp_path / "train.jsonl"
    if not data.exists():
        write_records(data, make_solutions(64, seed=1, n_steps=(4, 10)))
    out = tmp_path / name
    assert main(["train", "prm", "--data", str(data), "--out-dir", str(out), "--max-steps", "2", "--batch-size", "8",
                 "--eval-fraction", "0", "--no-progress", "--allow-truncation", *flags]) == 0
    return str(out)


# --- 3: truncation, and advice that is true -------------------------------------------------------

def test_truncation_advice_names_a_length_that_keeps_every_step(tmp_path, capsys):
    short = _train(tmp_path, "short", "--max-length", "40")
    pool = tmp_path / "pool.jsonl"
    write_records(pool, make_solutions(12, seed=3, n_steps=(6, 10)))
    assert main(["score", "--model", short, str(pool), str(tmp_path / "s.jsonl"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "solutions were longer than" in err and "(max_length 40)" in err and "--max-length 0" not in err
    need = int(err.split("The longest needs ")[1].split(" tokens")[0])
    assert need > 40
    room = _train(tmp_path, "room", "--max-length", str(need))  # the advice, taken as printed
    capsys.readouterr()
    assert main(["score", "--model", room, str(pool), str(tmp_path / "s2.jsonl"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["truncation"]["solutions_truncated"] == 0 and "longer than" not in err


def _step_file(path, lost: int) -> None:
    sols = []
    for i in range(20):
        sol = Solution.from_steps("q", ["a", "b", "c"], ratings=[1, 1, -1] if i % 2 else [1, -1, 1], id=str(i))
        for j, step in enumerate(sol.steps):
            if not (i < lost and j == 2):  # the last step lost to truncation at scoring
                step.scores["p_correct"] = [0.9, 0.8, 0.2][j] if i % 2 else [0.9, 0.2, 0.8][j]
        if i < lost:
            sol.scores["prm_steps_lost"] = 1
        sols.append(sol)
    write_records(path, sols)


def test_eval_steps_skip_unscored_counts_and_prints(tmp_path, capsys):
    path = tmp_path / "scored.jsonl"
    _step_file(path, lost=3)
    assert main(["eval", "steps", str(path), "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "3 of 20 records lack it on some steps" in err and "pass --skip-unscored to leave them out" in err
    assert main(["eval", "steps", str(path), "--skip-unscored", "--out-dir", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert "left out 3 solutions whose steps have no 'p_correct' score" in err
    assert "steps lost to truncation at scoring (prm_steps_lost)" in err
    result = json.loads((tmp_path / "out" / "steps.json").read_text())
    assert result["skipped_unscored"] == {str(path): 3} and result["subsets"]["scored"]["n"] <= 17
    wrote = out.strip().splitlines()[-1]  # every file it wrote, the figures too
    assert wrote.startswith("wrote ") and "steps.json" in wrote and "steps_f1.png" in wrote
    assert all((tmp_path / "out" / f).exists() for f in result["figures"])


def test_eval_steps_skip_unscored_still_refuses_a_file_with_no_scores(tmp_path, capsys):
    path = tmp_path / "scored.jsonl"
    _step_file(path, lost=20)
    assert main(["eval", "steps", str(path), "--skip-unscored"]) == 2
    assert "every record lacks" in capsys.readouterr().err


# --- 4: an ORM from records with a reference answer but no grade ----------------------------------

def _ungraded(path) -> None:
    sols = []
    for i in range(40):
        a, b = i % 7, i % 5
        right = i % 3 != 0
        sols.append(Solution.from_steps(Problem(f"{a} + {b} =", answer=str(a + b), id=f"p{i}"),
                                        [f"{a} + {b} = {a + b if right else a + b + 1}",
                                         f"# Answer\n\n{a + b if right else a + b + 1}"]))
    write_records(path, sols)


def test_prmkit_grade_grades_prmkit_records_and_writes_them_back(tmp_path, capsys):
    data, graded = tmp_path / "prm800k.jsonl", tmp_path / "graded.jsonl"
    _ungraded(data)
    assert main(["grade", str(data), str(graded)]) == 0
    assert "graded 40 pairs (strict): 26 correct, 14 incorrect" in capsys.readouterr().out
    sols = list(read_solutions(graded))
    assert [s.grade for s in sols[:3]] == ["incorrect", "correct", "correct"]
    assert sols[1].meta["grading"] == {"reason": "equal-normalized", "mode": "strict"} and sols[1].answer == "2"


def test_a_graded_record_without_an_answer_marker_keeps_no_answer(tmp_path):
    """Its text is no answer: written as one, every such sample would be an answer group of its own."""
    data, graded = tmp_path / "unfinished.jsonl", tmp_path / "graded.jsonl"
    write_records(data, [Solution.from_steps(Problem("1 + 1 =", answer="2"), ["First, 1 + 1", "is two"])])
    assert main(["grade", str(data), str(graded)]) == 0
    [sol] = read_solutions(graded)
    assert sol.answer is None and sol.grade == "incorrect"


def test_train_orm_on_ungraded_records_names_the_command_or_grades_them(tmp_path, capsys):
    data = tmp_path / "prm800k.jsonl"
    _ungraded(data)
    base = ["train", "orm", "--data", str(data), "--max-steps", "2", "--batch-size", "8", "--eval-fraction", "0",
            "--no-progress", "--head", "classify"]
    assert main([*base, "--out-dir", str(tmp_path / "orm")]) == 2
    err = capsys.readouterr().err
    assert "40 of 40 solutions have no grade" in err and f"prmkit grade {data} GRADED.jsonl" in err
    assert "--grade" in err
    assert main([*base, "--out-dir", str(tmp_path / "orm"), "--grade"]) == 0
    assert "graded 40 solutions against problem.answer (--grade)" in capsys.readouterr().out


def test_a_grade_record_without_a_reference_answer_is_named(tmp_path, capsys):
    path = tmp_path / "records.jsonl"
    write_records(path, [Solution.from_steps("1 + 1 =", ["2"])])
    assert main(["grade", str(path), "--from", "prmkit"]) == 2
    assert f"{path}:1: field 'problem.answer': missing" in capsys.readouterr().err


# --- 6: eval bon on a wrong type, a misspelt column -------------------------------------------------

@pytest.fixture
def scored_pool(tmp_path):
    sols = make_solutions(6, seed=1)
    for i, s in enumerate(sols):
        s.scores["prm_min"], s.scores["prm_steps_lost"] = 0.1 * i, 1 if i == 0 else 0
        s.grade = "correct" if i % 2 else "incorrect"
    path = tmp_path / "pool.jsonl"
    write_records(path, sols)
    return path


def test_eval_bon_names_the_line_and_field_of_a_wrong_typed_score(scored_pool, tmp_path, capsys):
    lines = scored_pool.read_text().splitlines()
    record = json.loads(lines[2])
    record["scores"]["prm_min"] = "high"
    lines[2] = json.dumps(record)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    for flags in (["--score", "prm_min"], []):
        assert main(["eval", "bon", str(bad), "--no-vote", "--bootstrap", "10", *flags]) == 2
        assert f"{bad}:3: field 'scores.prm_min': expected a number, got str 'high'" in capsys.readouterr().err


def test_eval_bon_misspelt_column_lists_the_columns_and_the_nearest(scored_pool, capsys):
    assert main(["eval", "bon", str(scored_pool), "--score", "prm_mni", "--no-vote", "--bootstrap", "10"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'prm_min'?" in err and "The file's columns: prm_min" in err and "truncation" not in err


# --- 11: smaller ------------------------------------------------------------------------------------

def test_no_progress_silences_the_libraries_bars_too(tmp_path):
    import subprocess
    import sys

    model = _train(tmp_path, "prm")
    pool = tmp_path / "pool.jsonl"
    write_records(pool, make_solutions(4, seed=3))
    run = subprocess.run([sys.executable, "-m", "prmkit", "score", "--model", model, str(pool),
                          str(tmp_path / "s.jsonl"), "--no-progress"], capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert "Loading weights" not in run.stderr and "it/s" not in run.stderr


def test_i_dont_know_is_no_answer(capsys):
    from prmkit.grade import grade

    result = grade("I don't know.", "5")
    assert (result.verdict, result.reason) == ("incorrect", "no-answer")


def test_a_killed_generate_keeps_the_batches_it_finished(tmp_path):
    """Five problems, the defaults (n 4, batch 16, flush every 8): the first batch is on disk when the second
    call dies."""
    from prmkit.generate import GenerateConfig, generate_file
    from prmkit.generate.backend import Backend, Sample
    from prmkit.generate.run import part_path

    class Dies(Backend):
        name, calls = "dies", []

        def generate(self, problems, n):
            self.calls.append(len(problems))
            if len(self.calls) == 2:
                raise KeyboardInterrupt
            return [[Sample(f"{p.problem} {j}", 1, "stop") for j in range(n)] for p in problems]

    src, out = tmp_path / "problems.jsonl", tmp_path / "out.jsonl"
    write_records(src, [Problem(f"{i} + 1 =", answer=str(i + 1), id=f"p{i}") for i in range(5)])
    with pytest.raises(KeyboardInterrupt):
        generate_file(src, out, GenerateConfig(model="m", progress=False), backend=Dies(), log=lambda *_: None)
    assert Dies.calls == [4, 1]
    kept = [json.loads(line) for line in part_path(out).read_text().splitlines()]
    assert len(kept) == 16
