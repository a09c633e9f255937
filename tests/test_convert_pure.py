"""Property tests of the pure parts of the converters: labels, neutral policies, round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.convert import aps, critic, prm800k, processbench, shepherd, trl
from prmkit.convert.base import Dropped, Options, hard_label, linear, supervised
from prmkit.schema import Completion, Generator, Prelabel, Problem, Solution, Step

ratings = st.sampled_from([-1, 0, 1])
maybe_rating = st.one_of(st.none(), ratings)
# Step texts: non-blank, without the Math-Shepherd marker, no leading/trailing blanks (formats that
# pad steps with spaces cannot tell them apart).
words = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="ки\x00"), min_size=1, max_size=20)
texts = words.map(str.strip).filter(bool)
problem_text = texts.filter(lambda t: "Step 1:" not in t)


def roundtrip_json(s: Solution) -> Solution:
    return Solution.from_dict(json.loads(json.dumps(s.to_dict())))


# --- neutral policies and first-error truncation ----------------------------------------------------

@given(st.lists(ratings, max_size=12), st.sampled_from(["positive", "negative"]))
def test_supervised_is_one_label_per_step_up_to_first_wrong(rs, neutral):
    labels = supervised(rs, Options(neutral=neutral))
    mapped = [hard_label(r, Options(neutral=neutral)) for r in rs]
    cut = mapped.index(False) + 1 if False in mapped else len(mapped)
    assert labels == mapped[:cut]
    assert False not in labels[:-1]


@given(st.lists(ratings, max_size=12), st.sampled_from(["positive", "negative"]))
def test_supervise_all_labels_every_step(rs, neutral):
    assert len(supervised(rs, Options(neutral=neutral, supervise="all"))) == len(rs)


@given(st.lists(ratings, max_size=12))
def test_drop_policy_drops_exactly_when_a_supervised_step_is_neutral(rs):
    first_wrong = rs.index(-1) if -1 in rs else len(rs)
    span = rs[: first_wrong + 1]
    if 0 in span:
        with pytest.raises(Dropped):
            supervised(rs, Options(neutral="drop"))
    else:
        assert supervised(rs, Options(neutral="drop")) == supervised(rs, Options(neutral="positive"))


def test_neutral_without_policy_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="neutral policy"):
        supervised([1, 0], Options())
    assert supervised([1, 1], Options()) == [True, True]


def test_policies_differ_only_on_neutral_steps():
    assert supervised([1, 0, 1], Options(neutral="positive")) == [True, True, True]
    assert supervised([1, 0, 1], Options(neutral="negative")) == [True, False]


def test_options_are_checked():
    with pytest.raises(ValueError):
        Options(neutral="maybe")
    with pytest.raises(ValueError):
        Options(supervise="some")


# --- TRL -------------------------------------------------------------------------------------------

@given(problem_text, st.lists(st.tuples(texts, ratings), min_size=1, max_size=8),
       st.sampled_from(["positive", "negative"]), st.sampled_from(["first_error", "all"]))
def test_trl_rows_label_each_step_once_and_record_the_policy(q, steps, neutral, supervise):
    s = Solution.from_steps(q, [t for t, _ in steps], ratings=[r for _, r in steps])
    row = trl.to_row(s, Options(neutral=neutral, supervise=supervise))
    assert len(row["completions"]) == len(row["labels"])
    assert row["neutral_policy"] == neutral and row["supervision"] == supervise
    back = trl.from_row(row)
    assert back.texts == row["completions"]
    assert back.ratings == [1 if x else -1 for x in row["labels"]]
    assert trl.to_row(back, Options(neutral="drop", supervise=supervise)) == row  # recorded policy wins


@given(problem_text, st.lists(st.tuples(texts, st.sampled_from([-1, 1])), min_size=1, max_size=8))
def test_trl_round_trip_without_neutral(q, steps):
    s = Solution.from_steps(q, [t for t, _ in steps], ratings=[r for _, r in steps])
    row = trl.to_row(s, Options(neutral="positive", supervise="all"))
    back = trl.from_row(row)
    assert (back.problem.problem, back.texts, back.ratings) == (q, s.texts, s.ratings)


# --- Math-Shepherd ---------------------------------------------------------------------------------

@given(problem_text, st.lists(st.tuples(texts, st.sampled_from([-1, 1])), min_size=1, max_size=8))
def test_shepherd_round_trip(q, steps):
    s = Solution.from_steps(q, [t for t, _ in steps], ratings=[r for _, r in steps], label_source="rollout")
    opts = Options(supervise="all")
    row = shepherd.to_row(s, opts)
    back = shepherd.from_row(row, opts)
    assert (back.problem.problem, back.texts, back.ratings) == (q, s.texts, s.ratings)
    assert shepherd.to_row(back, opts) == row


# --- ProcessBench ----------------------------------------------------------------------------------

@given(problem_text, st.lists(texts, min_size=1, max_size=8), st.data(), st.booleans())
def test_processbench_round_trip(q, steps, data, correct):
    label = data.draw(st.integers(-1, len(steps) - 1))
    row = {"id": "t-1", "generator": "g", "problem": q, "steps": steps, "final_answer_correct": correct, "label": label}
    s = processbench.from_row(row)
    assert s.first_error() == (None if label == -1 else label)
    assert processbench.to_row(roundtrip_json(s), Options()) == row


# --- PRM800K ---------------------------------------------------------------------------------------

completion = st.builds(Completion, texts, rating=maybe_rating, flagged=st.one_of(st.none(), st.booleans()))


@st.composite
def prm800k_steps(draw):
    completions = draw(st.lists(completion, min_size=1, max_size=4))
    human = draw(st.one_of(st.none(), st.builds(Completion, texts, flagged=st.booleans(), source=st.just("human"))))
    chosen = draw(st.one_of(st.none(), st.integers(0, len(completions) - 1)))
    if chosen is None and human is None and draw(st.booleans()):
        chosen = 0
    return Step(completions, chosen, human)


@st.composite
def prm800k_solutions(draw):
    phase2 = draw(st.booleans())
    problem = Problem(draw(texts), answer=draw(st.one_of(st.none(), texts)),
                      solution=draw(st.one_of(st.none(), texts)) if phase2 else None)
    prelabel = Prelabel(draw(st.lists(texts, max_size=3)), draw(texts), draw(st.floats(0, 1))) if phase2 else None
    return Solution(problem, draw(st.lists(prm800k_steps(), max_size=5)), label_source="human", prelabel=prelabel,
                    labeller=draw(st.one_of(st.none(), texts)), generation=draw(st.one_of(st.none(), st.integers(-1, 10))),
                    quality_control=draw(st.booleans()), screening=draw(st.booleans()),
                    total_time_ms=draw(st.integers(0, 10**6)),
                    finish_reason=draw(st.sampled_from(["solution", "found_error", "give_up", "bad_problem"])))


@settings(max_examples=60)
@given(prm800k_solutions())
def test_prm800k_round_trip_from_prmkit(s):
    raw = prm800k.to_prm800k(s)
    back = prm800k.from_prm800k(json.loads(json.dumps(raw)))
    back.answer = s.answer = None  # extracted, not stored in PRM800K
    assert back == s
    assert prm800k.to_prm800k(roundtrip_json(back)) == raw


def test_prm800k_keeps_null_versus_absent_and_extra_keys():
    raw = {"labeler": None, "timestamp": None, "generation": -1, "is_quality_control_question": False,
           "is_initial_screening_question": True,
           "question": {"problem": "p", "ground_truth_solution": None, "ground_truth_answer": None},
           "label": {"steps": [{"completions": [{"text": "a", "rating": 1}], "human_completion":
                                {"text": "h", "rating": None, "flagged": False, "source": "human", "corrected_rating": 1},
                                "chosen_completion": 0},
                               {"completions": None, "human_completion": None, "chosen_completion": None}],
                     "total_time": 3, "finish_reason": "give_up"}}
    s = roundtrip_json(prm800k.from_prm800k(raw))
    assert prm800k.to_prm800k(s) == raw
    assert s.steps[0].human.meta == {"prm800k": {"extra": {"corrected_rating": 1}}}


# --- stepwise-critic and MATH-APS -------------------------------------------------------------------

@settings(max_examples=60)
@given(texts, st.lists(st.lists(st.tuples(texts, maybe_rating), min_size=1, max_size=4), min_size=1, max_size=5),
       st.data())
def test_critic_rows_rebuild_the_tree(q, alternatives, data):
    steps = []
    for alts in alternatives:
        chosen = data.draw(st.integers(0, len(alts) - 1))
        steps.append(Step([Completion(t, rating=r) for t, r in alts], chosen))
    s = Solution(Problem(q), steps, label_source="human")
    rows = list(critic.to_rows(s))
    assert len(rows) == sum(len(a) for a in alternatives)
    rebuilt = [critic.rows_to_step(g) for g in _groups(rows)]
    assert [st_.completions for st_ in rebuilt] == [st_.completions for st_ in steps]
    assert [st_.chosen for st_ in rebuilt] == [st_.chosen for st_ in steps]


def _groups(rows):
    out = []
    for r in rows:
        if out and out[-1][0]["responses"] == r["responses"]:
            out[-1].append(r)
        else:
            out.append([r])
    return out


@given(texts, st.lists(st.lists(st.tuples(texts, st.floats(0, 1)), min_size=1, max_size=4), min_size=1, max_size=4))
def test_math_aps_tree_round_trip(q, paths):
    root = Solution(Problem(q, answer="1", id="3"), [], outcome=0.5, label_source="rollout")
    sols = [root] + [Solution(root.problem, [Step.of(t, value=v) for t, v in p], label_source="rollout") for p in paths]
    row = aps.to_tree(sols)
    again = aps.to_tree(list(aps.from_tree(json.loads(json.dumps(row)))))
    assert again == row


def test_linear_path_takes_the_wrong_step_that_ended_labelling():
    s = Solution(Problem("q"), [Step.of("a", rating=1), Step([Completion("b", rating=-1)], chosen=None)])
    assert [c.text for c in linear(s)] == ["a", "b"]
    row = processbench.to_row(Solution(s.problem, s.steps, grade="incorrect", generator=Generator("g")), Options())
    assert row["label"] == 1
