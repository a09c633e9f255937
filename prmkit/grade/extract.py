"""Find the final answer in a solution text: ``# Answer`` blocks, ``\\boxed{}``/``\\fbox{}``, GSM8K ``####``,
Minerva's ``Final Answer: The final answer is $X$. I hope it is correct.``

Whichever marker comes *last* in the text wins, because a solution that changes its mind ends with
the answer it means. Braces are matched, so nested groups survive:

>>> extract_answer("so $x = \\\\boxed{\\\\frac{1}{2}}$.")
'\\\\frac{1}{2}'
>>> extract_answer("Step 1.\\n\\n# Answer\\n\\n42")
'42'
>>> extract_answer("She makes 9 * 2 = $18.\\n#### 18")
'18'
>>> extract_answer("Final Answer: The final answer is $\\\\frac{1}{2}$. I hope it is correct.")
'\\\\frac{1}{2}'
>>> extract_answer("no marker here") is None
True

A ``\\boxed{`` whose braces never close (a generation cut off mid-answer) has no answer:

>>> extract_answer("first \\\\boxed{1} then \\\\boxed{\\\\frac{1}{2") is None
True
"""

from __future__ import annotations

import re

BOX_COMMANDS = ("\\boxed", "\\fbox")
_ANSWER_HEADING = re.compile(r"^#\s*Answer\s*$", re.MULTILINE)
_GSM8K = re.compile(r"^\s*####\s*(.*?)\s*$", re.MULTILINE)
_MINERVA_OPENING = "The final answer is"
_MINERVA = re.compile(
    r"The final answer is(?:\s+|(?=[$\\]))(?:\$\$(?P<a>[^$]+?)\$\$|\$(?P<b>[^$]+?)\$|\\\((?P<c>.+?)\\\)"
    r"|\\\[(?P<d>.+?)\\\]|(?P<e>[^\s$]+?))\s*\.?\s*(?:I hope it is correct|$)", re.DOTALL)
"""Minerva's closing sentence (Lewkowycz et al., 2022; lm-evaluation-harness's ``minerva_math``): the answer is
one delimited span or one word after a space, followed by "I hope it is correct" or the end of the text; anything
looser ("is \\"$12$ and $13$\\"", "is:5") stays prose, read whole by the symbolic step. Only the last opening is
tried, so a text of many openings is read in linear time."""
_SPAN = re.compile(r"^\s*(?:\$\$(?P<a>[^$]*)\$\$|\$(?P<b>[^$]*)\$|\\\((?P<c>.*?)\\\)|\\\[(?P<d>.*?)\\\])\s*\.?\s*$", re.DOTALL)
_DELIMITER = re.compile(r"\$|\\\(|\\\)|\\\[|\\\]")


def extract_answer(text: str | None) -> str | None:
    """The final answer of ``text``, stripped, or None when no marker holds a non-empty answer."""
    if not text:
        return None
    found = [f for f in (_answer_block(text), _last_box(text), _gsm8k(text), _minerva(text)) if f is not None]
    if not found:
        return None
    _, answer = max(found, key=lambda f: f[0])
    answer = answer.strip()
    return answer or None


def count_boxes(text: str) -> int:
    """How many ``\\boxed``/``\\fbox`` commands ``text`` holds.

    >>> count_boxes("\\\\boxed{1} and \\\\boxed{2}")
    2
    """
    return sum(len(re.findall(re.escape(c) + r"(?![A-Za-z])", text)) for c in BOX_COMMANDS)


def _answer_block(text: str) -> tuple[int, str] | None:
    """PRM800K's ``# Answer`` heading: the answer is the text after the last one."""
    last = None
    for last in _ANSWER_HEADING.finditer(text):
        pass
    if last is None:
        return None
    rest = text[last.end():].strip()
    if not rest:
        return None
    boxed = _last_box(rest)  # "# Answer\n\n\\boxed{5}" still means 5
    return last.start(), boxed[1] if boxed else rest


def _gsm8k(text: str) -> tuple[int, str] | None:
    """GSM8K's ``#### 18`` line (the last one)."""
    last = None
    for last in _GSM8K.finditer(text):
        pass
    if last is None or not last.group(1):
        return None
    return last.start(), last.group(1)


def _minerva(text: str) -> tuple[int, str] | None:
    """Minerva's ``The final answer is X. I hope it is correct.`` (the last opening, if it closes so)."""
    at = text.rfind(_MINERVA_OPENING)
    last = _MINERVA.match(text, at) if at >= 0 else None
    if last is None:
        return None
    answer = next(g for g in last.groups() if g is not None).strip()
    return last.start(), answer.removesuffix(".")  # "\\[ x. \\]": the sentence's full stop


def unwrap_math(text: str) -> str:
    """The inside of an answer that is one math span and nothing else (``$5 \\geq x$``, ``\\(9\\)``, ``$$1$$.``);
    any other text as it is.

    >>> unwrap_math("$5 \\\\geq x$"), unwrap_math("$1$ and $2$"), unwrap_math("\\\\[ 9 \\\\]")
    ('5 \\\\geq x', '$1$ and $2$', '9')
    """
    span = _SPAN.match(text)
    if span is None:
        return text
    inside = next(g for g in span.groups() if g is not None).strip()
    return inside if inside and not _DELIMITER.search(inside) else text


def _last_box(text: str) -> tuple[int, str] | None:
    """Position and content of the last box command; None if there is none or it never closes."""
    start = max(_last_command(text, c) for c in BOX_COMMANDS)
    if start < 0:
        return None
    i = start + 1
    while i < len(text) and text[i].isalpha():
        i += 1
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "{":
        content = matching_group(text, i)
        return None if content is None else (start, content)
    # "\boxed 5": the argument runs to the next "$" or whitespace, as in the MATH release.
    m = re.match(r"[^\s$]+", text[i:])
    return (start, m.group(0)) if m else None


def _last_command(text: str, command: str) -> int:
    """Start of the last ``command`` not followed by more letters (``\\boxed`` but not ``\\boxedx``)."""
    pos = -1
    for m in re.finditer(re.escape(command) + r"(?![A-Za-z])", text):
        pos = m.start()
    return pos


def matching_group(text: str, open_at: int) -> str | None:
    """The content of the brace group opening at ``text[open_at]``, or None if it never closes.

    Escaped braces (``\\{``) do not count.

    >>> matching_group("{a{b}c}d", 0)
    'a{b}c'
    >>> matching_group("{\\\\{1\\\\}}", 0)
    '\\\\{1\\\\}'
    """
    depth = 0
    i = open_at
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1:i]
        i += 1
    return None
