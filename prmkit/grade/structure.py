"""Answers with parts, read without sympy: tuples, intervals, sets, matrices and vectors.

Two uses in the grader's fast path:

- :func:`collection_kind` tells a set (``\\{1, 2\\}``) from an ordered pair or interval (``(1, 2)``).
  In ``strict`` mode those are different answers; Math-Verify 0.9.0 calls them equal even in its
  strict mode.
- :func:`entries` splits a collection or matrix into its entries and its shape, so that two answers
  of one shape whose entries are all exact numbers are compared entry by entry (``\\frac13`` against
  ``1/3``, a fraction against a decimal), in microseconds and whichever matrix environment each uses.

>>> collection_kind("\\\\{1,2\\\\}"), collection_kind("\\\\left( 1, 2 \\\\right)"), collection_kind("1, 2")
('set', 'ordered', None)
>>> entries("\\\\begin{bmatrix} 1 & \\\\frac12 \\\\\\\\ 3 & 4 \\\\end{bmatrix}")
('matrix', 2, ['1', '\\\\frac12', '3', '4'])
>>> entries("[0, 1)")
('[)', 1, ['0', '1'])
"""

from __future__ import annotations

import re

MATRIX_ENVIRONMENTS = ("pmatrix", "bmatrix", "Bmatrix", "matrix", "smallmatrix")
"""Environments that write the same matrix (``vmatrix`` is a determinant, a number, so it is not here)."""

_MATRIX = re.compile(r"^[(\[]?\s*\\begin\{(" + "|".join(MATRIX_ENVIRONMENTS) + r")\}(.*)\\end\{\1\}\s*[)\]]?$",
                     re.DOTALL)
_BRACKETS = {"(": ")", "[": "]"}


def unwrap(answer: str) -> str:
    """``answer`` without ``\\left``/``\\right``, surrounding ``$`` and spaces.

    >>> unwrap("$\\\\left( 1, 2 \\\\right)$")
    '( 1, 2 )'
    """
    text = answer.strip().strip("$").strip()
    return re.sub(r"\\(?:left|right|bigl|bigr|Bigl|Bigr)(?![A-Za-z])\s*", "", text).strip()


def collection_kind(answer: str) -> str | None:
    """``"set"`` (``\\{...\\}``), ``"ordered"`` (a tuple or interval in brackets with a comma at the top
    level) or None (a single value, a plain list, anything else)."""
    text = unwrap(answer)
    if text.startswith("\\{") and text.endswith("\\}") and _balanced(text[2:-2]):
        return "set"
    if (len(text) > 2 and text[0] in "([" and text[-1] in ")]" and _balanced(text[1:-1])
            and len(split_top(text[1:-1], ",")) > 1):
        return "ordered"
    return None


def entries(answer: str) -> tuple[str, int, list[str]] | None:
    """``(kind, rows, cells)`` of a matrix or bracketed collection, or None for anything else.

    ``kind`` is ``"matrix"`` for any environment in :data:`MATRIX_ENVIRONMENTS` (with or without
    brackets around it), else the pair of brackets (``"()"``, ``"[)"``, ``"{}"`` for a set);
    ``rows`` is the number of rows (1 for a collection); ``cells`` are the entries' texts, row by row.
    """
    text = unwrap(answer)
    m = _MATRIX.match(text)
    if m is not None:
        rows = [r for r in split_top(m.group(2), "\\\\") if r.strip()]
        cells = [split_top(r, "&") for r in rows]
        if not rows or len({len(c) for c in cells}) != 1:
            return None
        return "matrix", len(rows), [c.strip() for row in cells for c in row]
    if text.startswith("\\{") and text.endswith("\\}") and _balanced(text[2:-2]):
        return "{}", 1, [c.strip() for c in split_top(text[2:-2], ",")]
    if len(text) > 2 and text[0] in "([" and text[-1] in ")]" and _balanced(text[1:-1]):
        parts = split_top(text[1:-1], ",")
        if len(parts) > 1:
            return text[0] + text[-1], 1, [p.strip() for p in parts]
    return None


def split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` where no brace or bracket is open.

    >>> split_top("\\\\frac{1}{2}, (3, 4), 5", ",")
    ['\\\\frac{1}{2}', ' (3, 4)', ' 5']
    """
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            i += len(separator)
            start = i
            continue
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
            i += 2  # an escaped brace is a set's delimiter, inside an entry
            continue
        depth += ch in "{([" and 1 or 0
        depth -= ch in "})]" and 1 or 0
        i += 1
    parts.append(text[start:])
    return parts


def _balanced(text: str) -> bool:
    """Whether braces are balanced in ``text`` and it never closes more than it opened (so ``(1), (2)``
    is not one tuple); round and square brackets may pair with each other, as intervals do."""
    depth = 0
    for ch in re.sub(r"\\[{}]", "", text):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0
