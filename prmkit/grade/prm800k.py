"""A re-implementation of the grader released with PRM800K (``grading/grader.py``), for audits.

It accepts a given answer if MATH-normalised strings match, else if a stricter normalisation (drops
``\\text{}``, ``$``, units, ``\\!``, thousands commas, braces, case) matches, else if sympy reduces the
difference to 0, with guards: no sympy on more than two unknown letters or on large exponents; tuples
and intervals element by element; unreduced fractions must match exactly; an integer gold needs an
integer answer. It runs inside a grading worker (sympy.simplify has no timeout of its own).

Differences from the release, on purpose: it uses prmkit's MATH normalisation; a small LaTeX-to-text
step replaces ``pylatexenc`` (not a prmkit dependency); a sympy error still means "not equal" here,
as in the original, because this module reproduces that grader, faults included, to audit against it.

>>> grade_answer("\\\\frac{1}{2}", "1/2"), grade_answer("2/4", "1/2"), grade_answer("x^2+2x", "x(x+2)")
(True, False, True)
"""

from __future__ import annotations

import re
from tokenize import TokenError

import sympy
from sympy.parsing import sympy_parser

from prmkit.grade.normalize import strip_string

BAD_SUBSTRINGS = ("^{", "^(")
BAD_REGEXES = (r"\^[0-9]+\^", r"\^[0-9][0-9]+")
TUPLE_CHARS = "()[]"
UNITS = ("degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day", "week",
         "month", "year", "foot", "feet", "inch", "yard")


def grade_answer(given: str | None, gold: str) -> bool:
    """PRM800K's ``grade_answer(given_answer, ground_truth)``."""
    if given is None:
        return False
    if _mathd(gold) == _mathd(given):
        return True
    gold_n, given_n = _normalize(gold), _normalize(given)
    if gold_n == given_n:
        return True
    if not given_n:
        return False
    gold_elems, given_elems = _split_tuple(gold_n), _split_tuple(given_n)
    if len(gold_elems) > 1 and (gold_n[0] != given_n[0] or gold_n[-1] != given_n[-1]):
        return False
    if len(gold_elems) != len(given_elems):
        return False
    return all(_elem_equal(g, a) for g, a in zip(gold_elems, given_elems))


def _elem_equal(gold: str, given: str) -> bool:
    if _is_frac(gold) and _is_frac(given):
        return gold == given  # unreduced fractions are not accepted
    if _str_is_int(gold) != _str_is_int(given):
        return False
    return _equal_under_sympy(gold, given)


def _mathd(answer: str) -> str:
    answer = answer.strip()
    m = re.search(r"^\\text\{(?P<text>.+?)\}$", answer)
    return strip_string(m.group("text").strip() if m else answer)


def _normalize(expr: str) -> str:
    m = re.search(r"^\\text\{(?P<text>.+?)\}$", expr)
    if m is not None:
        expr = m.group("text")
    expr = expr.replace("\\%", "%").replace("\\$", "$").replace("$", "").replace("%", "")
    expr = expr.replace(" or ", " , ").replace(" and ", " , ")
    expr = expr.replace("million", "*10^6").replace("billion", "*10^9").replace("trillion", "*10^12")
    for unit in UNITS:
        expr = re.sub(f"{unit}(es)?(s)? *(\\^[0-9]+)?", "", expr)
    expr = re.sub(r"\^ *\\circ", "", expr)
    if expr and expr[0] == "{" and expr[-1] == "}":
        expr = expr[1:-1]
    expr = re.sub(r",\\! *", "", expr)
    if _is_float(expr) and _is_int(float(expr)):
        expr = str(round(float(expr)))
    if "\\" in expr:
        expr = _latex_to_text(expr)
    expr = re.sub("- *", "-", expr)
    expr = re.sub("([0-9]) +([0-9])", "\\1+\\2", expr)  # mixed numbers: 7 3/4 => 7+3/4
    expr = expr.replace(" ", "").replace("{", "").replace("}", "").lower()
    if _str_is_int(expr):
        expr = str(int(float(_strip_commas(expr))))
    return expr


def _latex_to_text(expr: str) -> str:
    """Stand-in for pylatexenc's latex_to_text on the constructs answers use."""
    expr = expr.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac")
    for _ in range(5):  # nested fractions, innermost first
        expr = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: f" {_group(m[1])}/{_group(m[2])}", expr)
        expr = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", expr)
    replacements = {"\\sqrt": "sqrt", "\\pi": "pi", "\\infty": "inf", "\\cup": "U", "\\cdot": "*",
                    "\\times": "*", "\\left": "", "\\right": "", "\\text": "", "\\mbox": "", "\\,": "", "\\ ": " "}
    for latex, text in replacements.items():
        expr = expr.replace(latex, text)
    return expr.strip()


def _group(text: str) -> str:
    return text if re.fullmatch(r"[\w.]+", text) else f"({text})"


def _is_float(num: str) -> bool:
    try:
        float(num)
    except ValueError:
        return False
    return True


def _is_int(x: float) -> bool:
    try:
        return abs(x - round(x)) <= 1e-7
    except (OverflowError, ValueError):  # inf and nan are not integers
        return False


def _is_frac(expr: str) -> bool:
    return bool(re.search(r"^-?[0-9]+.?/0*[1-9][0-9]*.?$", expr))


def _str_is_int(x: str) -> bool:
    x = _strip_commas(x)
    return _is_float(x) and _is_int(float(x))


def _strip_commas(expr: str) -> str:
    pattern = re.compile(r"(\d)(,)(\d\d\d)($|\D)")
    while True:
        next_expr = pattern.sub("\\1\\3\\4", expr)
        if next_expr == expr:
            return next_expr
        expr = next_expr


def _split_tuple(expr: str) -> list[str]:
    expr = _strip_commas(expr)
    if not expr:
        return []
    if (len(expr) > 2 and expr[0] in TUPLE_CHARS and expr[-1] in TUPLE_CHARS
            and all(ch not in expr[1:-1] for ch in TUPLE_CHARS)):
        return [e.strip() for e in expr[1:-1].split(",")]
    return [expr]


def _should_allow_eval(expr: str) -> bool:
    letters = {c for c in expr.replace("sqrt", "").replace("frac", "") if c.isalpha()}
    if len(letters) > 2 or any(s in expr for s in BAD_SUBSTRINGS):
        return False
    return not any(re.search(r, expr) for r in BAD_REGEXES)


def _equal_under_sympy(gold: str, given: str) -> bool:
    expr = f"({gold})-({given})"
    if not _should_allow_eval(expr):
        return False
    transformations = sympy_parser.standard_transformations + (sympy_parser.implicit_multiplication_application,)
    try:
        diff = sympy_parser.parse_expr(expr.replace("^", "**"), transformations=transformations)
        return sympy.simplify(diff) == 0
    except (SyntaxError, TypeError, ValueError, AttributeError, sympy.SympifyError, TokenError, RecursionError):
        return False  # the released grader's "except: pass", narrowed to parse and simplify failures

