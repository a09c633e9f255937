"""What kind of quantity an answer states: its unit of measure, and whether it is money or a percentage.

MATH's normalisation drops units and the ``\\$`` and ``\\%`` marks, so ``5\\text{ cm}`` and
``5\\text{ m}``, or ``\\$25`` and ``25\\%``, share a key: a wrong answer graded right. This module reads
those marks *before* normalisation, so that the grader can refuse such pairs (``docs/grading.md``
states the policy):

- a side with no unit or mark says nothing (MATH's gold answers usually omit the unit);
- two known units of different dimensions, or a currency against a percentage, are different answers
  in every mode;
- two known units of one dimension that differ are different in ``strict``; ``lenient`` converts
  between them where the factor is exact (``12`` inches and ``1`` foot are equal).

>>> unit_of("5\\\\text{ cm}"), unit_of("5 \\\\mbox{km}^2"), unit_of("x^2"), unit_of("5 apples")
(Unit(name='cm', dimension='length', factor=Fraction(1, 100), power=1), Unit(name='km', dimension='length', factor=Fraction(1000, 1), power=2), None, None)
>>> mark_of("\\\\$25"), mark_of("25\\\\%"), mark_of("$25$"), mark_of("3 dollars")
('currency', 'percent', None, 'currency')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

_LENGTH = {"mm": "0.001", "cm": "0.01", "m": "1", "km": "1000", "in": "0.0254", "ft": "0.3048",
           "yd": "0.9144", "mi": "1609.344"}
_MASS = {"mg": "0.001", "g": "1", "kg": "1000", "lb": "453.59237", "oz": "28.349523125", "t": "1000000"}
_TIME = {"s": "1", "min": "60", "h": "3600", "day": "86400", "week": "604800", "month": None, "year": None}
_SPELLINGS = {
    "mm": ("millimeter", "millimetre"), "cm": ("centimeter", "centimetre"), "m": ("meter", "metre"),
    "km": ("kilometer", "kilometre"), "in": ("inch", "inches"), "ft": ("foot", "feet"),
    "yd": ("yard",), "mi": ("mile",), "mg": ("milligram",), "g": ("gram",), "kg": ("kilogram", "kgs"),
    "lb": ("pound", "lbs"), "oz": ("ounce",), "t": ("tonne",), "s": ("sec", "second", "secs"),
    "min": ("minute", "mins"), "h": ("hr", "hour", "hrs"), "day": (), "week": (), "month": (), "year": ("yr",),
}
_ONE_LETTER = {"m", "g", "s", "h", "t"}  # a bare "5 m" may be a unit; "5m" (no space) is a product


@dataclass(frozen=True)
class Unit:
    """A unit of measure: ``factor`` converts one ``name`` to the dimension's base unit (None: no exact
    factor, as for months), ``power`` is 2 for ``cm^2``."""

    name: str
    dimension: str
    factor: Fraction | None
    power: int = 1


def _table() -> dict[str, tuple[str, str, Fraction | None]]:
    table = {}
    for dimension, units in (("length", _LENGTH), ("mass", _MASS), ("time", _TIME)):
        for name, factor in units.items():
            value = None if factor is None else Fraction(factor)
            for word in (name, *_SPELLINGS[name]):
                table[word] = (name, dimension, value)
                if len(word) > 2 and not word.endswith("s"):
                    table[word + "s"] = (name, dimension, value)
    return table


UNITS = _table()
"""Every spelling of a known unit (plurals included), to ``(name, dimension, factor)``."""

_WRAPPED = re.compile(r"\\(?:text|mbox|mathrm|textnormal|textrm|operatorname)\s*\{\s*([A-Za-z. ]+?)\s*\}"
                      r"\s*(?:\^\s*\{?\s*([23])\s*\}?)?\s*\.?\s*$")
_BARE = re.compile(r"(?:\s|\\[,;: ]|~)+([A-Za-z]+)\.?\s*(?:\^\s*\{?\s*([23])\s*\}?)?\s*\.?\s*$")
_CURRENCY = re.compile(r"\\\$|\$\s*\d[\d,.]*\s*$|^\s*\$\s*\d[\d,.]*(?!.*\$)|\\(?:euro|pounds)\b|[€£¥]"
                       r"|\b(?:dollars?|cents?|euros?|USD)\b")
_PERCENT = re.compile(r"%|\bpercent\b")


def unit_of(answer: str) -> Unit | None:
    """The known unit ``answer`` ends with, or None (no unit, or a word that is no known unit)."""
    m = _WRAPPED.search(answer) or _BARE.search(answer)
    if m is None:
        return None
    word = m.group(1).strip().rstrip(".")
    if word in _ONE_LETTER and m.re is _BARE and not answer[:m.start()].strip():
        return None
    if word not in UNITS or (m.re is _BARE and len(word) == 1 and word not in _ONE_LETTER):
        return None
    name, dimension, factor = UNITS[word]
    return Unit(name, dimension, factor, int(m.group(2) or 1))


def mark_of(answer: str) -> str | None:
    """``"currency"``, ``"percent"`` or None: the kind of amount the answer's marks say it is."""
    if _PERCENT.search(answer):
        return "percent"
    if _CURRENCY.search(answer):
        return "currency"
    return None


def compare_units(given: str, gold: str, mode: str, values: tuple[Fraction | None, Fraction | None]
                  ) -> tuple[bool, str] | None:
    """``(equal, why)`` when units or marks decide the pair, else None (the numbers decide).

    ``values`` are the two sides' exact numbers (None where a side is not one); only ``lenient``
    converts, and only between exact numbers in units with exact factors.

    >>> compare_units("5\\\\text{ cm}", "5\\\\text{ m}", "strict", (5, 5)), compare_units("5\\\\text{ cm}", "5", "strict", (5, 5))
    ((False, 'cm against m'), None)
    >>> compare_units("\\\\$25", "25\\\\%", "lenient", (25, 25))
    (False, 'currency against percent')
    >>> compare_units("12\\\\text{ in}", "1\\\\text{ ft}", "lenient", (12, 1))
    (True, '12 in = 1 ft')
    """
    marks = mark_of(given), mark_of(gold)
    if None not in marks and marks[0] != marks[1]:
        return False, f"{marks[0]} against {marks[1]}"
    a, b = unit_of(given), unit_of(gold)
    if a is None or b is None or (a.name, a.power) == (b.name, b.power):
        return None
    why = f"{_show(a)} against {_show(b)}"
    if mode == "strict" or a.dimension != b.dimension or a.power != b.power or None in values:
        return False, why
    x, y = in_base_units(Fraction(values[0]), given), in_base_units(Fraction(values[1]), gold)
    if x is None or y is None:
        return False, why + " (no exact conversion)"
    if x == y:
        return True, f"{values[0]} {_show(a)} = {values[1]} {_show(b)}"
    return False, why + " (converted, different)"


def in_base_units(value: Fraction, answer: str) -> Fraction | None:
    """``value`` expressed in its dimension's base unit, by the unit ``answer`` ends with; None when the
    unit has no exact factor or there is no unit.

    >>> in_base_units(Fraction(12), "12 \\\\text{inches}") == in_base_units(Fraction(1), "1\\\\text{ foot}")
    True
    """
    unit = unit_of(answer)
    if unit is None or unit.factor is None:
        return None
    return value * unit.factor ** unit.power


def _show(unit: Unit) -> str:
    return unit.name if unit.power == 1 else f"{unit.name}^{unit.power}"
