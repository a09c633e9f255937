"""One variable against one value (``x \\geq 5``, ``5 > x``, ``-x < -1``, ``x \\neq 3``), read without sympy.

:func:`read_relation` turns such an answer into a :class:`Relation` with the variable on the left and its sign
positive (``5 > x`` is ``x < 5``; ``-x >= -1`` is ``x <= 1``), the value read exactly by
:func:`prmkit.grade.exact.read_value`. Two relations of the same variable are the same answer exactly when
their relation signs and values are (:func:`decide_relations`); anything else (a chain ``-2 < x < 7``, an
expression on both sides, ``e`` or ``i``, which are constants) is None and the symbolic step decides as before.

>>> read_relation("5 \\\\geq x") == read_relation("x <= 5"), read_relation("-x > -1") == read_relation("x \\\\lt 1")
(True, True)
>>> decide_relations(read_relation("x > -1"), read_relation("x < 1")), read_relation("-2 < x < 7")
(False, None)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from prmkit.grade.exact import Exact, decide, read_value

_SIGNS = {"<": "<", ">": ">", "<=": "<=", ">=": ">=", "!=": "!=", "\\lt": "<", "\\gt": ">",
          "\\le": "<=", "\\leq": "<=", "\\leqslant": "<=", "\\ge": ">=", "\\geq": ">=", "\\geqslant": ">=",
          "\\ne": "!=", "\\neq": "!=", "≤": "<=", "≥": ">=", "≠": "!="}
_FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "!=": "!="}
_SIGN = re.compile(r"(<=|>=|!=|\\(?:leqslant|geqslant|leq|geq|neq|le|ge|ne|lt|gt)(?![A-Za-z])|<|>|≤|≥|≠)")
_VARIABLE = re.compile(r"^(-?)\s*([A-Za-z])$")
_CONSTANTS = {"e", "i"}
"""Letters that name numbers, not unknowns: ``e < 3`` is not an inequality in e."""
_SPACING = re.compile(r"\\[,;:! ]|~|\\left|\\right")


@dataclass(frozen=True)
class Relation:
    """``variable sign value``: the variable on the left with a positive sign; ``sign`` one of
    ``< > <= >= !=``."""

    variable: str
    sign: str
    value: Exact


def read_relation(text: str) -> Relation | None:
    """The relation ``text`` states, or None where it is not one variable against one plain value."""
    parts = _SIGN.split(_SPACING.sub(" ", text).strip())
    if len(parts) != 3 or "=" in parts[0] + parts[2]:  # "x => 5" (implies) and "x = 5" are not read
        return None
    left, sign, right = parts[0].strip(), _SIGNS[parts[1]], parts[2].strip()
    variable, value = _VARIABLE.match(left), right
    if variable is None:
        variable, value, sign = _VARIABLE.match(right), left, _FLIPPED[sign]
    if variable is None or variable.group(2) in _CONSTANTS:
        return None
    read = read_value(value)
    if read is None or not math.isfinite(float(read)):
        return None
    if variable.group(1):  # -x > -1 is x < 1
        read, sign = Exact(tuple((key, -c) for key, c in read.terms), read.rounded), _FLIPPED[sign]
    return Relation(variable.group(2), sign, read)


def decide_relations(a: Relation | None, b: Relation | None) -> bool | None:
    """Whether two relations are the same answer; None where either was not read, they bound different
    variables (the grader's variable check decides those), or their values are close enough that the
    symbolic step's precision should decide."""
    if a is None or b is None or a.variable != b.variable:
        return None
    same_value = decide(a.value, b.value)
    if same_value is None:
        return None
    return same_value and a.sign == b.sign
