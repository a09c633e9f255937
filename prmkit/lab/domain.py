"""The ledger problem family: a start value and named transactions, with controllable difficulty.

A problem reads::

    Start at 12.
    A + 2
    B less 6
    C twice
    D again
    E set to 10
    What is the final value?

Transactions: ``+ k`` and ``- k`` add and subtract, ``less k`` subtracts (its trigger word invites
reading it as a plus), ``twice`` doubles, ``again`` repeats the previous (additive) transaction,
``set to k`` replaces the value. The held-out family :data:`OOD` adds ``thrice`` (triple), ``half``
(halve an even value) and ``undo`` (reverse the previous additive transaction), on longer chains. The
true running value always stays in ``0..max_value`` (0-99 by default: one token per number for a tiny
model); operands are ``1..max_operand``.

Every transaction has a canonical *effect* ``(symbol, operand)``, which is what a correct solution step
restates: ``less 6`` -> ``("-", 6)``, ``twice`` -> ``("*", 2)``, ``set to 10`` -> ``("set", 10)``.

>>> led = parse_problem("Start at 12.\\nA + 2\\nB less 6\\nC again\\nD twice\\nWhat is the final value?")
>>> led.values(), led.effect(2), led.answer
([14, 8, 2, 4], ('-', 6), 4)
>>> parse_problem(led.text()) == led
True
>>> p = make_problem(LedgerConfig(), seed=0, index=0)
>>> p.id, p.answer == str(parse_problem(p.problem).answer)
('ledger-eval-0-0', True)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import zlib
from dataclasses import dataclass

import numpy as np

from prmkit.schema import Problem

KINDS = ("+", "-", "less", "twice", "again", "set", "thrice", "half", "undo")
"""Every transaction kind: the first six make the main family, the last three are new in :data:`OOD`."""

TRIGGERS = ("less", "twice", "again", "thrice", "half", "undo")
"""Kinds whose wording invites a systematic misreading (see :mod:`prmkit.lab.generator`)."""

_ADDITIVE = ("+", "-")


@dataclass(frozen=True)
class Txn:
    """One transaction: its name (``A``, ``B``, ...), kind (one of :data:`KINDS`) and operand (or None)."""

    name: str
    kind: str
    k: int | None = None

    def text(self) -> str:
        """The transaction as the problem states it.

        >>> Txn("C", "less", 6).text(), Txn("F", "set", 10).text(), Txn("D", "twice").text()
        ('C less 6', 'F set to 10', 'D twice')
        """
        if self.kind == "set":
            return f"{self.name} set to {self.k}"
        return f"{self.name} {self.kind}" + (f" {self.k}" if self.k is not None else "")


def apply(value: float, symbol: str, k: int) -> int | float:
    """The result of an effect ``(symbol, k)`` on ``value`` (``/`` may give a non-integer).

    >>> apply(14, "-", 6), apply(8, "*", 2), apply(7, "/", 2), apply(3, "set", 10)
    (8, 16, 3.5, 10)
    """
    if symbol == "+":
        return value + k
    if symbol == "-":
        return value - k
    if symbol == "*":
        return value * k
    if symbol == "/":
        return value // k if value % k == 0 else value / k
    if symbol == "set":
        return k
    raise ValueError(f"unknown effect symbol {symbol!r}")


@dataclass(frozen=True)
class Ledger:
    """A problem in structured form: the start value and the transactions, in order."""

    start: int
    txns: tuple[Txn, ...]

    def effect(self, i: int) -> tuple[str, int]:
        """The canonical ``(symbol, operand)`` of transaction ``i``; ``again``/``undo`` look back."""
        t = self.txns[i]
        if t.kind in ("+", "-"):
            return t.kind, t.k
        if t.kind == "less":
            return "-", t.k
        if t.kind in ("twice", "thrice"):
            return "*", 2 if t.kind == "twice" else 3
        if t.kind == "half":
            return "/", 2
        if t.kind == "set":
            return "set", t.k
        if i == 0:
            raise ValueError(f"transaction {t.name} ({t.kind}) has no previous transaction")
        symbol, k = self.effect(i - 1)
        if symbol not in _ADDITIVE:
            raise ValueError(f"transaction {t.name} ({t.kind}) follows a non-additive transaction")
        return (symbol if t.kind == "again" else {"+": "-", "-": "+"}[symbol]), k

    def values(self) -> list[int]:
        """The true running value after every transaction."""
        out, v = [], self.start
        for i in range(len(self.txns)):
            v = apply(v, *self.effect(i))
            out.append(v)
        return out

    @property
    def answer(self) -> int:
        return self.values()[-1] if self.txns else self.start

    def index(self, name: str) -> int | None:
        """The position of the transaction called ``name``, or None."""
        return next((i for i, t in enumerate(self.txns) if t.name == name), None)

    def text(self) -> str:
        """The problem statement."""
        lines = [f"Start at {self.start}.", *(t.text() for t in self.txns), "What is the final value?"]
        return "\n".join(lines)


_START = re.compile(r"Start at (\d+)\.")
_TXN = re.compile(r"([A-Z]) (?:(\+|-|less) (\d+)|set to (\d+)|(twice|again|thrice|half|undo))")


def parse_problem(text: str) -> Ledger:
    """A ledger problem's text back to its :class:`Ledger`; ``ValueError`` if it is not one."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    start = _START.fullmatch(lines[0]) if lines else None
    if start is None or lines[-1] != "What is the final value?":
        raise ValueError(f"not a ledger problem: {text[:60]!r}")
    txns = []
    for line in lines[1:-1]:
        m = _TXN.fullmatch(line)
        if m is None:
            raise ValueError(f"not a ledger transaction: {line!r}")
        name, sym, k, set_k, word = m.groups()
        if sym is not None:
            txns.append(Txn(name, sym, int(k)))
        elif set_k is not None:
            txns.append(Txn(name, "set", int(set_k)))
        else:
            txns.append(Txn(name, word))
    return Ledger(int(start.group(1)), tuple(txns))


# --- the families ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LedgerConfig:
    """A problem family and its difficulty. Inert: checked on creation, no I/O."""

    family: str = "ledger"
    """Name of the family: problem ids start with it, and it is part of every problem's seed."""
    steps: tuple[int, int] = (6, 8)
    """Fewest and most transactions per problem (uniform); more steps, more chances to err."""
    max_operand: int = 9
    """Operands of ``+``, ``-``, ``less`` are drawn from ``1..max_operand``."""
    max_value: int = 99
    """The true running value stays in ``0..max_value`` (99: every number is one token)."""
    weights: tuple[tuple[str, float], ...] = (("+", 3.0), ("-", 2.0), ("less", 1.5), ("twice", 1.0),
                                               ("again", 1.2), ("set", 0.25))
    """Relative frequency of each transaction kind (kinds not listed never occur)."""

    def __post_init__(self):
        lo, hi = self.steps
        if not 1 <= lo <= hi <= 26:
            raise ValueError(f"steps must satisfy 1 <= min <= max <= 26 (one letter each), got {self.steps}")
        if not 1 <= self.max_operand < self.max_value // 2:
            raise ValueError(f"max_operand must be in 1..max_value/2, got {self.max_operand}")
        unknown = [k for k, _ in self.weights if k not in KINDS]
        if unknown or not any(w > 0 for k, w in self.weights if k in _ADDITIVE):
            raise ValueError(f"weights need known kinds ({', '.join(KINDS)}) and a positive weight on + or -")


OOD = LedgerConfig(family="ledger-ood", steps=(9, 12),
                   weights=(("+", 3.0), ("-", 2.0), ("less", 1.0), ("twice", 0.7), ("again", 0.8),
                            ("set", 0.2), ("thrice", 0.8), ("half", 1.0), ("undo", 0.6)))
"""The held-out family: three new operation types and longer chains (9-12 transactions)."""


def _feasible(kind: str, v: int, prev: Ledger | None, cfg: LedgerConfig) -> bool:
    """Whether ``kind`` may come next at value ``v`` (keeps values in range, misreadings distinct)."""
    if kind in ("+", "-", "less"):
        return v + 1 <= cfg.max_value if kind == "+" else v >= 1
    if kind in ("twice", "thrice"):
        return 3 <= v and v * (2 if kind == "twice" else 3) <= cfg.max_value
    if kind == "half":
        return v >= 6 and v % 2 == 0
    if kind == "set":
        return prev is not None
    if prev is None:  # again / undo need an additive transaction before them
        return False
    symbol, k = prev.effect(len(prev.txns) - 1)
    if symbol not in _ADDITIVE:
        return False
    new = apply(v, symbol if kind == "again" else {"+": "-", "-": "+"}[symbol], k)
    return 0 <= new <= cfg.max_value


def _operand(kind: str, v: int, rng: np.random.Generator, cfg: LedgerConfig) -> int | None:
    if kind == "+":
        return int(rng.integers(1, min(cfg.max_operand, cfg.max_value - v) + 1))
    if kind in ("-", "less"):
        return int(rng.integers(1, min(cfg.max_operand, v) + 1))
    if kind == "set":
        return int(rng.integers(cfg.max_operand, cfg.max_value - cfg.max_operand + 1))
    return None


def _code(text: str) -> int:
    return zlib.crc32(text.encode())


def config_hash(config) -> str:
    """A stable 16-hex-digit hash of a config dataclass (field names and values): a cache key.

    >>> config_hash(LedgerConfig()) == config_hash(LedgerConfig()) != config_hash(OOD)
    True
    """
    text = json.dumps(dataclasses.asdict(config), sort_keys=True, default=str)
    return hashlib.sha256(f"{type(config).__name__}:{text}".encode()).hexdigest()[:16]


def make_ledger(cfg: LedgerConfig, rng: np.random.Generator) -> Ledger:
    """One random ledger of family ``cfg``."""
    kinds = [k for k, w in cfg.weights if w > 0]
    weights = np.array([w for _, w in cfg.weights if w > 0], dtype=float)
    n = int(rng.integers(cfg.steps[0], cfg.steps[1] + 1))
    v = int(rng.integers(cfg.max_operand + 1, cfg.max_value - cfg.max_operand))
    led = Ledger(v, ())
    for i in range(n):
        ok = np.array([_feasible(k, v, led if i else None, cfg) for k in kinds])
        p = weights * ok
        kind = kinds[int(rng.choice(len(kinds), p=p / p.sum()))]
        led = Ledger(led.start, led.txns + (Txn(chr(ord("A") + i), kind, _operand(kind, v, rng, cfg)),))
        v = led.values()[-1]
    return led


def make_problem(cfg: LedgerConfig, seed: int, index: int, split: str = "eval") -> Problem:
    """Problem ``index`` of ``split`` in family ``cfg`` for ``seed``: the same arguments, the same problem."""
    rng = np.random.default_rng([seed, _code(cfg.family), _code(split), index])
    led = make_ledger(cfg, rng)
    return Problem(led.text(), answer=str(led.answer), id=f"{cfg.family}-{split}-{seed}-{index}",
                   subject=cfg.family, level=len(led.txns), source="prmkit.lab")


def make_problems(cfg: LedgerConfig, n: int, seed: int, split: str = "eval") -> list[Problem]:
    """The first ``n`` problems of ``split``; a prefix of a longer list with the same arguments.

    >>> [p.id for p in make_problems(OOD, 2, seed=3, split="ood")]
    ['ledger-ood-ood-3-0', 'ledger-ood-ood-3-1']
    """
    return [make_problem(cfg, seed, i, split) for i in range(n)]


__all__ = ["KINDS", "OOD", "TRIGGERS", "Ledger", "LedgerConfig", "Txn", "apply", "config_hash", "make_ledger", "make_problem",
           "make_problems", "parse_problem"]
