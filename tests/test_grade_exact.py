"""prmkit.grade.exact: plain answers read into exact values, against Fraction arithmetic and against Math-Verify,
and the answer groups of a pool formed with those values equal to the ones formed pair by pair."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prmkit.evaluate.pool import group_answers
from prmkit.grade import decide_values, equivalent, grade, grouping_value
from prmkit.grade.exact import Exact, decide, read_value

# --- expressions with a known value ---------------------------------------------------------------------


@st.composite
def rational_expressions(draw, depth: int = 3) -> tuple[str, Fraction]:
    """(LaTeX, exact value) of a random expression of integers, decimals, fractions, + - \\cdot / and powers."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from(["int", "decimal", "frac"]))
        n = draw(st.integers(0, 999))
        if kind == "int":
            return str(n), Fraction(n)
        if kind == "decimal":
            d = draw(st.integers(1, 3))
            return f"{n / 10**d:.{d}f}", Fraction(round(n / 10**d * 10**d), 10**d)
        m = draw(st.integers(1, 50))
        return draw(st.sampled_from([f"\\frac{{{n}}}{{{m}}}", f"\\dfrac{{{n}}}{{{m}}}"])), Fraction(n, m)
    op = draw(st.sampled_from(["+", "-", "\\cdot", "/", "^", "neg"]))
    a, x = draw(rational_expressions(depth - 1))
    if op == "neg":
        return f"-({a})", -x
    if op == "^":
        k = draw(st.integers(0, 3))
        return f"\\left({a}\\right)^{{{k}}}", x**k
    b, y = draw(rational_expressions(depth - 1))
    if op == "/" and y == 0:
        return a, x
    value = {"+": x + y, "-": x - y, "\\cdot": x * y, "/": x / y if y else x}[op]
    return f"({a}) {op} ({b})", value


@settings(max_examples=300, deadline=None)
@given(rational_expressions())
def test_rational_expressions_read_to_their_exact_value(case):
    text, value = case
    read = read_value(text)
    assert read is not None, text
    assert read.rational == value, text


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(2, 60), st.integers(0, 2))
def test_roots_and_pi_have_one_canonical_form(a, n, k):
    pi = "\\pi" * k
    assert read_value(f"{a}\\sqrt{{{n}}}{pi}") == read_value(f"\\sqrt{{{a * a * n}}}{pi}")
    assert read_value(f"\\frac{{1}}{{\\sqrt{{{n}}}}}") == read_value(f"\\frac{{\\sqrt{{{n}}}}}{{{n}}}")
    if math.isqrt(n) ** 2 != n:  # sqrt(n) is irrational: never a rational, never equal to one
        assert read_value(f"\\sqrt{{{n}}}").rational is None
        assert decide(read_value(f"\\sqrt{{{n}}}"), read_value(str(math.isqrt(n)))) is False


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.text(alphabet="0123456789.+-*/^(){}[]\\fracsqtpi ", max_size=40))
def test_any_text_reads_or_is_refused_never_raises(text):
    value = read_value(text)
    assert value is None or isinstance(value, Exact)


@pytest.mark.parametrize("text", ["x + 1", "2^{2^{100}}", "10^{1000}", "\\sqrt{2 + \\sqrt{3}}", "\\frac{1}{1+\\sqrt2}",
                                  "\\sqrt[3]{8}", "\\sqrt{-4}", "5\\%", "3\\text{ cm}", "(1, 2)", "1,000", "e^2", "2i",
                                  "\\frac{1}{0}", "90^\\circ", "$5$"])
def test_what_the_reader_leaves_to_the_symbolic_step(text):
    assert read_value(text) is None


def test_values_close_enough_for_a_precision_or_a_rounding_are_undecided():
    sqrt2, near = read_value("\\sqrt{2}"), read_value("\\frac{665857}{470832}")  # 1e-12 apart
    assert decide(sqrt2, near) is None
    assert decide(read_value("0.333"), read_value("\\frac13")) is None  # a decimal may be rounded
    assert decide(read_value("\\frac{333}{1000}"), read_value("\\frac13")) is False  # no decimal: exact
    assert decide(read_value("0.5"), read_value("\\frac{1}{2}")) is True


# --- the grader uses it ----------------------------------------------------------------------------------


@pytest.mark.parametrize("given_, gold, reason", [
    ("\\sqrt{12}", "2\\sqrt{3}", "equal-value"),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", "equal-value"),
    ("\\frac{3\\pi}{4}", "\\frac{\\pi}{2}", "different-value"),
    ("(3, 4)", "12", "different-entries"),
    ("\\left(\\sqrt{8}, \\pi\\right)", "(2\\sqrt2, \\pi)", "equal-entries"),
    ("\\{\\sqrt2, 1\\}", "\\{1, \\sqrt{2}\\}", "equal-entries"),
])
def test_grade_decides_plain_values_without_the_symbolic_step(given_, gold, reason):
    result = grade(given_, gold)
    assert result.reason == reason and result.correct == reason.startswith("equal")


answers = st.sampled_from(["2", "4", "\\sqrt{4}", "\\frac{8}{4}", "2.0", "1.999", "\\sqrt{2}", "\\frac{2}{\\sqrt2}",
                           "1.414", "1.4142136", "\\pi", "3.14", "\\frac{\\pi}{1}", "(1, 2)", "\\left(1, \\frac{4}{2}\\right)",
                           "\\{2, 1\\}", "[1, 2]", "x = 2", "two", "2\\text{ cm}", "50\\%", "\\frac12", "0.5", "-0.5",
                           "\\sqrt{3}+1", "1+\\sqrt3", "0.333", "\\frac{1}{3}", "\\frac{665857}{470832}",
                           "10^{20}\\sqrt{2}-141421356237309504880", "0.168872421", "(2, 2)", "[2, 2]", "\\{2, 2\\}",
                           "2\\frac{1}{2}", "\\frac52"])


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(answers, min_size=2, max_size=9, unique=True))
def test_groups_formed_with_values_equal_the_pairwise_groups(pool_answers):
    """The grader's grouping (prmkit.evaluate.pool.answer_grouper) compares read values where it can; its groups
    are the ones that comparing every pair with ``equivalent`` gives."""
    from prmkit.evaluate.pool import answer_grouper
    from prmkit.grade import normalize

    assert answer_grouper("grader")(pool_answers) == group_answers(pool_answers, normalize, equivalent)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers, answers)
def test_decided_values_are_what_grade_says(a, b):
    verdict = decide_values(grouping_value(a), grouping_value(b)) if grouping_value(a) and grouping_value(b) else None
    if verdict is not None:
        assert equivalent(b, a) == verdict == equivalent(a, b)


# --- against Math-Verify -----------------------------------------------------------------------------------


@st.composite
def valued_expressions(draw, depth: int = 2) -> str:
    """Random expressions with roots, pi, fractions, decimals and powers, as LaTeX."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        n = draw(st.integers(0, 30))
        return draw(st.sampled_from([str(n), f"\\sqrt{{{n}}}", "\\pi", f"{n / 4}", f"\\frac{{{n}}}{{{draw(st.integers(1, 9))}}}"]))
    a, b = draw(valued_expressions(depth - 1)), draw(valued_expressions(depth - 1))
    return draw(st.sampled_from([f"{a}+{b}", f"{a}-{b}", f"{a}\\cdot {b}", f"\\frac{{{a}}}{{{b}}}", f"({a})^{{2}}",
                                 f"\\sqrt{{{a}}}", f"{a}/{b}", f"{a}{b}", f"{a}({b})", f"-{a}^{{2}}"]))


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valued_expressions(), valued_expressions(), st.booleans())
def test_the_reader_agrees_with_math_verify_wherever_both_decide(a, b, same):
    """The issue's property: where the reader decides a pair, Math-Verify (prmkit's symbolic step, as the worker
    runs it) gives the same verdict; pairs are half of the time the same value written two ways."""
    from prmkit.grade.worker import compare

    if same:
        b = f"\\frac{{2\\cdot ({a})}}{{2}}"
    ours = decide(read_value(a), read_value(b))
    if ours is None:
        return
    theirs = compare({"gold": f"${b}$", "given": f"${a}$", "mode": "strict"})
    if "equal" in theirs and "error" not in theirs:
        assert theirs["equal"] == ours, (a, b, theirs)


# --- what Math-Verify reads another way: left to the symbolic step (a review's findings) ---------------------


@pytest.mark.parametrize("text", ["2\\frac{1}{2}", "-2\\frac12", "3\\dfrac{1}{4}", "2\\,\\frac{1}{2}", "0\\frac12",
                                  "1/2\\pi", "3/4\\sqrt{2}", "1 \\div 2\\pi", "6 \\div 2(1+2)", "2(3)", "(2)(3)",
                                  "2(1+\\sqrt5)", "\\sqrt(4)", "\\frac(1)(2)", "\\sqrt{\u0664}", "\\sqrt{1000000007}"])
def test_forms_math_verify_reads_otherwise_are_not_read(text):
    assert read_value(text) is None


@pytest.mark.parametrize("given_, gold, verdict", [
    ("2\\frac{1}{2}", "\\frac52", "correct"),  # a mixed number, as MATH writes them
    ("2\\frac{1}{2}", "1", "incorrect"),
    ("1/2\\pi", "\\frac{1}{2\\pi}", "correct"),
    ("\\{5, 5\\}", "5", "correct"),  # the set {5}: not "several values against one"
    ("[2, 2]", "2", "correct"),  # the interval [2, 2] is the point 2
    ("(2, 2)", "2", "incorrect"),  # a pair, or an empty open interval
    ("(2, 2]", "2", "incorrect"),
])
def test_grade_agrees_with_math_verify_where_the_reader_steps_aside(given_, gold, verdict):
    from prmkit.grade import InProcess

    assert grade(given_, gold, pool=InProcess()).verdict == verdict


def test_cancelling_terms_leave_the_pair_to_the_symbolic_step():
    big = read_value("10^{20}\\sqrt{2}-141421356237309504880")  # about 0.1689, though its float is 0.0
    assert decide(big, read_value("0.168872421")) is None


def test_a_long_answer_of_large_radicands_reads_quickly():
    import time

    start = time.perf_counter()
    read_value("+".join(["\\sqrt{99999989}"] * 15))
    assert time.perf_counter() - start < 1.0


# --- the pool's threads and slots ---------------------------------------------------------------------------


def test_grade_many_stops_sending_pairs_after_a_failure():
    """A worker that fails (not a verdict, not a GradeError) ends the batch; pairs not yet sent are not graded."""
    import threading
    import time as clock

    from prmkit.grade import grade_many

    class Failing:
        workers, timeouts = 1, 0
        calls = 0
        lock = threading.Lock()

        def run(self, job, timeout=None):
            with self.lock:
                Failing.calls += 1
                first = Failing.calls == 1
            if first:
                raise RuntimeError("worker crashed")
            clock.sleep(0.2)
            return {"equal": True, "gold": [], "given": []}

        def close(self):
            pass

    with pytest.raises(RuntimeError, match="crashed"):
        grade_many([("x^2+2x", f"x(x+{k})") for k in range(20)], pool=Failing())
    assert Failing.calls <= 3


def test_prestart_starts_the_first_worker_once(monkeypatch):
    from prmkit.grade import symbolic

    started = []

    class Dummy:
        def __init__(self):
            started.append(self)

        def kill(self):
            pass

    monkeypatch.setattr(symbolic, "_Worker", Dummy)
    pool = symbolic.SymbolicPool(workers=2)
    for _ in range(5):
        pool.prestart()
    import time as clock

    clock.sleep(0.2)
    assert len(started) == 1 and len(pool._idle) == 1


def test_sll_first_parsing_gives_the_ll_verdicts():
    """The worker's parser tries ANTLR's SLL prediction first and falls back to LL on a syntax error (ANTLR's
    guarantee: a parse SLL completes is LL's): on every symbolic job of the regression table and of Math-Verify's
    own test cases (where present), the worker's answer is the same as with LL alone, parsed forms included."""
    import json
    import os

    from prmkit.grade import fast_path, worker

    cases = [json.loads(line) for line in (Path(__file__).parent / "data" / "grading_cases.jsonl").open()]
    pairs = [(c["given"], c["gold"], c["mode"]) for c in cases]
    shared = Path(os.environ.get("PRMKIT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    mv = shared / "answers" / "math_verify_test_cases.json"
    if mv.exists():
        pairs += [(c["pred"], c["gold"], "strict") for c in json.loads(mv.read_text())]
    jobs = [job for given, gold, mode in pairs if isinstance(gold, str) and gold.strip() and isinstance(given, str)
            and isinstance(job := fast_path(given, gold, mode), dict)]
    assert len(jobs) >= 10  # the regression table alone gives 14

    def answers() -> list[dict]:
        worker._parse_gold.cache_clear()
        return [worker.answer(job) for job in jobs]

    assert worker.SLL_FIRST
    before = dict(worker.PARSES)
    two_stage = answers()
    assert worker.PARSES["sll"] - before["sll"] > 10 * (worker.PARSES["ll"] - before["ll"])  # SLL parses most
    worker.SLL_FIRST = False
    try:
        ll_alone = answers()
    finally:
        worker.SLL_FIRST = True
    assert two_stage == ll_alone
    before = dict(worker.PARSES)  # Math-Verify as the reference grader parses as it does itself: LL alone
    assert worker.answer({"grader": "math-verify", "gold": "$\\frac{1}{2}$", "given": "$0.5$"}) == {"equal": True}
    assert worker.PARSES["sll"] == before["sll"] and worker.PARSES["ll"] > before["ll"] and worker.SLL_FIRST
