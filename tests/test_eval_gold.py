"""The second gold (issue 30, 1): the step-judge limit and valid-solution accuracy, exact, against brute force."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.evaluate.curves import evaluate_pool
from prmkit.evaluate.pool import load_pool, pool_from_lists
from prmkit.io import write_records
from prmkit.schema import Solution


def brute(scores, answered, valid, n: int, m_pad: int) -> tuple[float, float]:
    """(step limit, valid-solution accuracy) over every n-subset of m_pad slots (empty slots past the
    samples); ties at the top split evenly, as the exact estimator does."""
    limit = picked = Fraction(0)
    subsets = list(itertools.combinations(range(m_pad), n))
    for subset in subsets:
        real = [i for i in subset if i < len(scores) and answered[i]]
        limit += any(valid[i] for i in real)
        if real:
            top = max(scores[i] for i in real)
            tied = [i for i in real if scores[i] == top]
            picked += Fraction(sum(valid[i] for i in tied), len(tied))
    return float(limit / len(subsets)), float(picked / len(subsets))


sample = st.tuples(st.sampled_from([0.1, 0.4, 0.4, 0.7, 0.9]), st.booleans(), st.booleans())


@settings(deadline=None, max_examples=60)
@given(pools=st.lists(st.lists(sample, min_size=1, max_size=5), min_size=1, max_size=3), extra=st.integers(0, 2),
       n=st.integers(1, 7))
def test_gold_curves_equal_brute_force(pools, extra, n):
    m_pad = max(len(p) for p in pools) + extra
    n = min(n, m_pad)
    answers = [[f"a{i}" if ok else None for i, (_, ok, _) in enumerate(p)] for p in pools]
    correct = [[ok and v for _, ok, v in p] for p in pools]
    valid = [[v for _, _, v in p] for p in pools]
    pool = pool_from_lists(answers, correct, {"rm": [[s for s, _, _ in p] for p in pools]}, "exact", valid)
    result = evaluate_pool(pool, ["rm"], [n], pad_to=m_pad, vote=False, n_boot=10)
    want = [brute([s for s, _, _ in p], [ok for _, ok, _ in p], [v for _, _, v in p], n, m_pad) for p in pools]
    assert np.isclose(result["metrics"][f"step_limit@{n}"]["estimate"], np.mean([w[0] for w in want]))
    assert np.isclose(result["metrics"][f"valid_acc@{n}[rm]"]["estimate"], np.mean([w[1] for w in want]))
    assert result["metrics"][f"valid_acc@{n}[rm]"]["estimate"] <= result["metrics"][f"step_limit@{n}"]["estimate"] + 1e-12


def test_a_perfect_step_judge_reaches_the_limit_and_a_right_answer_through_a_wrong_step_is_not_valid():
    # one problem: a right answer through a wrong step (the ORM's pick), a fully valid right answer, a wrong one
    pool = pool_from_lists([["7", "7", "8"]], [[True, True, False]], {"orm": [[0.9, 0.5, 0.1]], "judge": [[0, 1, 0]]},
                           "exact", [[False, True, False]])
    m = evaluate_pool(pool, ["orm", "judge"], [1, 3], vote=False, n_boot=10)["metrics"]
    assert m["bon_acc@3[orm]"]["estimate"] == 1.0 and m["valid_acc@3[orm]"]["estimate"] == 0.0
    assert m["valid_acc@3[judge]"]["estimate"] == m["step_limit@3"]["estimate"] == 1.0
    assert np.isclose(m["step_limit@1"]["estimate"], 1 / 3)


def test_load_pool_reads_step_truth_from_the_records_or_a_given_oracle(tmp_path):
    sols = [Solution.from_steps("q", ["a", "b"], ratings=r, grade="correct", scores={"rm": s})
            for r, s in (([1, 1], 0.9), ([1, -1], 0.5))]
    for s in sols:
        s.answer = "1"
    path = tmp_path / "pool.jsonl"
    write_records(path, sols)
    assert load_pool(path).valid.tolist() == [True, False]
    assert load_pool(path, step_truth=lambda sol: None).valid is None  # unknown for one: no gold metrics
    flipped = load_pool(path, step_truth=lambda sol: [-1] if sol.scores["rm"] > 0.6 else [1])
    assert flipped.valid.tolist() == [False, True]
    sols[1].steps[1].taken.rating = None
    write_records(path, sols)
    assert load_pool(path).valid is None
    assert "step_limit@2" not in evaluate_pool(load_pool(path), ["rm"], [2], vote=False, n_boot=10)["metrics"]


def test_eval_bon_and_its_report_show_the_second_gold(tmp_path, capsys):
    from prmkit.cli import main
    from prmkit.evaluate.report import write_report

    sols = []
    for p in range(6):
        for i, (ratings, right, score) in enumerate([([1, 1], True, 0.9), ([1, -1], True, 0.6), ([-1, 1], False, 0.2)]):
            s = Solution.from_steps(f"q{p}", ["a", "b"], ratings=ratings, grade="correct" if right else "incorrect",
                                    scores={"prm_min": score if p % 2 else 1 - score})
            s.answer, s.id = ("7" if right else "8"), f"{p}-{i}"
            sols.append(s)
    path = tmp_path / "pool.jsonl"
    write_records(path, sols)
    assert main(["eval", "bon", str(path), "--ns", "1,3", "--bootstrap", "50", "--out-dir", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "step_limit" in out and "valid_acc[prm_min]" in out
    result = __import__("json").loads((tmp_path / "out" / "bon.json").read_text())
    assert result["metrics"]["step_limit@3"]["estimate"] == 1.0
    assert np.isclose(result["metrics"]["valid_acc@3[prm_min]"]["estimate"], 0.5)  # right on 3 of 6 problems
    text = write_report(tmp_path / "out").read_text()
    assert "step-judge limit" in text and "valid solution [95% CI]" in text


def brute_shares(scores, answered, classes, n: int, m_pad: int) -> dict[str, float]:
    """Each class's share of the best-of-n picks over every n-subset of m_pad slots (ties split evenly)."""
    shares = dict.fromkeys(set(classes), Fraction(0))
    subsets = list(itertools.combinations(range(m_pad), n))
    for subset in subsets:
        real = [i for i in subset if i < len(scores) and answered[i]]
        if real:
            top = max(scores[i] for i in real)
            tied = [i for i in real if scores[i] == top]
            for i in tied:
                shares[classes[i]] += Fraction(1, len(tied))
    return {k: float(v / len(subsets)) for k, v in shares.items()}


@settings(deadline=None, max_examples=60)
@given(pools=st.lists(st.lists(st.tuples(st.sampled_from([0.1, 0.4, 0.4, 0.9]), st.booleans(),
                                         st.sampled_from("abc")), min_size=1, max_size=5), min_size=1, max_size=3),
       extra=st.integers(0, 2), n=st.integers(1, 7))
def test_pick_shares_equal_brute_force_and_sum_to_the_chance_of_an_answered_pick(pools, extra, n):
    m_pad = max(len(p) for p in pools) + extra
    n = min(n, m_pad)
    answers = [[f"a{i}" if ok else None for i, (_, ok, _) in enumerate(p)] for p in pools]
    classes = np.array([k for p in pools for _, _, k in p])
    pool = pool_from_lists(answers, [[False] * len(p) for p in pools], {"rm": [[s for s, _, _ in p] for p in pools]}, "exact")
    result = evaluate_pool(pool, ["rm"], [n], pad_to=m_pad, vote=False, n_boot=10, classes=classes)
    m = result["metrics"]
    want = [brute_shares([s for s, _, _ in p], [ok for _, ok, _ in p], [k for _, _, k in p], n, m_pad) for p in pools]
    answered_classes = set(classes[pool.has_answer].tolist())
    assert {k for k in "abc" if f"pick_share@{n}[rm][{k}]" in m} == answered_classes
    for k in answered_classes:
        assert np.isclose(m[f"pick_share@{n}[rm][{k}]"]["estimate"], np.mean([w.get(k, 0.0) for w in want]))
    # the chance an n-subset holds an answered sample: brute's step limit with "valid" meaning "answered"
    any_answered = [brute([0.0] * len(p), [ok for _, ok, _ in p], [ok for _, ok, _ in p], n, m_pad)[0] for p in pools]
    total = sum(m[f"pick_share@{n}[rm][{k}]"]["estimate"] for k in answered_classes)
    assert np.isclose(total, np.mean(any_answered))
