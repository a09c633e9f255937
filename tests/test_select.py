"""Selection strategies (prmkit.select): properties on generated pools, errors, the CLI, the label registry."""

from __future__ import annotations

import dataclasses
import json
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.cli import main
from prmkit.io import read_solutions, write_records
from prmkit.label import queue
from prmkit.schema import GRADES, Problem, Solution
from prmkit.select import (
    SelectConfig,
    SelectionError,
    convincing_wrong_answer,
    default_score,
    problem_key,
    random_sample,
    select,
    summarise,
    top_k,
    uncertainty,
    wrong_quota,
    wrong_quotas,
)

SETTINGS = settings(max_examples=60, deadline=None)
SCORES = [0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0]  # few values, so ties are common


def make_pool(rows) -> list[Solution]:
    """rows: (problem number, grade, score) -> solutions with ids s0, s1, ... in order."""
    return [Solution.from_steps(Problem(f"problem {p}", id=f"p{p}"), ["step"], id=f"s{i}", grade=g,
                                scores={"prm_min": sc})
            for i, (p, g, sc) in enumerate(rows)]


rows = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(GRADES), st.sampled_from(SCORES)), max_size=30)
ks = st.integers(0, 12)
shares = st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0])


def groups(pool, per_problem):
    if not per_problem:
        return {"all": pool}
    out: dict[str, list[Solution]] = {}
    for s in pool:
        out.setdefault(problem_key(s), []).append(s)
    return out


def is_wrong(s):
    return s.grade == "incorrect"  # the default: unparseable is no verdict, not a wrong answer


def run_all(pool, k, per_problem, share=0.8, seed=0):
    return {"convincing_wrong_answer": convincing_wrong_answer(pool, k, Random(seed), wrong_share=share,
                                                               per_problem=per_problem),
            "uncertainty": uncertainty(pool, k, Random(seed), per_problem=per_problem),
            "top_k": top_k(pool, k, Random(seed), per_problem=per_problem),
            "random": random_sample(pool, k, Random(seed), per_problem=per_problem)}


# --- sizes, quotas, determinism -------------------------------------------------------------------

@SETTINGS
@given(rows, ks, st.booleans(), shares)
def test_sizes_and_per_problem_quotas(rows, k, per_problem, share):
    pool = make_pool(rows)
    for name, chosen in run_all(pool, k, per_problem, share).items():
        ids = [s.id for s in chosen]
        assert len(ids) == len(set(ids)), name  # no candidate twice
        assert set(ids) <= {s.id for s in pool}, name
        for key, members in groups(pool, per_problem).items():
            got = [s for s in chosen if s in members] if per_problem else chosen
            assert len(got) == min(k, len(members)), (name, key)  # never more than k; full when possible


@SETTINGS
@given(rows, ks, st.booleans(), shares, st.integers(0, 2**32))
def test_deterministic_given_the_seed(rows, k, per_problem, share, seed):
    pool = make_pool(rows)
    first = {n: [s.id for s in c] for n, c in run_all(pool, k, per_problem, share, seed).items()}
    again = {n: [s.id for s in c] for n, c in run_all(pool, k, per_problem, share, seed).items()}
    assert first == again


@SETTINGS
@given(rows, ks, st.integers(0, 2**32))
def test_random_is_a_subset_in_random_order_and_matches_the_label_app(rows, k, seed):
    pool = make_pool(rows)
    chosen = random_sample(pool, k, Random(seed))
    assert len({s.id for s in chosen}) == len(chosen) == min(k, len(pool))
    assert [s.id for s in chosen] == [s.id for s in queue.random_strategy(pool, k, Random(seed))]


# --- who is chosen --------------------------------------------------------------------------------

@SETTINGS
@given(rows, ks, st.booleans())
def test_top_k_takes_the_highest_scores_and_uncertainty_the_nearest_half(rows, k, per_problem):
    pool = make_pool(rows)
    for members in groups(pool, per_problem).values():
        for chosen, key in [(top_k(pool, k, per_problem=per_problem), lambda s: s.scores["prm_min"]),
                            (uncertainty(pool, k, per_problem=per_problem), lambda s: -abs(s.scores["prm_min"] - .5))]:
            picked = [s for s in chosen if s in members]
            left = [s for s in members if s not in picked]
            if picked and left:
                assert min(map(key, picked)) >= max(map(key, left))
            assert [key(s) for s in picked] == sorted((key(s) for s in picked), reverse=True)  # serving order


def quotas_of(pool, k, share, per_problem):
    """Per group of :func:`groups`, the wrong-answer quota the library gives it."""
    members = list(groups(pool, per_problem).values())
    index = {id(s): i for i, s in enumerate(pool)}
    idx = [[index[id(s)] for s in m] for m in members]
    return wrong_quotas(idx, [is_wrong(s) for s in pool], [s.scores["prm_min"] for s in pool], k, share)


@SETTINGS
@given(rows, ks, st.booleans(), shares)
def test_wrong_quotas_spread_the_share_over_problems(rows, k, per_problem, share):
    pool = make_pool(rows)
    quotas = quotas_of(pool, k, share, per_problem)
    floor = int(share * k + 1e-9)
    assert all(q in (floor, floor + 1) for q in quotas)
    assert sum(quotas) <= wrong_quota(k * len(quotas), share)
    members = list(groups(pool, per_problem).values())
    eligible = [m for m in members if sum(map(is_wrong, m)) > floor]
    if len(eligible) == len(members):  # every group could take one more: the total is exact
        assert sum(quotas) == wrong_quota(k * len(quotas), share)
    for q, m in zip(quotas, members):  # an extra only where the group has that many wrong answers
        assert q == floor or sum(map(is_wrong, m)) > floor


def test_wrong_quotas_give_the_extras_to_the_most_convincing_next_wrong_answers():
    # k = 1 per problem at 0.8: 4 of 5 problems give a wrong answer, not all 5 (round(0.8) would be 1 each)
    pool = make_pool([(p, g, sc) for p, top in enumerate([0.9, 0.2, 0.8, 0.7, 0.6])
                      for g, sc in (("incorrect", top), ("correct", 0.5))])
    assert quotas_of(pool, 1, 0.8, True) == [1, 0, 1, 1, 1]
    chosen = convincing_wrong_answer(pool, 1, wrong_share=0.8, per_problem=True)
    assert summarise(chosen)["wrong_share"] == 0.8
    assert [s.id for s in chosen] == ["s0", "s3", "s4", "s6", "s8"]


@SETTINGS
@given(rows, ks, st.booleans(), shares)
def test_convincing_wrong_answer_takes_the_highest_of_each_part(rows, k, per_problem, share):
    pool = make_pool(rows)
    chosen = convincing_wrong_answer(pool, k, Random(0), wrong_share=share, per_problem=per_problem)
    for members, quota in zip(groups(pool, per_problem).values(), quotas_of(pool, k, share, per_problem)):
        picked = [s for s in chosen if s in members]
        wrong = sorted((s for s in members if is_wrong(s)), key=lambda s: -s.scores["prm_min"])  # stable: ties by order
        wrong_part = wrong[:quota]
        assert all(s in picked for s in wrong_part)  # the most convincing wrong answers are in
        rest = [s for s in picked if s not in wrong_part]
        left = [s for s in members if s not in picked]
        if rest and left:  # the rest: the most convincing of what remains
            assert min(s.scores["prm_min"] for s in rest) >= max(s.scores["prm_min"] for s in left)
        assert sum(map(is_wrong, picked)) >= min(quota, len(wrong), len(picked))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.floats(0, 1)), max_size=40), ks, st.booleans(),
       shares)
def test_wrong_share_is_the_quota_when_enough_wrong_answers_exist(rows, k, per_problem, share):
    # Correct answers score above wrong ones here, so the "rest" part holds no further wrong answers.
    pool = make_pool([(p, "incorrect" if wrong else "correct", x / 2 if wrong else 0.5 + x / 2)
                      for p, wrong, x in rows])
    chosen = convincing_wrong_answer(pool, k, Random(0), wrong_share=share, per_problem=per_problem)
    members = list(groups(pool, per_problem).values())
    ceil = -(-round(share * k * 1000) // 1000)
    if all(sum(map(is_wrong, m)) >= ceil and len(m) - sum(map(is_wrong, m)) >= k for m in members):
        assert sum(map(is_wrong, chosen)) == wrong_quota(k * len(members), share)


@SETTINGS
@given(rows, ks, st.booleans(), shares)
def test_wrong_grades_choose_what_counts_as_wrong(rows, k, per_problem, share):
    pool = make_pool(rows)
    both = convincing_wrong_answer(pool, k, wrong_share=share, per_problem=per_problem,
                                   wrong_grades=("incorrect", "unparseable"))
    recount = make_pool([(p, "incorrect" if g == "unparseable" else g, sc) for p, g, sc in rows])
    # counting unparseable as wrong is the same choice as if those samples were graded incorrect
    assert [s.id for s in both] == [s.id for s in convincing_wrong_answer(recount, k, wrong_share=share,
                                                                          per_problem=per_problem)]


@SETTINGS
@given(rows, ks, st.booleans(), shares)
def test_by_default_ungradable_samples_count_as_not_wrong(rows, k, per_problem, share):
    pool = make_pool(rows)
    default = convincing_wrong_answer(pool, k, wrong_share=share, per_problem=per_problem)
    recount = make_pool([(p, "correct" if g == "unparseable" else g, sc) for p, g, sc in rows])
    assert [s.id for s in default] == [s.id for s in convincing_wrong_answer(recount, k, wrong_share=share,
                                                                             per_problem=per_problem)]


@SETTINGS
@given(rows, ks, st.booleans(), shares, st.lists(st.booleans(), min_size=30, max_size=30))
def test_answered_only_counts_an_unanswered_wrong_answer_as_not_wrong(rows, k, per_problem, share, answered):
    pool = [dataclasses.replace(s, answer="7" if a else None) for s, a in zip(make_pool(rows), answered)]
    if pool and not any(s.answer for s in pool):
        with pytest.raises(SelectionError, match="none of the .* has an extracted answer"):
            convincing_wrong_answer(pool, k, wrong_share=share, per_problem=per_problem, answered_only=True)
        return
    only = convincing_wrong_answer(pool, k, wrong_share=share, per_problem=per_problem, answered_only=True)
    # the same choice as if the unanswered wrong answers were graded correct (never taken for the wrong share)
    recount = [dataclasses.replace(s, grade="correct" if s.grade == "incorrect" and s.answer is None else s.grade)
               for s in pool]
    assert [s.id for s in only] == [s.id for s in convincing_wrong_answer(recount, k, wrong_share=share,
                                                                          per_problem=per_problem)]


def test_answered_only_from_the_command_line(tmp_path, capsys):
    pool = [Solution.from_steps(Problem("q", id="p"), ["x"], id=f"s{i}", grade="incorrect", answer=a,
                                scores={"prm_min": sc}) for i, (a, sc) in enumerate([(None, 0.9), ("3", 0.2)])]
    src, out = tmp_path / "scored.jsonl", tmp_path / "chosen.jsonl"
    write_records(src, pool)
    assert main(["select", "--count", "1", "--wrong-share", "1", str(src), str(out)]) == 0
    assert [s.id for s in read_solutions(out)] == ["s0"]  # the cut-off one is the most convincing "wrong answer"
    assert main(["select", "--count", "1", "--wrong-share", "1", "--answered-only", str(src), str(out)]) == 0
    assert [s.id for s in read_solutions(out)] == ["s1"]
    capsys.readouterr()


def test_wrong_grades_are_checked():
    for bad in [(), ("correct",), ("incorrect", "wrong")]:
        with pytest.raises(ValueError, match="wrong_grades must be one or more of"):
            SelectConfig(wrong_grades=bad)
    assert SelectConfig(wrong_grades=["incorrect"]).wrong_grades == ("incorrect",)


def test_the_papers_mix_on_one_problem():
    pool = make_pool([(0, "incorrect", 0.1 * i) for i in range(10)] + [(0, "correct", 0.05 + 0.1 * i) for i in range(10)])
    chosen = convincing_wrong_answer(pool, 5, Random(0))  # 4 wrong + 1 of the rest
    assert [s.id for s in chosen] == ["s19", "s9", "s8", "s7", "s6"]
    assert summarise(chosen)["wrong_share"] == 0.8


# --- errors ---------------------------------------------------------------------------------------

def test_ungraded_candidates_are_an_error_that_names_them():
    pool = make_pool([(0, "correct", 0.4), (1, None, 0.9)])
    with pytest.raises(SelectionError, match=r"candidate 1 \(id s1, problem 'p1'\) has no grade"):
        convincing_wrong_answer(pool, 1, Random(0))
    assert [s.id for s in top_k(pool, 1)] == ["s1"]  # strategies that need no grade do not ask for one


def test_score_column_default_and_errors():
    pool = [Solution.from_steps("q", ["x"], id="a", scores={"prm_product": 0.3, "prm": 0.1}),
            Solution.from_steps("q", ["x"], id="b", scores={"prm": 0.2})]
    assert default_score(pool) == "prm"  # prm_product is not on every candidate
    with pytest.raises(SelectionError, match="columns seen: orm"):
        default_score([Solution.from_steps("q", ["x"], scores={"orm": 0.5})])
    with pytest.raises(SelectionError, match=r"1 of 2 candidates has no score 'prm_product'.*candidate 1 \(id b.*"
                                             r"which has: prm$"):
        top_k(pool, 1, score="prm_product")
    with pytest.raises(SelectionError, match="not a number"):
        top_k([Solution.from_steps("q", ["x"], scores={"prm": True})], 1)


def test_config_validates():
    with pytest.raises(ValueError, match="unknown selection strategy"):
        SelectConfig("best")
    with pytest.raises(ValueError, match="wrong_share"):
        SelectConfig(wrong_share=1.5)
    with pytest.raises(ValueError, match="k must be"):
        SelectConfig(k=-1)


def test_select_dispatches_with_the_config():
    pool = make_pool([(p, g, s) for p in range(3) for g, s in [("correct", 0.9), ("incorrect", 0.8), ("incorrect", 0.2)]])
    chosen = select(pool, SelectConfig(k=2, per_problem=True, wrong_share=0.5))
    assert [s.id for s in chosen] == ["s0", "s1", "s3", "s4", "s6", "s7"]
    assert select(pool, SelectConfig("random", k=3, seed=5)) == random_sample(pool, 3, Random(5))


# --- the labelling app and the CLI ----------------------------------------------------------------

def test_the_label_registry_holds_the_new_strategies():
    assert {"convincing_wrong_answer", "uncertainty", "top_k", "random", "in_order"} <= set(queue.STRATEGIES)
    pool = make_pool([(i % 3, "incorrect" if i % 2 else "correct", i / 10) for i in range(10)])
    got = queue.select("convincing_wrong_answer", pool, 5, Random(0))
    assert got == convincing_wrong_answer(pool, 5, Random(0), score="prm_min")
    assert queue.select("top_k", pool, None, Random(0)) == top_k(pool, len(pool))
    with pytest.raises(SelectionError, match="no score column"):
        queue.select("uncertainty", [Solution.from_steps("q", ["x"])], 1, Random(0))


def test_cli_select(tmp_path, capsys):
    pool = make_pool([(p, g, s) for p in range(3) for g, s in [("correct", 0.9), ("incorrect", 0.8),
                                                                 ("unparseable", 0.7), ("incorrect", 0.1)]])
    src, out = tmp_path / "scored.jsonl", tmp_path / "chosen.jsonl.gz"
    write_records(src, pool)
    assert main(["select", "--score", "prm_min", "--count", "2", "--per-problem", "--wrong-share", "1",
                 str(src), str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {"chosen": 6, "problems": 3, "wrong_share": 1.0, "per_problem": {"p0": 2, "p1": 2, "p2": 2},
                       "ungradable": 0, "ungradable_in_pool": 3}
    # only `incorrect` counts by default: the unparseable s2, s6, s10 (no verdict) give way to incorrect ones
    assert [s.id for s in read_solutions(out)] == ["s1", "s3", "s5", "s7", "s9", "s11"]

    # counted as wrong on request: the unparseable ones are the more convincing
    assert main(["select", "--score", "prm_min", "--count", "2", "--per-problem", "--wrong-share", "1",
                 "--wrong-grades", "incorrect,unparseable", str(src), str(out)]) == 0
    assert [s.id for s in read_solutions(out)] == ["s1", "s2", "s5", "s6", "s9", "s10"]
    assert json.loads(capsys.readouterr().out)["ungradable"] == 3
    capsys.readouterr()
    assert main(["select", "--wrong-grades", "correct", str(src), str(out)]) == 2
    assert "wrong_grades must be one or more of incorrect, unparseable" in capsys.readouterr().err

    write_records(src, [Solution.from_steps("q", ["x"], scores={"prm_min": 0.5})])
    assert main(["select", str(src), str(out)]) == 2
    assert "has no grade" in capsys.readouterr().err
