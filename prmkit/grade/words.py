"""Answers that are words, names or choice letters, and the variable of an equation: compared as text.

Math-Verify reads ``\\text{yes}`` and ``\\text{no}`` alike in its lenient mode (the text is dropped) and
reads a bare ``Alice`` as the product ``A*l*i*c*e``; neither is how a person compares two names. So
answers of these kinds compare as text in every mode: case, spacing, a final full stop and the
``\\text{}``/``\\mathrm{}`` wrappers aside; a choice letter matches its option with or without
parentheses.

>>> text_answer("\\\\text{(B)}"), text_answer("B"), text_answer("\\\\mathrm{Alice}")
(('choice', 'B'), ('choice', 'B'), ('words', 'alice'))
>>> text_answer("\\\\text{North  East}"), text_answer("yes"), text_answer("x"), text_answer("abc")
(('words', 'north east'), ('words', 'yes'), None, None)
>>> text_answer("5\\\\text{ cm}"), text_answer("\\\\pi"), text_answer("\\\\text{odd}.")
(None, None, ('words', 'odd'))

The left side of an equation names what the answer is about, so ``y = 3`` is not an answer for
``x = 3``; :func:`equation_variable` reads it (``3`` alone, with no name, says nothing).

>>> equation_variable("y = 3"), equation_variable("x_1=2"), equation_variable("3"), equation_variable("x=1, y=2")
('y', 'x_1', None, None)
"""

from __future__ import annotations

import re

_WRAPPER = re.compile(r"^\\(?:text|textbf|textit|textrm|textsf|textnormal|mbox|mathrm|mathbf|mathit|operatorname)"
                      r"\s*\{(?P<inner>.*)\}$", re.DOTALL)
_CHOICE = re.compile(r"^\(?\s*(?P<letter>[A-Z])\s*\)?$")
_WORDS = re.compile(r"^[A-Za-z][A-Za-z'\u2019\- ,]*[A-Za-z]$")
_CAPITALISED = re.compile(r"^[A-Z][a-z]+$")
_EQUATION = re.compile(r"^\s*(?P<name>[A-Za-z](?:_\{?\w+\}?)?)\s*=(?P<rest>[^=<>]+)$")
_SHORT_WORDS = frozenset({"yes", "no", "none", "odd", "even", "true", "false", "neither", "both", "all",
                          "never", "always", "undefined", "impossible", "infinite", "finite", "prime"})
"""Lower-case words short enough to be a product of variables (``abc``) if not listed: these are not."""


def text_answer(answer: str) -> tuple[str, str] | None:
    """``("choice", LETTER)``, ``("words", canonical text)`` or None for an answer that is mathematics.

    A bare lower-case run of letters is words only when it is long (five letters or more), listed in
    :data:`_SHORT_WORDS`, or written inside a text wrapper: ``abc`` and ``xy`` are products of variables.
    """
    inner, wrapped = _unwrap(answer.strip())
    inner = inner.strip().rstrip(".").strip()
    choice = _CHOICE.match(inner)
    if choice and (wrapped or inner.startswith("(") or len(inner) == 1):
        return "choice", choice["letter"]
    if not _WORDS.match(inner) or "," in inner and not wrapped:
        return None
    text = " ".join(inner.replace("\u2019", "'").split()).lower()
    if not wrapped and len(text.split()) > 3:  # "The answer is Alice" is a sentence: Math-Verify reads it
        return None
    if wrapped or " " in text or _CAPITALISED.match(inner) or len(text) >= 5 or text in _SHORT_WORDS:
        return "words", text
    return None


_LEADING_CHOICE = re.compile(r"^\s*(?:\\(?:textbf|text|mathrm)\s*\{\s*)?\(\s*(?P<letter>[A-Z])\s*\)")


def loose_text(answer: str) -> tuple[str, str] | None:
    """What an answer says as text when :func:`text_answer` holds back, for comparing with a gold that is
    words or a choice: a bare short run of letters (``two`` for ``\\text{two}``), or the option letter
    that leads an answer (``\\textbf{(A) }2\\sqrt2`` is option A).

    >>> loose_text("two"), loose_text("\\\\textbf{(A) }2\\\\sqrt2"), loose_text("2x")
    (('words', 'two'), ('choice', 'A'), None)
    """
    inner, _ = _unwrap(answer.strip())
    leading = _LEADING_CHOICE.match(answer)
    if leading:
        return "choice", leading["letter"]
    if _WORDS.match(inner.strip()):
        return "words", " ".join(inner.split()).lower()
    return None


def _unwrap(text: str) -> tuple[str, bool]:
    """The text inside ``$...$`` and any nest of text wrappers, and whether a wrapper was there."""
    wrapped = False
    while True:
        stripped = text.strip().rstrip(".").strip()  # "\\text{odd}." ends a sentence
        if len(stripped) > 1 and stripped[0] == stripped[-1] == "$":
            text = stripped.strip("$")
            continue
        m = _WRAPPER.match(stripped)
        if m is None or not _balanced(m["inner"]):
            return stripped, wrapped
        text, wrapped = m["inner"], True


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def equation_variable(answer: str) -> str | None:
    """The name on the left of a single equation ``NAME = ...``, else None."""
    m = _EQUATION.match(answer.strip().strip("$"))
    if m is None or "," in m["rest"]:
        return None
    return m["name"].replace("{", "").replace("}", "")


__all__ = ["equation_variable", "loose_text", "text_answer"]
