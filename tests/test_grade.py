"""Answer extraction and grading: hand-made tables, properties, timeouts, threads and processes, the CLI,
and the agreement with Math-Verify's own cases and with MATH-500's reference answers."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import threading
import time
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.grade import (
    GradeError,
    GradeTimeout,
    SymbolicPool,
    equivalent,
    extract_answer,
    grade,
    grade_many,
    normalize,
    reference_grade,
)
from prmkit.schema import GRADES


@pytest.fixture(scope="module")
def pool():
    p = SymbolicPool(workers=1, timeout=20)
    yield p
    p.close()


# --- extraction -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,answer", [
    ("so $x = \\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
    ("\\boxed{1} and then \\boxed{\\{1, \\{2\\}\\}}", "\\{1, \\{2\\}\\}"),
    ("\\fbox{42}", "42"),
    ("\\boxed 5$ and more", "5"),
    ("Step.\n\n# Answer\n\n\\frac{3}{4}", "\\frac{3}{4}"),
    ("# Answer\n\n\\boxed{7}", "7"),
    ("She earns 9 * 2 = $18.\n#### 18", "18"),
    ("#### 1,000\n", "1,000"),
    ("\\boxed{2} was wrong.\n# Answer\n\n3", "3"),  # the last marker wins
    ("# Answer\n\n3\nbut really \\boxed{4}", "4"),
    ("no marker", None), ("", None), (None, None), ("# Answer\n\n", None),
    ("\\boxed{\\frac{1}{2", None),  # cut off mid-answer
])
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


@st.composite
def nested_braces(draw, depth=3):
    if depth == 0:
        return draw(st.text(alphabet="0123456789+-x ", max_size=5))
    parts = draw(st.lists(st.one_of(st.text(alphabet="0123456789+-x ", max_size=4),
                                    nested_braces(depth=depth - 1).map(lambda s: "{" + s + "}")), max_size=3))
    return "".join(parts)


@given(inner=nested_braces(), before=st.text(alphabet="abc $.\n", max_size=20))
def test_boxed_with_random_nesting(inner, before):
    found = extract_answer(f"{before}\\boxed{{1}} then \\boxed{{{inner}}}.")
    assert found == (inner.strip() or None)


# --- normalisation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("a,b", [
    ("\\frac{1}{2}", "0.5"), ("\\dfrac12", "1/2"), ("1,000", "1000"), ("14{,}916", "14916"),
    ("x = 5", "5"), ("\\text{Evelyn}", "Evelyn"), ("90^\\circ", "90"), ("5.0", "5"), (".25", "\\frac{1}{4}"),
    ("10\\text{ cm}", "10"),
])
def test_normalize_groups_equal_spellings(a, b):
    assert normalize(a) == normalize(b)


@pytest.mark.parametrize("a,b", [("32, 349", "32349"), ("7 = 11a+c", "11a+c"), ("0,111", "111"), ("2", "3")])
def test_normalize_keeps_different_answers_apart(a, b):
    assert normalize(a) != normalize(b)


@given(st.text(max_size=60))
def test_normalize_never_raises(text):
    assert isinstance(normalize(text), str)


number = st.one_of(st.integers(-10**12, 10**12).map(str),
                   st.fractions(max_denominator=1000).map(lambda f: f"\\frac{{{f.numerator}}}{{{f.denominator}}}"),
                   st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str))


@given(number)
def test_grade_of_a_number_with_itself_is_correct_without_sympy(x):
    result = grade(x, x)  # the fast path decides, no worker needed
    assert (result.verdict, result.reason) == ("correct", "equal-normalized")


@given(number, number)
def test_exact_numbers_are_decided_by_value(a, b):
    from prmkit.grade.normalize import exact_number
    va, vb = exact_number(normalize(a)), exact_number(normalize(b))
    if va is not None and vb is not None and "." not in a + b:
        assert grade(a, b).correct == (va == vb)


# --- grading ----------------------------------------------------------------------------------------

CASES_FILE = Path(__file__).parent / "data" / "grading_cases.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text().splitlines()]
"""The regression table: every class of answer pair the grader must get right, each case with its
reason (``why``) and Math-Verify's own verdict on it as last measured (``math_verify``)."""


def pair_of(case: dict, request) -> tuple[str | None, str]:
    """The case's (given, gold): written in the table, or, for a real model output (``ref``), read from
    ../shared/data (the test skips where that is absent)."""
    if "ref" not in case:
        return case["given"], case["gold"]
    data = request.getfixturevalue("shared_data")
    kind, *index = case["ref"].split(":")
    if kind == "qwen25math":
        row = json.loads((data / "candidates" / "qwen25math_math_cot_100.jsonl").read_text().splitlines()[int(index[0])])
        return row["code"][int(index[1])], row["gt"]
    assert kind == "mv-case", case["ref"]
    found = [c for c in json.loads((data / "answers" / "math_verify_test_cases.json").read_text())
             if c["id"] == int(index[0])]
    return found[0]["pred"], found[0]["gold"]


@pytest.mark.parametrize("case", CASES, ids=[f"{i + 1}-{c['cls']}" for i, c in enumerate(CASES)])
def test_regression_table(case, pool, request):
    result = grade(*pair_of(case, request), case["mode"], pool=pool)
    assert (result.verdict, result.reason) == (case["verdict"], case["reason"]), (case["why"], result.detail)
    assert result.verdict in GRADES


@pytest.mark.parametrize("case", CASES, ids=[f"{i + 1}-{c['cls']}" for i, c in enumerate(CASES)])
def test_math_verify_verdicts_in_the_table_are_current(case, pool, request):
    """The table's ``math_verify`` column is what Math-Verify says today, so the comparison below holds."""
    assert reference_grade(*pair_of(case, request), "math-verify", pool=pool) == case["math_verify"]


def test_table_holds_every_class_math_verify_gets_wrong():
    """The classes of the issue, each with a case where Math-Verify is wrong and prmkit right."""
    truth_wrong = {"accepted": set(), "rejected": set()}
    for c in CASES:  # the table's verdicts are checked above; here, that every class is there
        if c["math_verify"] == "correct" and c["verdict"] == "incorrect":
            truth_wrong["accepted"].add(c["cls"])
        if c["math_verify"] == "incorrect" and c["verdict"] == "correct":
            truth_wrong["rejected"].add(c["cls"])
    assert truth_wrong["accepted"] >= {"units", "currency", "collections"}
    assert truth_wrong["rejected"] >= {"repeating", "empty set", "thousands", "complex"}


# --- the fast paths against the symbolic step -----------------------------------------------------

def spell(value: Fraction, style: int) -> str:
    """``value`` written one of several ways: a fraction, a decimal where it terminates, a repeating
    decimal in overline notation, ``a/b``."""
    sign = "-" if value < 0 else ""
    p, q = abs(value.numerator), value.denominator
    if style == 0 or q == 1:
        return f"{sign}\\frac{{{p}}}{{{q}}}" if q != 1 else f"{sign}{p}"
    if style == 1:
        return f"{sign}{p}/{q}"
    whole, rest, digits, seen = p // q, p % q, "", {}
    while rest and rest not in seen:
        seen[rest] = len(digits)
        digits += str(rest * 10 // q)
        rest = rest * 10 % q
    if not rest:
        return f"{sign}{whole}.{digits}"
    start = seen[rest]
    return f"{sign}{whole}.{digits[:start]}\\overline{{{digits[start:]}}}"


exact_value = st.fractions(min_value=-50, max_value=50, max_denominator=12)


@settings(deadline=None, max_examples=40)
@given(a=exact_value, b=exact_value, style_a=st.integers(0, 2), style_b=st.integers(0, 2))
def test_fast_path_agrees_with_the_symbolic_step_on_exact_numbers(a, b, style_a, style_b, pool):
    given_, gold = spell(a, style_a), spell(b, style_b)
    result = grade(given_, gold, pool=pool)
    assert result.reason in ("equal-normalized", "different-number"), result  # never reaches a worker
    assert result.correct == (a == b)
    if "overline" not in given_ + gold:  # Math-Verify cannot read overlines (a class of the table)
        symbolic = pool.run({"given": f"${given_}$", "gold": f"${gold}$", "mode": "strict"})
        assert symbolic["equal"] == result.correct


@settings(deadline=None, max_examples=25)
@given(values=st.lists(exact_value, min_size=4, max_size=4), changed=st.integers(0, 3), change=st.booleans(),
       environment=st.sampled_from(["pmatrix", "bmatrix"]))
def test_matrices_of_exact_numbers_agree_with_the_symbolic_step(values, changed, change, environment, pool):
    other = [v + (1 if change and i == changed else 0) for i, v in enumerate(values)]
    def matrix(vals, env, style):
        rows = [" & ".join(spell(v, style) for v in vals[:2]), " & ".join(spell(v, style) for v in vals[2:])]
        return f"\\begin{{{env}}}{rows[0]} \\\\ {rows[1]}\\end{{{env}}}"
    given_, gold = matrix(other, environment, 1), matrix(values, "pmatrix", 0)
    result = grade(given_, gold, pool=pool)
    assert result.reason in ("equal-entries", "different-entries", "equal-normalized"), result
    assert result.correct == (not change)
    symbolic = pool.run({"given": f"${matrix(other, 'pmatrix', 0)}$", "gold": f"${gold}$", "mode": "strict"})
    assert symbolic["equal"] == result.correct


def test_bad_arguments_are_errors_not_verdicts():
    with pytest.raises(ValueError, match="gold"):
        grade("1", "  ")
    with pytest.raises(ValueError, match="mode"):
        grade("1", "1", mode="fuzzy")
    with pytest.raises(TypeError):
        grade(1, "1")


def test_unparseable_gold_raises(pool):
    with pytest.raises(GradeError, match="cannot be parsed"):
        grade("1", "$$", pool=pool)


def test_worker_errors_come_back_as_errors(pool):
    assert "KeyError" in pool.run({"gold": "$1$", "given": "$1$"})["error"]  # no "mode": a bug, reported


def test_equivalent_and_grade_many(pool):
    assert equivalent("\\frac{1}{2}", "0.5") and not equivalent("1", "2")
    results = grade_many([("1", "1"), ("2", "1"), ("\\sqrt{4}", "2"), ("1", "$$")], pool=pool, errors="keep")
    assert [getattr(r, "verdict", None) for r in results] == ["correct", "incorrect", "correct", None]
    assert isinstance(results[3], GradeError) and "pair 3" in str(results[3])
    with pytest.raises(GradeError, match="pair 1"):
        grade_many([("1", "1"), ("1", "$$")], pool=pool)


def test_reference_graders(pool):
    assert reference_grade("\\frac{2}{4}", "\\frac{1}{2}", "prm800k", pool=pool) == "incorrect"
    assert reference_grade("0.5", "\\frac{1}{2}", "math-verify", pool=pool) == "correct"


# --- timeouts, threads, processes -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("given_", ["10^{10^{10^{10}}}", "(10^{10^{7}})!", "\\boxed{9^{9^{9^{9}}}}"])
def test_pathological_input_times_out_within_the_deadline(given_):
    fast = SymbolicPool(workers=1, timeout=1.0)
    try:
        assert grade("\\sqrt{4}", "2", pool=fast).correct  # start the worker outside the timing
        start = time.monotonic()
        result = grade(given_, "5", pool=fast)
        elapsed = time.monotonic() - start
        assert result.verdict == "unparseable" and result.reason in ("timeout", "memory")
        assert elapsed < 1.0 + 2.0
        with pytest.raises(GradeTimeout):
            grade("10^{10^{10^{10}}}", "5", pool=fast, on_timeout="raise")
        assert grade("\\sqrt{9}", "3", pool=fast).correct  # the killed worker was replaced
    finally:
        fast.close()


def test_grading_from_threads(pool):
    results = []
    threads = [threading.Thread(target=lambda: results.append(grade("\\sqrt{4}", "2", pool=pool).verdict))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["correct"] * 3


@pytest.mark.slow
def test_grading_from_daemonic_worker_processes():
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as workers:  # daemonic processes, where multiprocessing children are forbidden
        assert workers.starmap(equivalent, [("2", "\\sqrt{4}"), ("2", "\\sqrt{5}")]) == [True, False]


# --- CLI --------------------------------------------------------------------------------------------

def _cli(*argv) -> int:
    from prmkit.cli import grade as grade_cli
    parser = argparse.ArgumentParser(prog="prmkit")
    grade_cli.register(parser.add_subparsers())
    args = parser.parse_args(list(argv))
    return args.func(args)


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_cli_grades_and_audits(tmp_path, capsys):
    pairs = _write(tmp_path / "pairs.jsonl", [
        {"response": "so \\boxed{\\frac{1}{2}}", "answer": "0.5", "id": "a"},
        {"response": "# Answer\n\n7", "answer": "8"}, {"response": None, "answer": "3"}])
    out = tmp_path / "graded.jsonl"
    assert _cli("grade", pairs, str(out), "--given-field", "response", "--gold-field", "answer",
                "--audit", "math-verify", "--workers", "1") == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["grade"] for r in rows] == ["correct", "incorrect", "incorrect"]  # no answer is a wrong answer
    assert rows[2]["grade_reason"] == "no-answer"
    assert rows[0]["id"] == "a" and rows[0]["audit_grade"] == "correct"
    printed = capsys.readouterr().out
    assert "1 correct, 2 incorrect, 0 unparseable" in printed and "agreement 3/3" in printed


@pytest.mark.parametrize("row,field", [
    ({"given": 3, "gold": "3"}, "given"), ({"given": "3"}, "gold"), ({"given": "3", "gold": ""}, "gold"),
])
def test_cli_names_file_line_and_field(tmp_path, row, field):
    pairs = _write(tmp_path / "pairs.jsonl", [{"given": "1", "gold": "1"}, row])
    with pytest.raises(ValueError, match=rf"pairs.jsonl:2: field '{field}'"):
        _cli("grade", pairs)


def test_cli_skip_invalid_writes_rejects(tmp_path, capsys):
    pairs = _write(tmp_path / "pairs.jsonl", [{"given": "1", "gold": "1"}, {"given": 3, "gold": "3"},
                                              {"given": "1", "gold": "$$"}])
    out = tmp_path / "graded.jsonl"
    assert _cli("grade", pairs, str(out), "--skip-invalid", "--workers", "1") == 0
    assert len(out.read_text().splitlines()) == 1
    rejects = [json.loads(line) for line in (tmp_path / "graded.rejects.jsonl").read_text().splitlines()]
    assert [(r["line"], r["field"]) for r in rejects] == [(2, "given"), (3, "given")]
    assert "cannot be parsed" in rejects[1]["error"]
    assert "2 invalid pairs" in capsys.readouterr().err


# --- real data --------------------------------------------------------------------------------------

# Every case of Math-Verify's table where prmkit's verdict differs, and why (docs/grading.md says more).
JUSTIFIED = {
    5: "decimal comma: prmkit reads 1000,99 as a list, never as 1000.99 (MATH and GSM8K are English)",
    6: "decimal comma: 1,22 is not 1.22 for prmkit",
    31: "Math-Verify (LaTeX-only config) refuses $ 9 $ split over lines; prmkit also reads the bare 9",
    32: "same as 31 with \\( \\)",
    133: "0.33 is not 1/3 at 6 digits; Math-Verify 0.9.0 itself fails this expectation",
    139: "2.6667 is not 8/3 at 6 digits; Math-Verify 0.9.0 itself fails this expectation",
    186: "x in [-2,7] vs -2<=x<=7 needs set-relation comparison: lenient only; Math-Verify 0.9.0 also says 0",
    261: "Math-Verify's recorded result: it cuts 1/\\mathrm{e} short and calls 1-1/e equal to 1+1/e",
    269: "precision=4 option: prmkit compares decimals at Math-Verify's default 6 digits",
}
MIN_AGREEMENT = 261  # of 270, measured


def _case_verdicts(cases):
    out = []
    for case in cases:
        mode = "lenient" if case.get("strict") is False else "strict"
        out.append(grade(case["pred"], case["gold"], mode).verdict == "correct")
    return out


@pytest.mark.slow
def test_agreement_with_math_verify_cases(shared_data):
    cases = json.loads((shared_data / "answers" / "math_verify_test_cases.json").read_text())
    verdicts = _case_verdicts(cases)
    differ = {c["id"] for c, v in zip(cases, verdicts) if int(v) != c.get("expected", c.get("result"))}
    assert differ <= set(JUSTIFIED), f"unjustified disagreements: {sorted(differ - set(JUSTIFIED))}"
    assert len(cases) - len(differ) >= MIN_AGREEMENT


def test_math500_reference_solutions_grade_correct(shared_data):
    rows = [json.loads(line) for line in (shared_data / "math500" / "test.jsonl").read_text().splitlines()]
    results = grade_many([(r["solution"], r["answer"]) for r in rows], errors="keep")
    rate = sum(getattr(r, "correct", False) for r in results) / len(rows)
    assert rate >= 0.99, rate


def test_gsm8k_answers_extract_and_grade(shared_data):
    rows = [json.loads(line) for line in (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()[:200]]
    for r in rows:
        gold = r["answer"].rsplit("####", 1)[1].strip()
        assert extract_answer(r["answer"]) == gold
        assert grade(r["answer"], gold.replace(",", "")).correct


@settings(deadline=None, max_examples=25)
@given(st.sampled_from(["\\sqrt{2}", "\\pi", "x^2", "(1,2)", "\\{1,2\\}", "[0,1)", "\\frac{\\sqrt{3}}{2}"]))
def test_symbolic_answers_equal_themselves(x):
    assert grade(x, x).verdict == "correct"


# Real model outputs: the recorded correctness of Qwen2.5-Math's 800 sampled answers, and where prmkit
# differs from it, why (the pool's own grader is the one that is wrong there).
QWEN_DIFFERS = {(72, 7): "10000 against the gold 10{,}000: the same number; the pool's grader compared strings"}


def test_qwen_candidate_answers_grade_as_recorded(shared_data):
    rows = [json.loads(line) for line in
            (shared_data / "candidates" / "qwen25math_math_cot_100.jsonl").read_text().splitlines()]
    keys = [(i, j) for i, r in enumerate(rows) for j in range(len(r["code"]))]
    results = grade_many([(rows[i]["code"][j], rows[i]["gt"]) for i, j in keys])
    differ = {k for k, r in zip(keys, results) if r.correct != rows[k[0]]["score"][k[1]]}
    assert differ == set(QWEN_DIFFERS)
    assert all(r.verdict != "unparseable" for r in results)


def test_gsm8k_example_solutions_grade_as_recorded(shared_data):
    """5,276 real model solutions (four models on GSM8K test) with their recorded correctness."""
    from prmkit.convert.candidates import GSM8K_EXAMPLE_MODELS, gsm8k_example_answer
    rows = [json.loads(line) for line in
            (shared_data / "candidates" / "gsm8k_example_model_solutions.jsonl").read_text().splitlines()]
    pairs = [(gsm8k_example_answer(r[m]["solution"]), gsm8k_example_answer(r["ground_truth"]), r[m]["is_correct"])
             for r in rows for m in GSM8K_EXAMPLE_MODELS]
    results = grade_many([(given, gold) for given, gold, _ in pairs])
    assert [r.correct for r in results] == [right for *_, right in pairs]


# --- words, names and choice letters: text in every mode (issue 29, 1) ------------------------------

WRAPS = ("{}", "\\text{{{}}}", "\\mathrm{{{}}}", "\\textbf{{{}}}", "\\boxed{{\\text{{{}}}}}")
word = st.sampled_from(["yes", "no", "Alice", "Bob", "odd", "even", "north east", "North  East", "Evelyn", "neither"])


@settings(deadline=None, max_examples=60)
@given(a=word, b=word, wrap_a=st.sampled_from(WRAPS), wrap_b=st.sampled_from(WRAPS[:4]),
       mode=st.sampled_from(["strict", "lenient"]))
def test_words_are_equal_only_as_text(a, b, wrap_a, wrap_b, mode, pool):
    result = grade(wrap_a.format(a), wrap_b.format(b), mode, pool=pool)
    assert result.reason in ("equal-text", "different-text"), result  # decided without Math-Verify
    assert result.correct == (" ".join(a.lower().split()) == " ".join(b.lower().split()))


@settings(deadline=None, max_examples=40)
@given(a=st.sampled_from("ABCDE"), b=st.sampled_from("ABCDE"), form_a=st.sampled_from(["{}", "({})", "\\text{{({})}}"]),
       form_b=st.sampled_from(["{}", "({})", "\\text{{{}}}", "\\textbf{{({})}}"]), mode=st.sampled_from(["strict", "lenient"]))
def test_a_choice_letter_matches_its_option_only(a, b, form_a, form_b, mode, pool):
    assert grade(form_a.format(a), form_b.format(b), mode, pool=pool).correct == (a == b)


def test_prmkit_grade_lenient_on_words_as_the_user_ran_it(tmp_path, capsys):
    """The issue's command: ``prmkit grade pairs.jsonl --mode lenient`` accepted yes for no."""
    from prmkit.cli import main

    pairs = tmp_path / "pairs.jsonl"
    rows = [("\\boxed{\\text{yes}}", "\\text{no}"), ("\\text{B}", "\\text{(C)}"), ("Alice", "Bob"), ("y=3", "x=3")]
    pairs.write_text("".join(json.dumps({"given": g, "gold": t}) + "\n" for g, t in rows))
    out = tmp_path / "graded.jsonl"
    assert main(["grade", str(pairs), str(out), "--mode", "lenient"]) == 0
    graded = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["grade"] for g in graded[:3]] == ["incorrect"] * 3
    assert main(["grade", str(pairs), str(out)]) == 0
    assert [json.loads(line)["grade"] for line in out.read_text().splitlines()] == ["incorrect"] * 4
