"""Round trips on every real file in ../shared/data that a format applies to.

Each test converts the file to prmkit records, writes and rereads them as a prmkit file, converts
back, and compares the JSON values (key order aside). Skipped with the reason where the data is absent.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from prmkit.convert import Options, convert_file, read
from prmkit.io import RejectWriter, iter_json

pytestmark = pytest.mark.shared_data

PRM800K_RAW = ["openr_samples_prm800k.jsonl", "tongyx361_prm800k-phase1-train-example.json",
               "tongyx361_prm800k-phase1-test-example.json", "tongyx361_prm800k-phase2-test-example.json"]
# (folder/file glob, format, options): every real file a two-way format applies to.
TWO_WAY = [("prm800k/" + name, "prm800k", Options()) for name in PRM800K_RAW] + [
    ("prm800k/phase1_test.stepwise-critic.jsonl.gz", "stepwise-critic", Options()),
    ("prm800k/tongyx361_MATH-problem-example.json", "math", Options()),
    ("step-formats/openr_samples_math-shepherd.jsonl", "math-shepherd", Options(supervise="all")),
    ("step-formats/openr_samples_math-aps.jsonl", "math-aps", Options()),
    ("step-formats/openr_samples_math-aps-tree.jsonl", "math-aps-tree", Options()),
    ("processbench/gsm8k.json", "processbench", Options()),
    ("processbench/math.json", "processbench", Options()),
    ("math500/test.jsonl", "math", Options()),
    ("gsm8k/test.jsonl", "gsm8k", Options()),
    ("competition/qwen25math_aime24_test.jsonl", "competition", Options()),
    ("competition/qwen25math_amc23_test.jsonl", "competition", Options()),
    ("competition/evalreasoning_aime25_test.jsonl", "competition", Options()),
]
# Files of the folders above that no two-way format applies to, with the reason.
NOT_TWO_WAY = {
    "prm800k/tongyx361_RM-scored-example.json": "a third party's scored MATH-500 solution, not a format prmkit reads",
    "step-formats/prmbench_subset400_target_data.jsonl": "PRMBench is read only (tested below)",
}


def _values(path: Path) -> list:
    return [raw.value for raw in iter_json(path)]


def _round_trip(src: Path, fmt: str, options: Options, tmp_path: Path) -> tuple[int, int]:
    suffix = ".json" if src.name.endswith(".json") and fmt == "processbench" else ".jsonl"
    mid, out = tmp_path / "mid.jsonl.gz", tmp_path / f"back{suffix}"
    first = convert_file(src, mid, fmt, "prmkit", options)
    second = convert_file(mid, out, "prmkit", fmt, options)
    assert first.rejected == 0 and not first.dropped and not second.dropped
    assert _values(out) == _values(src)
    return first.records_in, second.rows_out


@pytest.mark.parametrize("name,fmt,options", TWO_WAY, ids=[t[0] for t in TWO_WAY])
def test_round_trip_real_file(shared_data, tmp_path, name, fmt, options):
    records, rows = _round_trip(shared_data / name, fmt, options, tmp_path)
    assert rows == len(_values(shared_data / name)) and records >= 1


def test_every_real_file_is_covered(shared_data):
    covered = {name for name, _, _ in TWO_WAY} | set(NOT_TWO_WAY)
    for folder in ("prm800k", "step-formats", "processbench", "math500", "gsm8k", "competition"):
        for path in (shared_data / folder).iterdir():
            assert f"{folder}/{path.name}" in covered, f"no round-trip test for {folder}/{path.name}"


def test_prm800k_records_keep_every_field(shared_data):
    solutions = list(read(shared_data / "prm800k/openr_samples_prm800k.jsonl", "prm800k"))
    assert [s.finish_reason for s in solutions] == ["solution", "found_error", "solution", "solution", "give_up",
                                                    "solution"]
    assert [s.answer for s in solutions][:4] == ["29", None, "468", "9"]
    assert solutions[5].screening and solutions[5].generation == -1 and solutions[5].prelabel.answer == "8, 3, 1"
    assert solutions[1].prelabel.verifier_score == pytest.approx(0.0011546110201324836)
    assert solutions[0].steps[1].human.text.startswith("We have") and solutions[0].steps[1].chosen is None
    assert solutions[4].meta == {"prm800k": {"null_steps": [8]}}


def test_stepwise_critic_rebuilds_the_trees(shared_data):
    path = shared_data / "prm800k/phase1_test.stepwise-critic.jsonl.gz"
    solutions = list(read(path, "stepwise-critic"))
    with gzip.open(path, "rt") as f:
        assert sum(1 for _ in f) == 5449
    assert len({s.problem.problem for s in solutions}) == 101
    ratings = Counter(c.rating for s in solutions for step in s.steps
                      for c in step.completions + ([step.human] if step.human else []))
    assert ratings == Counter({1: 2245, -1: 1970, 0: 867, None: 367})
    assert sum(len(s.steps) for s in solutions) == 1860


def test_prmbench_reads_with_out_of_range_error_steps_rejected(shared_data, tmp_path):
    path = shared_data / "step-formats/prmbench_subset400_target_data.jsonl"
    rejects = RejectWriter(tmp_path / "r.jsonl")
    solutions = list(read(path, "prmbench", rejects=rejects))
    # 11 rows name an error step beyond the end of their modified process: a defect of the data.
    assert (len(solutions), rejects.count) == (383, 11)
    assert all(e["field"].startswith("error_steps[") for e in rejects.errors)
    first = solutions[0]
    assert first.id == "prm_test_p1_0" and first.ratings == [1, 1, 1, 1, -1, -1]


def test_prmbench_cli_stops_at_a_bad_row_and_says_how_to_go_on(shared_data, tmp_path, capsys):
    from prmkit.cli import main

    src, out = shared_data / "step-formats/prmbench_subset400_target_data.jsonl", tmp_path / "pb.jsonl"
    assert main(["data", "convert", "--from", "prmbench", "--to", "prmkit", str(src), str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{src}:28: field 'error_steps[1]': error step 54 (1-based) is outside modified_process" in err
    rejects = tmp_path / "pb.rejects.jsonl"
    assert f"rerun with --skip-invalid (bad rows go to {rejects}, their count is printed)" in err
    assert not out.exists()
    argv = ["data", "convert", "--from", "prmbench", "--to", "prmkit", "--skip-invalid", str(src), str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"{src} -> {out}: read 383 records, wrote 383 rows, rejected 11",
                       f"11 invalid records written to {tmp_path / 'pb.rejects.jsonl'}"]
    assert len(_values(tmp_path / "pb.rejects.jsonl")) == 11


def test_processbench_cli_keeps_the_final_answer(shared_data, tmp_path, capsys):
    from prmkit.cli import main

    out = tmp_path / "pb.jsonl"
    assert main(["data", "convert", "--from", "processbench", "--to", "prmkit",
                 str(shared_data / "processbench/gsm8k.json"), str(out)]) == 0
    assert "read 400 records, wrote 400 rows, rejected 0" in capsys.readouterr().out
    answers = [row.get("answer") for row in _values(out)]
    # 338 rows end on a \boxed{} answer; the other 62 state it in prose ("the customer paid $37")
    assert answers[0] == "30" and sum(a is not None for a in answers) == 338


def test_processbench_counts(shared_data):
    solutions = list(read(shared_data / "processbench/gsm8k.json", "processbench"))
    assert len(solutions) == 400
    errors = [s.first_error() for s in solutions]
    raw = json.loads((shared_data / "processbench/gsm8k.json").read_text())
    assert errors == [None if r["label"] == -1 else r["label"] for r in raw]


def test_real_prm800k_to_trl_and_shepherd(shared_data, tmp_path):
    src = shared_data / "prm800k/openr_samples_prm800k.jsonl"
    report = convert_file(src, tmp_path / "trl.jsonl", "prm800k", "trl", Options(neutral="positive"))
    # two solutions take a human-written (unrated) step inside their supervised span
    assert report.rows_out + sum(report.dropped.values()) == 6
    for row in _values(tmp_path / "trl.jsonl"):
        assert len(row["completions"]) == len(row["labels"]) and row["neutral_policy"] == "positive"
        assert False not in row["labels"][:-1]


def test_problem_files_read_answers(shared_data):
    gsm = next(iter(read(shared_data / "gsm8k/test.jsonl", "gsm8k")))
    assert gsm.answer == "18"
    amc = list(read(shared_data / "competition/qwen25math_amc23_test.jsonl", "competition"))
    assert amc[0].answer == "27" and amc[0].id == "0"
    math = list(read(shared_data / "math500/test.jsonl", "math"))
    assert len(math) == 500 and math[0].subject == "Precalculus" and math[0].id == "test/precalculus/807.json"
