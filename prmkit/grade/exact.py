"""Exact values of the answers MATH's problems mostly have, read without sympy: numbers, fractions, roots, pi.

:func:`read_value` reads a plain mathematical answer (integers, decimals, ``\\frac``, ``\\sqrt``, ``\\pi``,
powers with integer exponents, ``+ - \\cdot \\times /``, brackets) into an :class:`Exact`: a sum of
terms ``c * sqrt(r) * pi^k`` with ``c`` rational, ``r`` a square-free integer and ``k`` an integer. Those
terms are linearly independent over the rationals (square roots of distinct square-free integers are,
and pi is transcendental), so two values are equal exactly when their terms are: equality is a
comparison of canonical forms, in microseconds, with nothing that can hang (powers, digits and radicands
are bounded). Anything else (a letter, a unit, a percent sign, a root of a sum, a sum in a denominator, a
huge power) is None, and the grader's symbolic step decides as before; so is what Math-Verify reads
another way than the arithmetic would: a mixed number (``2\\frac12`` is 5/2), a bracket after a number
(``2(3)``, which it reads as a sum), a product after a division (``1/2\\pi`` is 1/(2 pi) to it).

>>> read_value("2\\\\sqrt{3}") == read_value("\\\\sqrt{12}"), read_value("\\\\frac{\\\\sqrt2}{2}") == read_value("\\\\frac{1}{\\\\sqrt{2}}")
(True, True)
>>> str(read_value("\\\\dfrac{3\\\\pi}{4} - \\\\frac{\\\\pi}{4}")), read_value("x + 1"), read_value("\\\\sqrt{2 + \\\\sqrt{3}}")
('1/2*pi', None, None)
>>> decide(read_value("0.333"), read_value("\\\\frac{1}{3}")), decide(read_value("3\\\\sqrt{2}"), read_value("\\\\sqrt{18}"))
(None, True)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

MAX_EXPONENT = 64
"""The largest integer power read: ``2^{10^{10}}`` is left to the symbolic step and its deadline."""
MAX_DIGITS = 400
"""The largest numerator or denominator kept, in digits; a value past it is not read."""
MAX_TERMS = 32
"""The most terms a value may have (a sum of roots and powers of pi)."""
MAX_RADICAND = 10**8
"""Square roots are simplified by trial division, so radicands past this are not read."""
CLOSE = 1e-6
"""Two different values this close (relatively) are left to the symbolic step, which compares numbers at
a finite precision; different values farther apart are different answers."""
ROUNDED = 1e-3
"""As :func:`prmkit.grade._numbers_differ`: a value written with a decimal point may be a rounding of one
this close, so such pairs go to the symbolic step too."""
CLOSE_WINDOW = max(CLOSE, ROUNDED)
"""Two values farther apart than this (relatively) are always decided by :func:`decide`."""

_TOKEN = re.compile(r"\s+|\\[,;:! ]|~|([0-9]+(?:\.[0-9]*)?|\.[0-9]+)|(\\[A-Za-z]+)|([-+*/^(){}\[\]])")
_FRACS = {"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"}
_IMPLICIT = {"\\sqrt", "\\pi"}
"""What may follow a factor as an implicit product. Not a bracket (Math-Verify reads ``2(3)`` as a sum) and
not ``\\frac`` after a number (``2\\frac12``, a mixed number)."""
_TIMES = {"\\cdot", "\\times", "*"}
_IGNORED = {"\\left", "\\right", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr"}
_CLOSING = {"(": ")", "{": "}", "[": "]"}


class Unreadable(ValueError):
    """The text is not a value :func:`read_value` reads (it returns None for it)."""


@dataclass(frozen=True)
class Exact:
    """``sum(c * sqrt(r) * pi**k)`` over ``terms``, a sorted tuple of ``((r, k), c)``, no zero ``c``;
    ``rounded``: some number in the text had a decimal point (it may stand for a rounded value)."""

    terms: tuple[tuple[tuple[int, int], Fraction], ...]
    rounded: bool = False

    def __eq__(self, other: object) -> bool:  # the value only: 0.5 equals 1/2
        return isinstance(other, Exact) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(self.terms)

    def __float__(self) -> float:
        try:
            return math.fsum(float(c) * math.sqrt(r) * math.pi**k for (r, k), c in self.terms)
        except OverflowError:
            return math.inf

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for (r, k), c in self.terms:
            factors = [str(c)] + ([f"sqrt({r})"] if r != 1 else []) + ([f"pi^{k}" if k != 1 else "pi"] if k else [])
            parts.append("*".join(factors))
        return " + ".join(parts)

    @property
    def magnitude(self) -> float:
        """The sum of the terms' sizes, which bounds how far ``float()`` may be from the value."""
        try:
            return math.fsum(abs(float(c)) * math.sqrt(r) * math.pi**k for (r, k), c in self.terms)
        except OverflowError:
            return math.inf

    @property
    def float_error(self) -> float:
        """A bound on how far ``float()`` may be from the value: the float is a sum of rounded terms, and large
        terms that cancel leave an error of their size, not the sum's."""
        return 1e-12 * self.magnitude

    @property
    def rational(self) -> Fraction | None:
        """The value as a fraction where it is one."""
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and self.terms[0][0] == (1, 0):
            return self.terms[0][1]
        return None


def read_value(text: str) -> Exact | None:
    """The exact value ``text`` writes, or None where it is not a plain number of the kinds above.

    >>> read_value("-\\\\frac{1}{2}") == read_value("-0.5"), read_value("\\\\frac12\\\\pi^2").terms
    (True, (((1, 2), Fraction(1, 2)),))
    """
    if len(text) > 300:
        return None
    try:
        tokens = _tokens(text.strip())
        reader = _Reader(tokens)
        value = reader.sum()
        if reader.at < len(tokens):
            return None
        return Exact(tuple(sorted(value.terms.items())), reader.rounded)
    except (Unreadable, ZeroDivisionError, OverflowError):
        return None


def decide(a: Exact | None, b: Exact | None) -> bool | None:
    """Whether two read values are equal; None when either was not read or the symbolic step should decide
    (different values close enough that a rounding or a finite precision may call them equal)."""
    if a is None or b is None:
        return None
    if a == b:
        return True
    x, y = float(a), float(b)
    if not (math.isfinite(x) and math.isfinite(y)):
        return None
    scale = max(1.0, abs(x), abs(y))
    error = a.float_error + b.float_error
    if abs(x - y) <= CLOSE * scale + error or ((a.rounded or b.rounded) and abs(x - y) <= ROUNDED * scale + error):
        return None
    return False


# --- the reader --------------------------------------------------------------------------------------

def _tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            raise Unreadable(text[at:at + 10])
        at = m.end()
        token = m.group(1) or m.group(2) or m.group(3)
        if token and token not in _IGNORED:
            out.append(token)
    return out


class _Reader:
    """Recursive descent over the tokens: sum := term (+|- term)*; term := factor ((* | / | implicit) factor)*;
    factor := (+|-) factor | power; power := atom (^ group)?"""

    def __init__(self, tokens: list[str]):
        self.tokens, self.at, self.rounded = tokens, 0, False

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise Unreadable(f"expected {expected or 'more'}, got {token}")
        self.at += 1
        return token

    def sum(self) -> _Value:
        value = self.term()
        while self.peek() in ("+", "-"):
            sign = self.take()
            right = self.term()
            value = value.add(right if sign == "+" else right.negate())
        return value

    def term(self) -> _Value:
        value = self.factor()
        while True:
            token = self.peek()
            if token in _TIMES:
                self.take()
                value = value.times(self.factor())
            elif token in ("/", "\\div"):
                self.take()
                value = value.times(self.factor().inverse())
                if self.peek() in _IMPLICIT:  # 1/2\pi: Math-Verify reads 1/(2 pi), left to right reads pi/2
                    raise Unreadable("a product after a division")
            elif token in _IMPLICIT:
                value = value.times(self.power())  # 2\sqrt{3}, 3\pi, \frac{1}{2}\sqrt{3}: a product
            elif token in _FRACS and self.tokens[self.at - 1][0].isdigit():
                raise Unreadable("a mixed number")  # 2\frac12 is 5/2 in MATH (and Math-Verify), 1 as a product
            else:
                return value

    def factor(self) -> _Value:
        if self.peek() in ("+", "-"):
            sign = self.take()
            value = self.factor()
            return value if sign == "+" else value.negate()
        return self.power()

    def power(self) -> _Value:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.group().rational
        if exponent is None or exponent.denominator != 1 or abs(exponent) > MAX_EXPONENT:
            raise Unreadable("exponent")
        return base.power(int(exponent))

    def group(self) -> _Value:
        """A LaTeX argument: ``{...}``, one digit (``\\frac12``, ``\\sqrt2``) or ``\\pi``; anything else
        (``\\sqrt(4)``, which LaTeX does not write) is not read."""
        token = self.peek()
        if token == "{":
            return self.bracketed()
        if token == "\\pi":
            return self.atom()
        if token is None or not token[0].isdigit() or "." in token:
            raise Unreadable(f"argument {token}")
        if len(token) > 1:  # \frac12 is \frac{1}{2}: an argument without braces is one digit
            self.tokens[self.at:self.at + 1] = [token[0], token[1:]]
        return self.number(self.take())

    def bracketed(self) -> _Value:
        opening = self.take()
        value = self.sum()
        self.take(_CLOSING[opening])
        return value

    def atom(self) -> _Value:
        token = self.peek()
        if token is None:
            raise Unreadable("end")
        if token in _CLOSING:
            return self.bracketed()
        if token[0].isdigit() or token[0] == ".":
            self.take()
            return self.number(token)
        self.take()
        if token in _FRACS:
            numerator = self.group()
            return numerator.times(self.group().inverse())
        if token == "\\sqrt":
            if self.peek() == "[":
                self.take()
                index = self.sum().rational
                self.take("]")
                if index != 2:
                    raise Unreadable("root index")
            return self.group().sqrt()
        if token == "\\pi":
            return _Value({(1, 1): Fraction(1)})
        raise Unreadable(token)

    def number(self, token: str) -> _Value:
        if "." in token:
            self.rounded = True
        return _Value.of(Fraction(token))


class _Value:
    """A sum of ``c * sqrt(r) * pi^k`` terms, ``{(r, k): c}``, under arithmetic; raises :class:`Unreadable`
    for what leaves that form (a root of a sum, a sum in a denominator) or grows past the limits."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict):
        self.terms = {key: c for key, c in terms.items() if c}
        if len(self.terms) > MAX_TERMS:
            raise Unreadable("too many terms")
        for c in self.terms.values():
            if c.numerator.bit_length() > MAX_DIGITS * 3.33 or c.denominator.bit_length() > MAX_DIGITS * 3.33:
                raise Unreadable("too large")

    @classmethod
    def of(cls, c: Fraction) -> _Value:
        return cls({(1, 0): c})

    @property
    def rational(self) -> Fraction | None:
        return Exact(tuple(sorted(self.terms.items()))).rational

    def add(self, other: _Value) -> _Value:
        out = dict(self.terms)
        for key, c in other.terms.items():
            out[key] = out.get(key, 0) + c
        return _Value(out)

    def negate(self) -> _Value:
        return _Value({key: -c for key, c in self.terms.items()})

    def times(self, other: _Value) -> _Value:
        out: dict = {}
        for (r1, k1), c1 in self.terms.items():
            for (r2, k2), c2 in other.terms.items():
                g = math.gcd(r1, r2)  # sqrt(r1 r2) = g sqrt(r1/g * r2/g), square-free again
                key = ((r1 // g) * (r2 // g), k1 + k2)
                out[key] = out.get(key, 0) + c1 * c2 * g
        return _Value(out)

    def inverse(self) -> _Value:
        if len(self.terms) != 1:
            raise Unreadable("a sum in a denominator" if self.terms else "division by zero")
        (r, k), c = next(iter(self.terms.items()))
        return _Value({(r, -k): 1 / (c * r)})  # 1 / (c sqrt(r) pi^k) = sqrt(r) / (c r pi^k)

    def power(self, n: int) -> _Value:
        result, base = _Value.of(Fraction(1)), self if n >= 0 else self.inverse()
        for _ in range(abs(n)):
            result = result.times(base)
        return result

    def sqrt(self) -> _Value:
        if not self.terms:
            return self
        (r, k), c = next(iter(self.terms.items()))
        if len(self.terms) != 1 or r != 1 or k % 2 or c < 0:
            raise Unreadable("a root this reader does not simplify")
        outside_num, radicand_num = _square_part(c.numerator * c.denominator)
        return _Value({(radicand_num, k // 2): Fraction(outside_num, c.denominator)})


def _square_part(n: int) -> tuple[int, int]:
    """``(s, r)`` with ``n = s^2 r`` and ``r`` square-free, by trial division.

    >>> _square_part(72), _square_part(1), _square_part(30)
    ((6, 2), (1, 1), (1, 30))
    """
    if n > MAX_RADICAND:
        raise Unreadable("radicand too large")
    outside, radicand, rest, p = 1, 1, n, 2
    while p * p <= rest:
        e = 0
        while rest % p == 0:
            rest, e = rest // p, e + 1
        outside, radicand = outside * p ** (e // 2), radicand * p ** (e % 2)
        p += 1
    return outside, radicand * rest
