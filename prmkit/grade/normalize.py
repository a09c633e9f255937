"""Cheap string normalisation of answers: MATH's ``strip_string``, then exact numbers made canonical.

:func:`normalize` is a pure string function (no sympy, no parsing that can hang), so it is safe as a
grouping key for majority voting and as the grader's fast path: two answers with the same normal form
are equal. The converse does not hold (``\\sqrt{4}`` and ``2`` differ as strings); that is what the
symbolic step of :func:`prmkit.grade.grade` is for.

>>> normalize("\\\\dfrac{1}{2}"), normalize("\\\\left( 1,2 \\\\right)")
('1/2', '(1,2)')
>>> normalize("0.50"), normalize("1,000"), normalize("14{,}916"), normalize("x = 5")
('1/2', '1000', '14916', '5')
>>> normalize("\\\\text{Evelyn}"), normalize("90^\\\\circ"), normalize("28\\\\%")
('Evelyn', '90', '28')
>>> normalize("10\\\\text{ cm}^2")
'10'

Spellings MATH's normalisation leaves apart are made one (:func:`canonical_latex`): repeating
decimals, the empty set, thin-space thousands, complex numbers with decimals or a product sign:

>>> normalize("0.1\\\\overline{6}"), normalize("\\\\varnothing"), normalize("1\\\\,000\\\\,000"), normalize("1.5 + 2\\\\cdot i")
('1/6', '\\\\emptyset', '1000000', '3/2+2i')
"""

from __future__ import annotations

import re
from fractions import Fraction

_TEXT_WRAPPER = re.compile(r"^\\(?:text|textbf|textnormal|mbox|mathrm)\{(?P<text>.+?)\}$")
_THOUSANDS = re.compile(r"^-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$")
_LIST_COMMA = re.compile(r",\s")  # "32, 349" is a list of two numbers, "32,349" one number
_NAME = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*$")  # "k", "x_1": the left side of "k = 5"
_DECIMAL = re.compile(r"^-?(?:\d+\.?\d*|\.\d+)$")
_SLASH = re.compile(r"^(-?)(\d+)/(\d+)$")
_FRAC = re.compile(r"^(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}$")
_REPEATING = re.compile(r"^(-?)(\d*)\.(\d*)\\overline\{(\d+)\}$")
_SEPARATED_THOUSANDS = re.compile(r"(?<=\d)(?:\\[,;: ]|~|[\u2009\u202f\u00a0])(?=\d{3}(?!\d))")
_EMPTY_SET = re.compile(r"^(?:\\emptyset|\\varnothing|\\\{\s*\\\}|\{\s*\}|\\O)$")
_MATRIX_IN_BRACKETS = re.compile(r"(?:\\left)?\s*[(\[]\s*\\begin\{matrix\}(.*?)\\end\{matrix\}\s*(?:\\right)?\s*[)\]]",
                                 re.DOTALL)
_PRODUCT_I = re.compile(r"(?<=[\d}])\s*(?:\\cdot|\\times|\*)\s*i(?![A-Za-z])")
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+|\\frac\{\d+\}\{\d+\}|\d+/\d+)"
_COMPLEX = re.compile(rf"^(?P<re>-?{_NUMBER})?(?:(?P<sign>^-|[+-])(?P<im>{_NUMBER})?|(?P<bare>{_NUMBER})?)i$")


def normalize(answer: str | None) -> str:
    """A canonical string for ``answer``: MATH normalisation, then exact numbers as ``p/q``.

    Never raises on any string; ``None`` and blank answers give ``""``.
    """
    if answer is None:
        return ""
    answer = canonical_latex(answer.strip())
    s = strip_string(answer)
    number = exact_number(s, thousands=not _LIST_COMMA.search(answer))
    if number is not None:
        return str(number)
    return complex_key(s) or s


def canonical_latex(answer: str) -> str:
    """One LaTeX spelling for answers written several ways; the grader's fast path and Math-Verify
    both read this form.

    Matrix environments (``bmatrix``, a bare ``matrix`` in brackets) become ``pmatrix``; the empty
    set is ``\\emptyset``; thousands separated by thin or other spaces are joined; ``2\\cdot i`` is
    ``2i``.

    >>> canonical_latex("\\\\left(\\\\begin{matrix}1\\\\\\\\2\\\\end{matrix}\\\\right)")
    '\\\\begin{pmatrix}1\\\\\\\\2\\\\end{pmatrix}'
    >>> canonical_latex("\\\\{ \\\\}"), canonical_latex("3+2\\\\times i"), canonical_latex("12\\\\;345")
    ('\\\\emptyset', '3+2i', '12345')
    """
    text = _MATRIX_IN_BRACKETS.sub(r"\\begin{pmatrix}\1\\end{pmatrix}", answer)
    text = re.sub(r"\\(begin|end)\{(?:bmatrix|Bmatrix|smallmatrix)\}", r"\\\1{pmatrix}", text)
    text = _SEPARATED_THOUSANDS.sub("", text)
    text = _PRODUCT_I.sub("i", text)
    if _EMPTY_SET.match(text.strip().strip("$").strip()):
        return "\\emptyset"
    return text


def complex_key(s: str) -> str | None:
    """``a+bi`` with exact ``a`` and ``b`` as ``p/q`` for a normalised complex number, else None.

    >>> complex_key("\\\\frac{3}{2}+\\\\frac{5}{2}i"), complex_key("1.5+2.5i"), complex_key("-i"), complex_key("x+i")
    ('3/2+5/2i', '3/2+5/2i', '0+-1i', None)
    """
    m = _COMPLEX.match(s) if len(s) <= 200 and s.endswith("i") else None
    if m is None:
        return None
    if m["sign"] is None:  # no sign between two parts: "bi" alone
        if m["re"] is not None and m["bare"] is not None:
            return None
        coefficient = m["re"] or m["bare"]
        real, imag = Fraction(0), exact_number(coefficient) if coefficient else Fraction(1)
    else:
        real = exact_number(m["re"]) if m["re"] else Fraction(0)
        imag = (exact_number(m["im"]) if m["im"] else Fraction(1)) * (-1 if m["sign"] == "-" else 1)
    if real is None or imag is None:
        return None
    return f"{real}+{imag}i"


def exact_number(s: str, thousands: bool = True) -> Fraction | None:
    """The exact rational a normalised string spells (integer, decimal, ``a/b``, ``\\frac{a}{b}``), else None.

    >>> exact_number("-0.25"), exact_number("\\\\frac{6}{4}"), exact_number("2/0"), exact_number("x")
    (Fraction(-1, 4), Fraction(3, 2), None, None)
    """
    if len(s) > 200:  # a huge literal is not a cheap key; the symbolic step bounds its cost
        return None
    if thousands and _THOUSANDS.match(s):
        s = s.replace(",", "")
    if _DECIMAL.match(s):
        return Fraction(s)
    m = _REPEATING.match(s)
    if m:  # 0.1\overline{6}: the fixed digits, then the repeating block over 9...9 at their scale
        whole, fixed, block = m.group(2) or "0", m.group(3), m.group(4)
        value = int(whole) + Fraction(int(fixed or "0"), 10 ** len(fixed))
        value += Fraction(int(block), (10 ** len(block) - 1) * 10 ** len(fixed))
        return -value if m.group(1) else value
    m = _SLASH.match(s) or _FRAC.match(s)
    if m:
        num, den = int(m.group(2)), int(m.group(3))
        if den == 0:
            return None
        value = Fraction(num, den)
        return -value if m.group(1) else value
    return None


def is_decimal(s: str) -> bool:
    """Whether a normalised answer is written with a decimal point (so it may be a rounded value).

    >>> is_decimal("0.333"), is_decimal("1/3")
    (True, False)
    """
    return "." in s and _DECIMAL.match(s.replace(",", "")) is not None


# --- MATH's normalisation (Hendrycks et al., ``math_equivalence.strip_string``) ---------------------
# Kept close to the original so that "equal under MATH normalisation" means what it means there; the
# only changes: it never raises (the original asserts), "{,}" and "\\!" thousands separators are
# dropped, and \mbox/\textnormal units count as units like "\text{ ".

def strip_string(string: str) -> str:
    """MATH normalisation of one answer string.

    >>> strip_string("\\\\frac12"), strip_string("k = \\\\dfrac{3}{4}"), strip_string(".5")
    ('\\\\frac{1}{2}', '\\\\frac{3}{4}', '\\\\frac{1}{2}')
    """
    m = _TEXT_WRAPPER.match(string)
    if m:
        string = m.group("text").strip()
    string = string.replace("\n", "").replace("\\!", "").replace("{,}", ",")
    string = string.replace("\\\\", "\\")
    string = string.replace("tfrac", "frac").replace("dfrac", "frac").replace("cfrac", "frac")
    string = string.replace("\\left", "").replace("\\right", "")
    string = string.replace("^{\\circ}", "").replace("^\\circ", "")
    string = string.replace("\\$", "").replace("$", "")
    string = _remove_right_units(string)
    string = string.replace("\\%", "").replace("%", "")
    string = string.replace(" .", " 0.").replace("{.", "{0.")
    if not string:
        return string
    if string[0] == ".":
        string = "0" + string
    parts = string.split("=")
    if len(parts) == 2 and _NAME.match(parts[0]):
        string = parts[1]
    string = _fix_sqrt(string)
    string = string.replace(" ", "")
    string = _fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    return _fix_a_slash_b(string)


def _remove_right_units(string: str) -> str:
    # In MATH, "\text{ " (with the space) only ever introduces units.
    for unit in ("\\text{ ", "\\mbox{ ", "\\textnormal{ "):
        if unit in string:
            string = string.split(unit)[0]
    return string


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    splits = string.split("\\sqrt")
    out = splits[0]
    for split in splits[1:]:
        if split and split[0] not in "{[":
            out += "\\sqrt{" + split[0] + "}" + split[1:]
        else:
            out += "\\sqrt" + split
    return out


def _fix_fracs(string: str) -> str:
    substrs = string.split("\\frac")
    out = substrs[0]
    for substr in substrs[1:]:
        out += "\\frac"
        if substr and substr[0] == "{":
            out += substr
        elif len(substr) < 2:
            return string
        elif substr[1] != "{":
            out += "{" + substr[0] + "}{" + substr[1] + "}" + substr[2:]
        else:
            out += "{" + substr[0] + "}" + substr[1:]
    return out


def _fix_a_slash_b(string: str) -> str:
    m = re.fullmatch(r"(-?\d+)/(\d+)", string)
    if m is None or str(int(m.group(1))) != m.group(1) or str(int(m.group(2))) != m.group(2):
        return string
    return "\\frac{" + m.group(1) + "}{" + m.group(2) + "}"
