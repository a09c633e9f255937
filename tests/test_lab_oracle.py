"""The lab's exact oracle on hand-written cases: every reason, the answer's grade, the locality rule."""

from __future__ import annotations

import pytest

from prmkit.lab import grade_answer, oracle_label, oracle_labels
from prmkit.lab.oracle import REASONS, extract_answer
from prmkit.schema import Problem, Solution

PROBLEM = Problem("Start at 12.\nA + 2\nB less 6\nC again\nD twice\nE set to 30\nF half\nWhat is the final value?",
                  answer="15")
# True values: 14, 8, 2, 4, 30, 15.
RIGHT = ["A + 2 : 12 + 2 = 14", "B - 6 : 14 - 6 = 8", "C - 6 : 8 - 6 = 2", "D * 2 : 2 * 2 = 4",
         "E set 30 : 30", "F / 2 : 30 / 2 = 15", "# Answer\n\n15"]


def labels(texts, problem=PROBLEM):
    return [(lab.rating, lab.reason) for lab in oracle_labels(Solution.from_steps(problem, texts))]


def test_a_right_solution_is_all_positive():
    assert labels(RIGHT) == [(1, "correct")] * 6 + [(1, "answer")]


CASES = [
    # (description, steps, expected (rating, reason) per step)
    ("check lines are neutral when true", ["A + 2 : 12 + 2 = 14", "check : 14"], [(1, "correct"), (0, "neutral check")]),
    ("a false check is wrong", ["A + 2 : 12 + 2 = 14", "check : 15"], [(1, "correct"), (-1, "wrong check")]),
    ("less read as plus", ["A + 2 : 12 + 2 = 14", "B + 6 : 14 + 6 = 20"], [(1, "correct"), (-1, "wrong restatement")]),
    ("twice read as + 2", RIGHT[:3] + ["D + 2 : 2 + 2 = 4"], [(1, "correct")] * 3 + [(-1, "wrong restatement")]),
    ("again skipped", RIGHT[:2] + ["D * 2 : 8 * 2 = 16"], [(1, "correct")] * 2 + [(-1, "skipped transaction")]),
    ("a stale operand", ["A + 2 : 12 + 2 = 14", "B - 6 : 12 - 6 = 6"], [(1, "correct"), (-1, "wrong operand")]),
    ("an arithmetic slip", ["A + 2 : 12 + 2 = 15"], [(-1, "wrong arithmetic")]),
    ("a flipped operator", ["A - 2 : 12 - 2 = 10"], [(-1, "wrong restatement")]),
    ("restated one way, computed another", ["A + 2 : 12 - 2 = 10"], [(-1, "inconsistent step")]),
    ("a repeated transaction", ["A + 2 : 12 + 2 = 14", "A + 2 : 14 + 2 = 16"], [(1, "correct"), (-1, "repeated transaction")]),
    ("an unknown name", ["Z + 2 : 12 + 2 = 14"], [(-1, "unknown transaction")]),
    ("free text", ["Let us add 2 to 12."], [(-1, "unparseable step")]),
    ("an early answer", ["A + 2 : 12 + 2 = 14", "# Answer\n\n14"], [(1, "correct"), (-1, "early answer")]),
    ("an answer that is not the last result", RIGHT[:-1] + ["# Answer\n\n16"], [(1, "correct")] * 6 + [(-1, "answer mismatch")]),
    ("a non-number answer", RIGHT[:-1] + ["# Answer\n\nfifteen"], [(1, "correct")] * 6 + [(-1, "unparseable step")]),
    ("a line after the answer", RIGHT + ["check : 15"], [(1, "correct")] * 6 + [(1, "answer"), (-1, "step after answer")]),
    ("a set written with the wrong value", ["A + 2 : 12 + 2 = 14", "B - 6 : 14 - 6 = 8", "C - 6 : 8 - 6 = 2",
                                                  "D * 2 : 2 * 2 = 4", "E set 30 : 31"],
     [(1, "correct")] * 4 + [(-1, "wrong arithmetic")]),
    ("half computed wrong", RIGHT[:5] + ["F / 2 : 30 / 2 = 16"], [(1, "correct")] * 5 + [(-1, "wrong arithmetic")]),
]


@pytest.mark.parametrize("what,texts,expected", CASES, ids=[c[0] for c in CASES])
def test_hand_written_cases(what, texts, expected):
    assert labels(texts) == expected


def test_ratings_are_local_an_error_carried_forward_is_rated_where_made():
    # B misread as + 6 (20), C "again" by the problem is - 6: from 20 that is 14, locally right.
    texts = ["A + 2 : 12 + 2 = 14", "B + 6 : 14 + 6 = 20", "C - 6 : 20 - 6 = 14", "D * 2 : 14 * 2 = 28",
             "E set 30 : 30", "F / 2 : 30 / 2 = 15", "# Answer\n\n15"]
    got = labels(texts)
    assert got[1] == (-1, "wrong restatement") and all(r >= 0 for r, _ in got[2:])
    # The set wiped the error: a right answer with a wrong step.
    assert grade_answer(PROBLEM, "15") == "correct"


def test_undo_and_thrice_of_the_ood_family():
    p = Problem("Start at 10.\nA + 4\nB undo\nC thrice\nWhat is the final value?", answer="30")
    assert labels(["A + 4 : 10 + 4 = 14", "B - 4 : 14 - 4 = 10", "C * 3 : 10 * 3 = 30", "# Answer\n\n30"], p) == \
        [(1, "correct")] * 3 + [(1, "answer")]
    assert labels(["A + 4 : 10 + 4 = 14", "C * 3 : 14 * 3 = 42"], p)[1] == (-1, "skipped transaction")


@pytest.mark.parametrize("answer,verdict", [("15", "correct"), (" 15 ", "correct"), ("16", "incorrect"),
                                            ("-15", "incorrect"), (None, "incorrect"), ("", "incorrect"),
                                            ("x", "incorrect")])
def test_grade_answer(answer, verdict):
    assert grade_answer(PROBLEM, answer) == verdict


def test_oracle_label_rates_every_step_with_reasons():
    s = Solution.from_steps(PROBLEM, RIGHT[:2] + ["D * 2 : 8 * 2 = 16"])
    out = oracle_label(s)
    assert out.label_source == "oracle" and out.ratings == [1, 1, -1]
    assert [st.meta["reason"] for st in out.steps] == ["correct", "correct", "skipped transaction"]
    assert out.answer is None and out.grade == "incorrect"  # no answer is a wrong answer
    assert extract_answer(RIGHT) == "15" and oracle_label(Solution.from_steps(PROBLEM, RIGHT)).grade == "correct"


def test_every_reason_is_documented_with_its_rating():
    seen = {reason for _, texts, expected in CASES for _, reason in expected} | {"correct", "answer"}
    assert seen == set(REASONS)
    assert all(REASONS[reason][0] == rating for _, _, exp in CASES for rating, reason in exp)


def test_a_non_ledger_problem_is_an_error():
    with pytest.raises(ValueError, match="not a ledger problem"):
        oracle_labels(Solution.from_steps("What is 1 + 1?", ["2"]))
