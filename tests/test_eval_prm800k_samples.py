"""``--from prm800k-samples``: the paper's released scored samples, a line per sample, read into a Pool.

The small file below is worked by hand: two problems whose samples are interleaved, a tie on
``prm_score``, samples without ``orm_score``, ``given_answer`` beside ``answer``, and an answerless
sample with the top ``prm_score`` (it must never be picked).
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from prmkit.cli import main
from prmkit.evaluate.pool import detect_format, load_pool
from prmkit.io import RecordError

A, B = "What is $1+1$?", "What is $2+3$?"
SAMPLES = [
    {"problem": A, "answer": "2", "is_correct": True, "prm_score": 0.9, "orm_score": 0.4},
    {"problem": B, "given_answer": "5", "is_correct": True, "prm_score": 0.3, "orm_score": 0.8},
    {"problem": A, "answer": "3", "is_correct": False, "prm_score": 0.9, "orm_score": 0.7},  # ties on prm
    {"problem": B, "given_answer": "6", "is_correct": False, "prm_score": 0.6},  # no orm_score
    # `answer` is there and null: no answer, whatever given_answer says (eval.py's reading)
    {"problem": A, "answer": None, "given_answer": "2", "is_correct": None, "prm_score": 0.99},
    {"problem": B, "answer": "5", "is_correct": True, "prm_score": 0.2, "orm_score": 0.1},
]


def write_lines(path, records):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    return path


def test_pool_groups_interleaved_samples_by_problem_text(tmp_path):
    pool = load_pool(write_lines(tmp_path / "samples.jsonl", SAMPLES), "prm800k-samples", answer_key="exact")
    assert pool.format == "prm800k-samples" and pool.problem_ids == [A, B]
    assert pool.offsets.tolist() == [0, 3, 6]  # A: lines 1, 3, 5; B: lines 2, 4, 6, in file order
    assert pool.has_answer.tolist() == [True, True, False, True, True, True]
    assert pool.correct.tolist() == [True, False, False, True, False, True]
    assert list(pool.scores) == ["prm_score", "orm_score"]
    np.testing.assert_array_equal(pool.scores["prm_score"], [0.9, 0.9, 0.99, 0.3, 0.6, 0.2])
    np.testing.assert_array_equal(pool.scores["orm_score"], [0.4, 0.7, np.nan, 0.8, np.nan, 0.1])
    assert pool.group.tolist() == [0, 1, -1, 0, 1, 0]  # B's "5" from given_answer and from answer: one group
    assert pool.group_conflicts == 0


def test_gzip_and_column_selection(tmp_path):
    path = write_lines(tmp_path / "samples.jsonl.gz", SAMPLES)
    pool = load_pool(path, columns=["orm_score"], answer_key="exact")
    assert pool.format == "prm800k-samples" and list(pool.scores) == ["orm_score"] and pool.n_samples == 6
    with pytest.raises(ValueError, match="'p:min' is missing from every sample"):
        load_pool(path, columns=["p:min"], answer_key="exact")  # no step scores in this format


def test_eval_bon_cli_matches_hand_computation(tmp_path, capsys):
    path = write_lines(tmp_path / "samples.jsonl", SAMPLES)
    out = tmp_path / "run"
    assert main(["eval", "bon", str(path), "--from", "prm800k-samples", "--ns", "1,2,3", "--answer-key", "exact",
                 "--bootstrap", "50", "--out-dir", str(out)]) == 0
    assert "bon_acc[prm_score]" in capsys.readouterr().out
    m = {k: v["estimate"] for k, v in json.loads((out / "bon.json").read_text())["metrics"].items()}
    # N=2: the three 2-subsets of each problem's 3 samples, equally likely.
    # prm, A: {1,3} tie 0.9 -> 1/2, {1,5} -> 1 (5 has no answer), {3,5} -> 0; B: {2,4} -> 4 wrong,
    #   {2,6} -> 2 right, {4,6} -> 4 wrong.                          (1/2 + 1/3) / 2 = 5/12
    # orm, A: {1,3} -> 3 wrong, {1,5} -> 1 right, {3,5} -> 3 wrong; B: 4 has no orm, so 2, 2, 6: right.
    #                                                                (1/3 + 1) / 2 = 2/3
    expected = {"bon_acc@1[prm_score]": (1 / 3 + 2 / 3) / 2, "bon_acc@2[prm_score]": 5 / 12,
                "bon_acc@3[prm_score]": (1 / 2 + 0) / 2,  # A: the tie; B: 0.6 is wrong (0.99 has no answer)
                "bon_acc@1[orm_score]": (1 / 3 + 2 / 3) / 2, "bon_acc@2[orm_score]": 2 / 3,
                "bon_acc@3[orm_score]": (0 + 1) / 2,
                "pass@1": (1 / 3 + 2 / 3) / 2, "pass@2": (2 / 3 + 1) / 2, "pass@3": 1.0,
                "first_acc": 1.0,
                "maj_acc@3": (1 / 2 + 1) / 2}  # A: "2" and "3" tie one vote each; B: "5" twice
    for name, value in expected.items():
        assert m[name] == pytest.approx(value), name


def test_detect_format():
    assert detect_format(SAMPLES[0]) == "prm800k-samples"
    assert detect_format({"problem": A, "answer": None, "is_correct": None}) == "prm800k-samples"  # no score
    assert detect_format({"problem": A, "is_correct": True, "prm_score": 0.5,
                          "steps": ["step one", "step two"]}) == "prm800k-samples"  # third-party text steps
    assert detect_format({"problem": {"problem": A}, "steps": [{"completions": []}]}) == "prmkit"
    assert detect_format({"problem": A, "answer": "2"}) == "prmkit"  # a prmkit problem record: no is_correct


def test_auto_detected_file_gives_the_same_pool(tmp_path):
    path = write_lines(tmp_path / "samples.jsonl", SAMPLES)
    auto, forced = load_pool(path, answer_key="exact"), load_pool(path, "prm800k-samples", answer_key="exact")
    assert auto.format == "prm800k-samples"
    assert auto.offsets.tolist() == forced.offsets.tolist() and auto.group.tolist() == forced.group.tolist()


@pytest.mark.parametrize("bad,field,message", [
    ({"answer": "2", "is_correct": True, "prm_score": 0.5}, "problem", "missing required field"),
    ({"problem": 7, "answer": "2", "is_correct": True}, "problem", "expected a string, got int"),
    ({"problem": A, "answer": "2", "is_correct": "yes", "prm_score": 0.5}, "is_correct", "expected a boolean"),
    ({"problem": A, "answer": "2", "is_correct": 1, "prm_score": 0.5}, "is_correct", "expected a boolean, got int"),
    ({"problem": A, "given_answer": "2", "prm_score": 0.5}, "is_correct", "needs true or false"),
    ({"problem": A, "answer": "2", "is_correct": True, "prm_score": "0.5"}, "prm_score", "expected a number"),
    ({"problem": A, "answer": "2", "is_correct": True, "orm_score": True}, "orm_score", "got a boolean"),
    ({"problem": A, "given_answer": 2, "is_correct": True}, "given_answer", "expected a string"),
])
def test_bad_records_name_file_line_and_field(tmp_path, bad, field, message):
    path = write_lines(tmp_path / "bad.jsonl", [SAMPLES[0], bad])
    with pytest.raises(RecordError, match=message) as e:
        load_pool(path, "prm800k-samples", answer_key="exact")
    assert (e.value.path, e.value.line, e.value.field) == (str(path), 2, field)


def test_cli_error_names_file_line_and_field(tmp_path, capsys):
    path = write_lines(tmp_path / "bad.jsonl", [SAMPLES[0], {**SAMPLES[1], "orm_score": "high"}])
    assert main(["eval", "bon", str(path), "--from", "prm800k-samples", "--no-vote", "--answer-key", "exact"]) == 2
    assert "bad.jsonl:2: field 'orm_score': expected" in capsys.readouterr().err


@pytest.mark.shared_data
def test_real_scored_example(shared_data):
    """tongyx361/reward-by-prm800k's one MATH-500 sample scored by a PRM and an ORM (pretty-printed JSON)."""
    pool = load_pool(shared_data / "prm800k" / "tongyx361_RM-scored-example.json", answer_key="exact")
    assert (pool.format, pool.n_problems, pool.n_samples) == ("prm800k-samples", 1, 1)
    assert pool.problem_ids[0].startswith("A $90^\\circ$ rotation around the origin")
    assert pool.correct.tolist() == [True] and pool.has_answer.tolist() == [True]
    assert pool.scores["prm_score"].tolist() == [0.09157553704097245]
    assert pool.scores["orm_score"].tolist() == [0.6326445937156677]


def test_plain_path_reads_what_the_checked_path_reads(tmp_path, monkeypatch):
    """A released pool is read straight from its bytes (prmkit.evaluate.pool._read_plain); the pool
    is the one the record-by-record checked path builds, and a file it does not take goes that path."""
    import prmkit.evaluate.pool as pool_module

    records = SAMPLES + [{"problem": A, "answer": "2", "is_correct": True, "prm_score": 3, "orm_score": 1e-300,
                          "steps": ["a"], "rating_probs": [{"1": 0.5}]}]
    path = write_lines(tmp_path / "samples.jsonl", records)
    fast = load_pool(path, "prm800k-samples", answer_key="exact")
    monkeypatch.setattr(pool_module, "_read_plain", lambda *a: None)
    checked = load_pool(path, "prm800k-samples", answer_key="exact")
    for name in ("offsets", "correct", "has_answer", "group"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(checked, name))
    assert fast.problem_ids == checked.problem_ids and list(fast.scores) == list(checked.scores)
    for name in fast.scores:
        np.testing.assert_array_equal(fast.scores[name], checked.scores[name])


@pytest.mark.parametrize("bad", ['{"problem": "q", "answer": "1", "is_correct": "yes"}', '{"problem": "q", "answer": '])
def test_a_bad_line_far_into_a_file_is_named_by_the_checked_path(tmp_path, bad):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SAMPLES * 20) + bad + "\n", encoding="utf-8")
    with pytest.raises(RecordError, match=f"samples.jsonl:{len(SAMPLES) * 20 + 1}"):
        load_pool(path, "prm800k-samples", answer_key="exact")
