"""Pool loading: formats, answer grouping, step-score aggregation, compact arrays."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.convert.candidates import gsm8k_example_answer
from prmkit.evaluate.pool import (
    detect_format,
    group_answers,
    load_pool,
    pool_from_lists,
)
from prmkit.io import RecordError, write_records
from prmkit.schema import Problem, Solution


def solution(pid, answer, grade, scores=None, step_scores=None):
    sol = Solution.from_steps(Problem(f"problem {pid}", answer="4", id=pid), ["step one", "step two"],
                              answer=answer, grade=grade, scores=scores or {})
    for step, value in zip(sol.steps, step_scores or []):
        step.scores["p"] = value
    return sol


def test_prmkit_pool_groups_by_problem_id_and_keeps_file_order(tmp_path):
    path = tmp_path / "scored.jsonl"
    write_records(path, [solution("a", "4", "correct", {"rm": 0.9}, [0.9, 0.5]),
                         solution("b", "5", "incorrect", {"rm": 0.2}, [0.3, 0.2]),
                         solution("a", None, "incorrect", {"rm": 0.99}, [0.9, 0.9]),
                         solution("a", "4.0", "correct", {}, [0.8, 0.7])])
    pool = load_pool(path, columns=["rm", "p:min", "p:product"], answer_key="exact")
    assert pool.format == "prmkit" and pool.problem_ids == ["a", "b"]
    assert pool.sizes.tolist() == [3, 1]
    assert pool.has_answer.tolist() == [True, False, True, True]
    assert pool.correct.tolist() == [True, False, True, False]
    np.testing.assert_allclose(pool.scores["rm"], [0.9, 0.99, np.nan, 0.2])
    np.testing.assert_allclose(pool.scores["p:min"], [0.5, 0.9, 0.7, 0.2])
    np.testing.assert_allclose(pool.scores["p:product"], [0.45, 0.81, 0.56, 0.06])
    assert pool.group.tolist() == [0, -1, 1, 0]  # exact strings: "4" and "4.0" differ


def test_grader_grouping_merges_equivalent_answers():
    grade = pytest.importorskip("prmkit.grade")
    assert grade.equivalent("\\frac{1}{2}", "0.5")
    pool = pool_from_lists([["\\frac{1}{2}", "0.5", "1/2", "3"]], [[1, 1, 1, 0]])
    assert pool.group.tolist() == [0, 0, 0, 1]
    assert pool_from_lists([["\\frac{1}{2}", "0.5"]], [[1, 1]], answer_key="exact").group.tolist() == [0, 1]


def test_group_answers_is_transitive_union():
    pairs = {frozenset(("a", "b")), frozenset(("b", "c"))}
    assert group_answers(["a", "c", "b", "d"], equivalent=lambda x, y: frozenset((x, y)) in pairs) == [0, 0, 0, 1]


def test_missing_column_and_bad_records_are_errors(tmp_path):
    path = tmp_path / "s.jsonl"
    write_records(path, [solution("a", "4", "correct", {"rm": 0.9})])
    with pytest.raises(ValueError, match="missing from every sample"):
        load_pool(path, columns=["orm"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"problem": {"problem": "x"}, "grade": "maybe"}) + "\n")
    with pytest.raises(RecordError, match="bad.jsonl:1") as e:
        load_pool(bad)
    assert e.value.field == "grade"


def test_detect_format_and_gsm8k_answer():
    assert detect_format({"problem": {"problem": "x"}}) == "prmkit"
    assert detect_format({"question": "q", "6b_finetuning": {"is_correct": True, "solution": "A: 1"}}) == "gsm8k-examples"
    with pytest.raises(ValueError, match="--from"):
        detect_format({"x": 1})
    assert gsm8k_example_answer("so 2 * 9 = 18\nA: 18") == "18"


@pytest.mark.shared_data
def test_real_candidate_pools(shared_data):
    qwen = load_pool(shared_data / "candidates" / "qwen25math_math_cot_100.jsonl")
    assert (qwen.n_problems, qwen.n_samples, qwen.format) == (100, 800, "qwen-candidates")
    assert qwen.correct.sum() == 728 and list(qwen.scores) == ["pred_score"]
    assert qwen.group_conflicts == 0
    gsm = load_pool(shared_data / "candidates" / "gsm8k_example_model_solutions.jsonl", answer_key="exact")
    assert (gsm.n_problems, gsm.n_samples, gsm.format) == (1319, 5276, "gsm8k-examples")
    assert (~gsm.has_answer).sum() == 11 and gsm.scores == {}
    assert gsm.nbytes < 100_000


def test_ungradable_samples_are_left_out_and_counted(tmp_path):
    """A sample the grader could not decide is no verdict: it is not a wrong answer in best-of-N."""
    from prmkit.evaluate.curves import pool_summary
    path = tmp_path / "scored.jsonl"
    write_records(path, [solution("a", "4", "correct", {"rm": 0.1}, [0.1, 0.1]),
                         solution("a", "5", "unparseable", {"rm": 0.99}, [0.9, 0.9]),
                         solution("a", None, "incorrect", {"rm": 0.5}, [0.5, 0.5])])
    pool = load_pool(path, columns=["rm"])
    assert pool.n_samples == 2 and pool.ungradable == 1
    assert pool.has_answer.tolist() == [True, False]
    assert pool_summary(pool, 2)["ungradable_left_out"] == 1


def test_plain_qwen_rows_read_as_the_checked_path_reads_them(tmp_path, monkeypatch):
    """A qwen-candidates row that passes every check is added in bulk (prmkit.convert.candidates.plain_qwen_row);
    the pool is the one the per-sample checks build, and a row it does not take goes that path."""
    import prmkit.evaluate.pool as pool_module

    rows = [{"idx": 0, "code": ["a", "b", "c"], "pred": ["1", "", "2"], "score": [True, False, False],
             "pred_score": [[0.5], [0.25], [1]]},
            {"idx": 1, "code": ["d", "e"], "pred": ["x", "x"], "score": [False, True], "pred_score": [0.1, None]},
            {"idx": 2, "code": ["f"], "pred": ["\\frac{1}{2}"], "score": [True], "report": ["ok"]}]
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plain = load_pool(path, "qwen-candidates", answer_key="exact")
    monkeypatch.setattr(pool_module, "plain_qwen_row", lambda d: None)
    checked = load_pool(path, "qwen-candidates", answer_key="exact")
    big = tmp_path / "big.jsonl"  # problem keys past 64 bits stay apart, as json reads them
    big.write_text("".join(json.dumps(dict(rows[0], idx=2**64 + k)) + "\n" for k in range(2)), encoding="utf-8")
    monkeypatch.undo()
    assert load_pool(big, "qwen-candidates", answer_key="exact").problem_ids == [str(2**64), str(2**64 + 1)]
    for name in ("offsets", "correct", "has_answer", "group"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(checked, name))
    np.testing.assert_array_equal(plain.scores["pred_score"], checked.scores["pred_score"])
    assert plain.scores["pred_score"].tolist()[:3] == [0.5, 0.25, 1.0]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["p", "q"]), st.lists(st.tuples(
    st.sampled_from([None, "", " ", "1", "2", "x"]), st.booleans(), st.none() | st.floats(-5, 5)), max_size=6)),
    max_size=5), st.sampled_from([None, ["s"]]))
def test_add_many_is_add_of_each_sample(rows, columns):
    """PoolBuilder.add_many (a row at a time) builds the pool that add (a sample at a time) builds."""
    from prmkit.evaluate.pool import PoolBuilder

    one, many = PoolBuilder(columns, answer_key="exact"), PoolBuilder(columns, answer_key="exact")
    for problem, samples in rows:
        for answer, ok, score in samples:
            one.add(problem, answer, ok, {"s": score} if score is not None else {})
        many.add_many(problem, [a for a, _, _ in samples], [ok for _, ok, _ in samples],
                      {"s": [score for _, _, score in samples]})
    if not one.prob:
        return
    if columns and all(score is None for _, samples in rows for _, _, score in samples):
        with pytest.raises(ValueError, match="missing from every sample"):
            many.build()
        return
    a, b = one.build(), many.build()
    for name in ("offsets", "correct", "has_answer", "group"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert list(a.scores) == list(b.scores) and a.problem_ids == b.problem_ids
    for name in a.scores:
        np.testing.assert_array_equal(a.scores[name], b.scores[name])
