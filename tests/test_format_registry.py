"""One format registry (:data:`prmkit.convert.FORMATS`): convert, ``eval bon``, ``eval steps`` and ``label push``
take their format names from it, and ``eval bon --from F`` reads a pool in every solution format convert knows."""

from __future__ import annotations

import json

import pytest

from prmkit.cli import build_parser, main, walk_commands
from prmkit.convert import FORMATS, solution_formats, step_score_formats
from prmkit.evaluate.pool import FORMATS as POOL_FORMATS
from prmkit.evaluate.pool import NATIVE, load_pool
from prmkit.evaluate.stepdata import STEP_FORMATS

SAMPLES = [  # released scored samples (openai/prm800k): an answerless one, one without orm_score
    {"problem": "A", "answer": "2", "is_correct": True, "prm_score": 0.9, "orm_score": 0.4},
    {"problem": "B", "given_answer": "5", "is_correct": True, "prm_score": 0.3, "orm_score": 0.8},
    {"problem": "A", "answer": "3", "is_correct": False, "prm_score": 0.8, "orm_score": 0.7},
    {"problem": "B", "given_answer": "6", "is_correct": False, "prm_score": 0.6},
    {"problem": "A", "answer": None, "given_answer": "2", "is_correct": None, "prm_score": 0.99},
    {"problem": "B", "answer": "5", "is_correct": True, "prm_score": 0.2, "orm_score": 0.1},
]


def bon(capsys, path, out, *flags) -> dict:
    """``eval bon``'s numbers on ``path`` (the run's own JSON, not its printout)."""
    assert main(["eval", "bon", str(path), "--out-dir", str(out), "--ns", "1,2,3", "--answer-key", "exact",
                 "--no-vote", "--bootstrap", "50", *flags]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return json.loads((out / "bon.json").read_text())["metrics"]


def choices_of(command: str) -> list[str]:
    sub = dict(walk_commands(build_parser()))[command]
    return next(a.choices for a in sub._actions if "--from" in a.option_strings)


def test_every_format_name_comes_from_the_convert_registry():
    assert set(POOL_FORMATS) == set(solution_formats()) and set(NATIVE) <= set(POOL_FORMATS)
    assert set(STEP_FORMATS) == set(step_score_formats()) <= set(FORMATS)
    assert choices_of("prmkit eval bon") == ["auto", *solution_formats()]
    assert choices_of("prmkit eval steps") == ["auto", *step_score_formats()]
    # problems are no pool: a problem format is not offered
    assert "math" in FORMATS and "math" not in POOL_FORMATS


def test_eval_bon_reads_a_format_only_convert_knows(tmp_path, capsys):
    # ProcessBench rows are sampled solutions with a grade: a pool, read through the processbench converter
    rows = [{"id": f"{p}-{j}", "generator": "m", "problem": f"q{p}", "steps": [f"so {a}", f"\\boxed{{{a}}}"],
             "final_answer_correct": a == p, "label": -1 if a == p else 0}
            for p in range(3) for j, a in enumerate((p, p + 1, p))]
    path = tmp_path / "pb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool = load_pool(path, "processbench", answer_key="exact")
    assert pool.format == "processbench" and pool.n_problems == 3 and pool.sizes.tolist() == [3, 3, 3]
    assert pool.correct.tolist() == [True, False, True] * 3
    metrics = bon(capsys, path, tmp_path / "out", "--from", "processbench", "--no-vote")
    assert metrics["pass@1"]["estimate"] == pytest.approx(2 / 3) and metrics["pass@2"]["estimate"] == 1.0


def test_prm800k_samples_convert_then_evaluate_gives_the_same_numbers(tmp_path, capsys):
    src, out = tmp_path / "samples.jsonl", tmp_path / "converted.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in SAMPLES))
    assert main(["data", "convert", "--from", "prm800k-samples", str(src), str(out)]) == 0
    assert "read 6 records, wrote 6 rows, rejected 0" in capsys.readouterr().out
    flags = ("--score", "prm_score,orm_score")
    assert bon(capsys, out, tmp_path / "a", *flags) == bon(capsys, src, tmp_path / "b", "--from", "prm800k-samples",
                                                           *flags)


def test_a_converter_error_names_file_line_and_field(tmp_path, capsys):
    path = tmp_path / "pb.jsonl"
    path.write_text(json.dumps({"id": "a", "problem": "q", "steps": ["x"], "final_answer_correct": True,
                                "label": 4}) + "\n")
    assert main(["eval", "bon", str(path), "--from", "processbench", "--no-vote"]) == 2
    assert "pb.jsonl:1: field 'label': first-error index 4 but the solution has 1 steps" in capsys.readouterr().err
