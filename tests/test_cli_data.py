"""``prmkit data``: convert, validate, stats, formats; bad input; atomic output.

The commands run in-process through ``prmkit.cli.main`` (with only the ``data`` group registered, so
these tests do not depend on the other groups) and once through the installed ``prmkit`` script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prmkit import cli
from prmkit.convert import FORMATS
from prmkit.io import RecordError

GOOD = {"labeler": "l", "timestamp": "t", "generation": None, "is_quality_control_question": False,
        "is_initial_screening_question": False, "question": {"problem": "1+1?", "ground_truth_answer": "2"},
        "label": {"steps": [{"completions": [{"text": "1+1 = 2.\n\n# Answer\n\n2", "rating": 1, "flagged": False}],
                             "human_completion": None, "chosen_completion": 0}],
                  "total_time": 10, "finish_reason": "solution"}}


@pytest.fixture
def run(monkeypatch, capsys):
    monkeypatch.setattr(cli, "GROUPS", (("data", "data"),))

    def run(*argv: str) -> tuple[int, str, str]:
        status = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return status, out, err
    return run


def _bad(**changes) -> dict:
    rec = json.loads(json.dumps(GOOD))
    step = rec["label"]["steps"][0]["completions"][0]
    for key, value in changes.items():
        if key == "drop":
            del rec[value]
        else:
            step[key] = value
    return rec


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


BAD_CASES = [
    ("malformed JSON", '{"labeler": "l", ', "malformed JSON", None),
    ("missing field", _bad(drop="question"), "missing required field", "question"),
    ("wrong type", _bad(flagged="yes"), "expected a boolean", "label.steps[0].completions[0].flagged"),
    ("unknown rating", _bad(rating=2), "unknown rating 2", "label.steps[0].completions[0].rating"),
    ("empty step", _bad(text="  "), "empty step", "label.steps[0].completions[0].text"),
]


@pytest.mark.parametrize("case,line,message,field", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_names_file_line_and_field(run, tmp_path, case, line, message, field):
    src = _write(tmp_path / "in.jsonl", [GOOD, line])
    status, _out, err = run("data", "convert", "--from", "prm800k", src, tmp_path / "out.jsonl")
    assert status == 2
    assert f"{src}:2:" in err and message in err
    if field:
        assert f"field '{field}'" in err
    assert not (tmp_path / "out.jsonl").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.jsonl"]  # no temporary file left behind


def test_skip_invalid_writes_rejects_and_prints_count(run, tmp_path):
    src = _write(tmp_path / "in.jsonl", [GOOD] + [c[1] for c in BAD_CASES] + [GOOD])
    status, out, err = run("data", "convert", "--from", "prm800k", "--skip-invalid", src, tmp_path / "out.jsonl")
    assert status == 0, err
    assert "5 invalid records" in out and "wrote 2 rows" in out
    rejects = [json.loads(x) for x in (tmp_path / "out.rejects.jsonl").read_text().splitlines()]
    assert [r["line"] for r in rejects] == [2, 3, 4, 5, 6]
    assert rejects[3]["field"] == "label.steps[0].completions[0].rating"
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 2


def test_validate_and_skip_invalid(run, tmp_path):
    good = _write(tmp_path / "good.jsonl", [GOOD])
    assert run("data", "validate", "--from", "prm800k", good)[0] == 0
    bad = _write(tmp_path / "bad.jsonl", [GOOD, _bad(rating=5)])
    status, _, err = run("data", "validate", "--from", "prm800k", bad)
    assert status == 2 and f"{bad}:2: field 'label.steps[0].completions[0].rating'" in err
    status, out, _ = run("data", "validate", "--from", "prm800k", "--skip-invalid", bad)
    assert status == 1 and "1 invalid" in out and (tmp_path / "bad.rejects.jsonl").exists()


def test_prmkit_file_errors_name_the_prmkit_field(run, tmp_path):
    src = _write(tmp_path / "x.jsonl", [{"problem": {"problem": "q"}, "steps": [{"completions": [{"text": "a",
                                                                                               "rating": 7}]}]}])
    status, _, err = run("data", "validate", src)
    assert status == 2 and f"{src}:1: field 'steps[0].completions[0].rating'" in err


def test_output_equal_to_input_is_refused(run, tmp_path):
    src = _write(tmp_path / "in.jsonl", [GOOD])
    before = src.read_text()
    status, _, err = run("data", "convert", "--from", "prm800k", "--to", "prm800k", src, src)
    assert status == 2 and "same file" in err
    assert src.read_text() == before


def test_interrupted_write_leaves_no_partial_output(tmp_path, monkeypatch):
    from prmkit.convert import convert_file, prm800k
    src = _write(tmp_path / "in.jsonl", [GOOD] * 5)
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    real = prm800k.from_prm800k
    calls = []

    def flaky(d):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(d)
    monkeypatch.setattr(prm800k, "from_prm800k", flaky)
    with pytest.raises(KeyboardInterrupt):
        convert_file(src, out, "prm800k", "prmkit")
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def test_convert_round_trip_and_stats(run, tmp_path):
    src = _write(tmp_path / "in.jsonl", [GOOD, GOOD])
    mid, back = tmp_path / "mid.jsonl.gz", tmp_path / "back.jsonl"
    assert run("data", "convert", "--from", "prm800k", src, mid)[0] == 0
    assert run("data", "convert", "--from", "prmkit", "--to", "prm800k", mid, back)[0] == 0
    assert [json.loads(x) for x in back.read_text().splitlines()] == [GOOD, GOOD]
    status, out, _ = run("data", "stats", mid)
    assert status == 0 and "solutions: 2" in out and "finish reasons: solution 2" in out
    status, out, _ = run("data", "stats", "--json", "--from", "prm800k", src)
    summary = json.loads(out)
    assert summary["ratings"]["+1"] == 2 and summary["right_answer_wrong_step"]["right_answer"] == 2


def test_trl_needs_an_explicit_neutral_policy(run, tmp_path):
    src = _write(tmp_path / "in.jsonl", [GOOD])
    status, _, err = run("data", "convert", "--from", "prm800k", "--to", "trl", src, tmp_path / "t.jsonl")
    assert status == 2 and "neutral policy" in err and not (tmp_path / "t.jsonl").exists()
    status, _out, _ = run("data", "convert", "--from", "prm800k", "--to", "trl", "--neutral", "negative",
                         src, tmp_path / "t.jsonl")
    row = json.loads((tmp_path / "t.jsonl").read_text())
    assert status == 0 and row["neutral_policy"] == "negative" and row["labels"] == [True]


def test_problem_records_cannot_become_solutions(run, tmp_path):
    src = _write(tmp_path / "g.jsonl", [{"question": "2+2?", "answer": "4\n#### 4"}])
    status, _, err = run("data", "convert", "--from", "gsm8k", "--to", "trl", "--neutral", "positive",
                         src, tmp_path / "t.jsonl")
    assert status == 2 and "holds step-labelled solutions" in err


def test_formats_lists_every_format_with_help(run):
    status, out, _ = run("data", "formats")
    assert status == 0
    for name, fmt in FORMATS.items():
        assert name in out and fmt.doc in out


@pytest.mark.parametrize("sub", ["convert", "validate", "stats", "formats"])
def test_help_has_examples(run, sub, capsys):
    with pytest.raises(SystemExit):
        cli.main(["data", sub, "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out


def test_record_error_is_a_value_error():
    assert issubclass(RecordError, ValueError)


def test_subprocess_entry_point(tmp_path):
    script = Path(sys.executable).with_name("prmkit")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "prmkit"]
    src = _write(tmp_path / "in.jsonl", [GOOD])
    done = subprocess.run(cmd + ["data", "convert", "--from", "prm800k", str(src), str(tmp_path / "o.jsonl")],
                          check=False, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr
    assert "wrote 1 rows" in done.stdout
