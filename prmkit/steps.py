"""A sampled text as steps: the paper's newline format by default, blank lines, a marker or a custom separator.

PRM800K's generator writes one step per line and closes with ``# Answer\\n\\n<answer>``; that closing
step keeps its blank line (it is one step, as in PRM800K), whatever the mode. Empty steps are dropped
and each step is stripped of surrounding whitespace. Long chains of thought (one text, no line
structure) are cut by :mod:`prmkit.longcot` (``paragraphs``, ``sentences``).

>>> split_steps("2 + 2 = 4.\\nSo x = 4.\\n# Answer\\n\\n4")
['2 + 2 = 4.', 'So x = 4.', '# Answer\\n\\n4']
>>> split_steps("First, add.\\nStill first.\\n\\nThen halve.", "blank")
['First, add.\\nStill first.', 'Then halve.']
>>> split_steps("A : 5\\n<step>B : 7\\n<step># Answer\\n\\n7\\n<step>", "marker", marker="<step>")
['A : 5', 'B : 7', '# Answer\\n\\n7']
>>> join_steps(split_steps("a\\nb\\n# Answer\\n\\n3")) == "a\\nb\\n# Answer\\n\\n3"
True
"""

from __future__ import annotations

import re

ANSWER = "# Answer"
"""The paper's closing line: what follows it (after a blank line) is the final answer."""

_BLANK = re.compile(r"\n[ \t]*\n")


def split_steps(text: str, mode: str = "newline", separator: str = "", marker: str = "",
                max_tokens: int = 0) -> list[str]:
    """The steps of ``text`` (see the module docstring); ``mode`` is one of
    :data:`prmkit.generate.config.STEP_MODES` (``auto``: ``marker`` when ``marker`` is set, else ``newline``)."""
    if mode == "auto":
        mode = "marker" if marker else "newline"
    head, answer = _cut_answer(text.replace(marker, "\n") if mode == "marker" and marker else text)
    if mode in ("newline", "marker"):
        pieces = head.split("\n")
    elif mode == "blank":
        pieces = _BLANK.split(head)
    elif mode == "custom":
        if not separator:
            raise ValueError("custom step splitting needs a separator")
        pieces = head.split(separator)
    elif mode in ("paragraphs", "sentences"):
        from prmkit.longcot import split_long

        pieces = split_long(head, mode, max_tokens)
    else:
        raise ValueError(f"unknown step mode {mode!r}")
    steps = [p.strip() for p in pieces if p.strip()]
    return steps + ([answer] if answer is not None else [])


def _cut_answer(text: str) -> tuple[str, str | None]:
    """(text before the ``# Answer`` line, the closing step ``# Answer\\n\\n<answer>``, or None without one).
    The answer is the first line after ``# Answer``: what a model writes after it (one that never learned
    to stop) is not part of the solution.

    >>> _cut_answer("x = 1\\n# Answer\\n\\n 1 \\n")
    ('x = 1\\n', '# Answer\\n\\n1')
    >>> _cut_answer("# Answer\\n\\n7\\nProblem: what is 2+2?")[1]
    '# Answer\\n\\n7'
    """
    at = text.find(ANSWER)
    while at > 0 and text[at - 1] not in "\n":
        at = text.find(ANSWER, at + 1)
    if at < 0:
        return text, None
    rest = text[at + len(ANSWER):].strip().split("\n", 1)[0].strip()
    return text[:at], f"{ANSWER}\n\n{rest}" if rest else ANSWER


def join_steps(steps: list[str], separator: str = "\n") -> str:
    """The text of ``steps`` in the newline format (the inverse of :func:`split_steps` for steps without
    line breaks, but for the closing ``# Answer`` step)."""
    return separator.join(steps)
