"""Answer extraction and grading: is a given final answer equal to the gold one?

The public surface:

- :func:`extract_answer` finds the final answer in a solution (``# Answer``, ``\\boxed{}``, ``####``).
- :func:`normalize` is a cheap canonical string (MATH normalisation, exact numbers as ``p/q``): a
  grouping key for majority voting. Equal keys imply equal answers (but for the units and the money
  or percent marks that MATH's normalisation drops, which :func:`grade` checks), not the converse.
- :func:`grade` returns a :class:`GradeResult` whose ``verdict`` is one of
  :data:`prmkit.schema.GRADES` and whose ``reason`` says why. :func:`equivalent` is its boolean form.
- :func:`grade_many` grades a list of pairs, the symbolic step in parallel worker processes.

How a pair is graded (``docs/grading.md`` states the policy and the measurements behind it):

1. Both sides go through :func:`extract_answer` (a side without a marker is taken whole; a side
   with no answer, or a box cut off, is ``incorrect`` with reason ``no-answer``).
2. Fast path, pure strings, in this process: different units or a currency against a percentage
   (:mod:`prmkit.grade.units`), a set against a tuple in ``strict`` (:mod:`prmkit.grade.structure`),
   words, names and choice letters as text (:mod:`prmkit.grade.words`), an equation's variable,
   equal :func:`normalize` keys, two exact numbers that differ, collections and matrices of exact
   numbers entry by entry. Most pairs stop here.
3. Otherwise Math-Verify parses and compares them in a worker process under a hard deadline
   (``strict`` or ``lenient`` mode). A timeout is ``unparseable`` with reason ``"timeout"``, never
   ``incorrect``; an error in the grader raises :class:`GradeError`, never a verdict.

>>> grade("\\\\boxed{\\\\frac{1}{2}}", "0.5").verdict
'correct'
>>> r = grade("# Answer\\n\\n7", "\\\\frac{14}{2}")
>>> r.verdict, r.reason
('correct', 'equal-normalized')
>>> grade("3", "4").reason
'different-number'
>>> grade("", "4").reason, grade("", "4").verdict
('no-answer', 'incorrect')
>>> grade("5\\\\text{ cm}", "5\\\\text{ m}").reason
'different-unit'
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from prmkit.grade.exact import CLOSE_WINDOW, Exact, decide, read_value
from prmkit.grade.extract import count_boxes, extract_answer, unwrap_math
from prmkit.grade.normalize import canonical_latex, exact_number, is_decimal, normalize, strip_string
from prmkit.grade.relation import decide_relations, read_relation
from prmkit.grade.structure import collection_kind, entries
from prmkit.grade.symbolic import (
    DEFAULT_TIMEOUT,
    GradeError,
    GradeTimeout,
    InProcess,
    SymbolicPool,
    default_pool,
)
from prmkit.grade.units import compare_units
from prmkit.grade.words import equation_variable, loose_text, text_answer
from prmkit.schema import GRADES

__all__ = [
    "CLOSE_WINDOW",
    "GRADERS",
    "MODES",
    "REASONS",
    "Entries",
    "GradeError",
    "GradeResult",
    "GradeTimeout",
    "InProcess",
    "SymbolicPool",
    "answer_value",
    "decide_values",
    "equivalent",
    "extract_answer",
    "grade",
    "grade_many",
    "grouping_value",
    "normalize",
    "reference_grade",
    "scalar_value",
    "solution_answer",
]

MODES = ("strict", "lenient")
"""``strict``: variables, order and type matter. ``lenient``: also positional variables, sets ~ tuples,
relations ~ intervals, case and list order of plain comma lists ignored."""

REASONS = {
    "equal-normalized": "correct", "equal-symbolic": "correct", "equal-unordered": "correct",
    "equal-entries": "correct", "equal-converted": "correct", "equal-text": "correct", "equal-value": "correct",
    "equal-relation": "correct", "different-relation": "incorrect",
    "different-number": "incorrect", "different-value": "incorrect", "different-text": "incorrect", "different-variable": "incorrect", "different-symbolic": "incorrect", "different-entries": "incorrect",
    "different-unit": "incorrect", "different-collection": "incorrect", "no-answer": "incorrect",
    "given-unparsed": "unparseable", "timeout": "unparseable", "memory": "unparseable",
}
"""Every reason :func:`grade` gives, with the verdict it goes with. A solution without an answer is
``incorrect`` (the paper counts it wrong); ``unparseable`` means the *grader* could not decide, and
is never a training label (``docs/grading.md``)."""

GRADERS = ("prmkit", "math-verify", "prm800k")
"""Graders :func:`reference_grade` (and ``prmkit grade --audit``) can run."""

_DELIMITERS = re.compile(r"\$|\\\(|\\\[|\\boxed|\\fbox")
_MATHRM = re.compile(r"\\mathrm\{([A-Za-z]+)\}")
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\{[A-Za-z*]+\}")


@dataclass(frozen=True)
class GradeResult:
    """The outcome of grading one pair.

    ``given``/``gold`` are the extracted answers, ``given_key``/``gold_key`` their :func:`normalize`
    keys, ``detail`` what the symbolic step parsed (or the error text behind ``given-unparsed``).
    """

    verdict: str
    reason: str
    given: str | None = None
    gold: str | None = None
    given_key: str = ""
    gold_key: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in GRADES or REASONS.get(self.reason) != self.verdict:
            raise ValueError(f"inconsistent grade {self.verdict!r} with reason {self.reason!r}")

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"

    def to_dict(self) -> dict:
        return asdict(self)


def grade(given: str | None, gold: str, mode: str = "strict", *, timeout: float | None = None,
          pool: SymbolicPool | None = None, on_timeout: str = "unparseable") -> GradeResult:
    """Grade the answer in ``given`` (a solution or a bare answer) against ``gold``.

    The roles differ: Math-Verify treats gold as the reference (``x \\in [-2,7]`` as gold accepts an
    interval, ...), while the string fast path is symmetric (``x = 2`` and ``2`` share a key).

    ``timeout`` bounds the symbolic step in seconds (default 5); ``on_timeout="raise"`` raises
    :class:`GradeTimeout` instead of returning an ``unparseable``/``timeout`` result. Raises
    :class:`GradeError` when the grader itself fails, ``ValueError`` on an empty gold or unknown mode.

    >>> grade("x = 2", "2").verdict, grade("2", "x = 2").verdict
    ('correct', 'correct')
    >>> grade("(2, 1)", "(1, 2)").verdict, grade("(2, 1)", "(1, 2)", mode="lenient").verdict
    ('incorrect', 'incorrect')
    """
    prepared = _prepare(given, gold, mode)
    if isinstance(prepared, GradeResult):
        return prepared
    reply = (pool or default_pool()).run(prepared.job, timeout)
    return _finish(prepared, reply, on_timeout)


def solution_answer(solution) -> str | None:
    """The answer a solution record gives: its ``answer`` field, else the one its steps mark (``# Answer``, a
    box), else None (graded ``no-answer``), as ``prmkit generate`` reads a sample.

    >>> from prmkit.schema import Solution
    >>> solution_answer(Solution.from_steps("q", ["1 + 1 = 2", "# Answer\\n\\n2"])), solution_answer(Solution.from_steps("q", ["so 2"]))
    ('2', None)
    """
    return solution.answer or extract_answer("\n".join(solution.texts))


def equivalent(a: str, b: str, mode: str = "strict", **kwargs) -> bool:
    """Whether ``b`` grades correct against ``a`` (``a`` in the role of gold). For majority voting:
    group answers by :func:`normalize` first, then merge groups whose keys are ``equivalent``.

    >>> equivalent("\\\\frac{1}{2}", "0.5"), equivalent("\\\\sqrt{4}", "2"), equivalent("3", "4")
    (True, True, False)
    """
    return grade(b, a, mode, **kwargs).correct


def grade_many(pairs: Iterable[tuple[str | None, str]], mode: str = "strict", *, workers: int | None = None,
               timeout: float | None = None, on_timeout: str = "unparseable", errors: str = "raise",
               pool: SymbolicPool | InProcess | None = None) -> list:
    """Grade ``(given, gold)`` pairs; the symbolic step runs on ``workers`` processes in parallel.

    With ``errors="raise"`` the first :class:`GradeError` is raised (its message names the pair's
    index); with ``errors="keep"`` the list holds the :class:`GradeError` at that position instead
    of a :class:`GradeResult`, so a batch can set bad pairs aside without treating them as graded.

    >>> [r.verdict for r in grade_many([("1", "1"), ("2", "1"), ("\\\\sqrt{4}", "2")])]
    ['correct', 'incorrect', 'correct']
    """
    if errors not in ("raise", "keep"):
        raise ValueError(f"errors must be 'raise' or 'keep', got {errors!r}")
    own = pool is None and workers is not None
    pool = pool or (SymbolicPool(workers, timeout or DEFAULT_TIMEOUT) if own else default_pool())

    def one(i: int, p: _Prepared):
        try:
            return _finish(p, pool.run(p.job, timeout), on_timeout)
        except GradeError as e:
            return type(e)(f"pair {i}: {e}")

    prepared, pending = [], {}
    try:
        # the symbolic step of a pair starts as soon as the fast path hands it over, so that the workers start
        # (importing sympy takes a while) while the other pairs are still being read
        with ThreadPoolExecutor(max_workers=pool.workers) as executor:
            try:
                for i, (given, gold) in enumerate(pairs):
                    prepared.append(_prepare_or_error(i, given, gold, mode))
                    if isinstance(prepared[i], _Prepared):
                        pending[i] = executor.submit(one, i, prepared[i])
                for i, future in pending.items():
                    prepared[i] = future.result()
            except BaseException:  # a bad pair, a failed worker, ^C: the pairs not yet sent need not be graded
                executor.shutdown(cancel_futures=True)
                raise
    finally:
        if own:
            pool.close()
    if errors == "raise":
        for p in prepared:
            if isinstance(p, GradeError):
                raise p
    return prepared


def reference_grade(given: str | None, gold: str, grader: str, *, timeout: float | None = None,
                    pool: SymbolicPool | None = None) -> str:
    """The verdict of another grader on the pair, for audits: ``math-verify`` (its README usage,
    default configs) or ``prm800k`` (a re-implementation of the released PRM800K grader).
    Returns ``correct``, ``incorrect``, or ``unparseable`` for a timeout.

    >>> reference_grade("\\\\frac{2}{4}", "\\\\frac{1}{2}", "prm800k")
    'incorrect'
    """
    if grader == "prmkit":
        return grade(given, gold, timeout=timeout, pool=pool).verdict
    if grader not in GRADERS:
        raise ValueError(f"unknown grader {grader!r} (known: {', '.join(GRADERS)})")
    if grader == "prm800k":
        job = {"grader": grader, "given": extract_answer(given or "") or (given or ""),
               "gold": extract_answer(gold) or gold}
    else:
        job = {"grader": grader, "given": _delimited(given or ""), "gold": _delimited(gold)}
    reply = (pool or default_pool()).run(job, timeout)
    if "error" in reply:
        raise GradeError(f"{grader} failed: {reply['error']}")
    if reply.get("timeout") or reply.get("resource"):
        return "unparseable"
    return "correct" if reply["equal"] else "incorrect"


# --- the steps ------------------------------------------------------------------------------------

@dataclass
class _Prepared:
    """A pair the fast path could not decide, with the job for the symbolic step."""

    given: str
    gold: str
    given_key: str
    gold_key: str
    job: dict
    prose: bool = False
    """The given side is prose without an answer marker: its words and marks are not the answer's."""

    def result(self, reason: str, detail: str = "") -> GradeResult:
        return GradeResult(REASONS[reason], reason, self.given, self.gold, self.given_key, self.gold_key, detail)


def _prepare(given: str | None, gold: str, mode: str) -> GradeResult | _Prepared:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (expected one of {', '.join(MODES)})")
    if given is not None and not isinstance(given, str):
        raise TypeError(f"given answer must be a string or None, got {type(given).__name__}")
    if not isinstance(gold, str) or not gold.strip():
        raise ValueError(f"gold answer must be a non-empty string, got {gold!r}")
    gold_answer, gold_key, gold_job = _gold_side(gold)
    found = extract_answer(given) if given else None
    given_answer = unwrap_math(found or given.strip()) if given else ""
    if not given_answer or (found is None and count_boxes(given)):  # a box cut off mid-answer: no answer
        return GradeResult("incorrect", "no-answer", None, gold_answer, "", gold_key)
    prepared = _Prepared(given_answer, gold_answer, normalize(given_answer), gold_key, {}, _is_prose(given))
    decided = _fast(prepared, mode)
    # With several boxes the last one may be an intermediate result ("... \boxed{255}. The final answer
    # is $10,455$"): a match is safe to take, a mismatch goes to Math-Verify, which reads the whole text.
    if decided is not None and (decided.correct or count_boxes(given) < 2):
        return decided
    prepared.job = {"given": _for_math_verify(given, given_answer), "gold": gold_job, "mode": mode}
    return prepared


@functools.lru_cache(maxsize=4096)
def _gold_side(gold: str) -> tuple[str, str, str]:
    """The gold answer, its key and its Math-Verify text: computed once per gold, since a pool grades
    many answers against one gold (the worker caches its parse the same way)."""
    answer = unwrap_math(extract_answer(gold) or gold.strip())
    return answer, normalize(answer), _for_math_verify(gold, answer)


def fast_path(given: str | None, gold: str, mode: str = "strict") -> GradeResult | dict:
    """The verdict :func:`grade` reaches without the symbolic step, or the job it would send there (for
    measuring where the time goes: ``bench/bench_grade.py``).

    >>> fast_path("3", "4").reason, fast_path("x^2+2x", "x(x+2)")["mode"]
    ('different-number', 'strict')
    """
    prepared = _prepare(given, gold, mode)
    return prepared.job if isinstance(prepared, _Prepared) else prepared


def _prepare_or_error(index: int, given, gold, mode: str):
    try:
        return _prepare(given, gold, mode)
    except (TypeError, ValueError) as e:
        raise type(e)(f"pair {index}: {e}") from None


def _fast(p: _Prepared, mode: str) -> GradeResult | None:
    """Decide from strings alone when that is safe; None hands the pair to the symbolic step."""
    a, b = exact_number(p.given_key), exact_number(p.gold_key)
    by_units = None if p.prose else compare_units(p.given, p.gold, mode, (a, b))
    if by_units is not None:
        return p.result("equal-converted" if by_units[0] else "different-unit", by_units[1])
    kinds = collection_kind(p.given), collection_kind(p.gold)
    if mode == "strict" and None not in kinds and kinds[0] != kinds[1]:
        return p.result("different-collection", f"{kinds[0]} against {kinds[1]}")
    decided = None if p.prose else _by_text(p, mode)
    if decided is not None:
        return decided
    names = equation_variable(p.given), equation_variable(p.gold)
    other_variable = None not in names and names[0] != names[1]  # the keys drop "y =": they must not decide
    if other_variable and mode == "strict":
        return p.result("different-variable", f"{names[0]} against {names[1]}")
    if p.given_key == p.gold_key and not other_variable:
        return p.result("equal-normalized")
    both_numbers = a is not None and b is not None and not _percent(p.given + p.gold)  # the answers, not the prose
    if both_numbers and _numbers_differ(p.given, p.gold, a, b):
        return p.result("different-number")
    decided = _by_value(p) or _by_entries(p) or _by_relation(p)
    if decided is not None:
        return decided
    if mode == "lenient" and not other_variable:
        if p.given_key.lower() == p.gold_key.lower():
            return p.result("equal-normalized")
        if "," in p.gold_key and sorted(_items(p.given_key)) == sorted(_items(p.gold_key)):
            return p.result("equal-unordered")
    return None


def _by_text(p: _Prepared, mode: str) -> GradeResult | None:
    """Words, names and choice letters as text (:mod:`prmkit.grade.words`), in every mode. The gold's kind
    decides: a gold that is words is never matched by mathematics; a given answer in words against a
    mathematical gold goes on to the symbolic step (which cannot read it: no answer)."""
    ours, theirs = text_answer(p.given), text_answer(p.gold)
    if theirs is None:
        return None
    if ours is None and loose_text(p.given) == theirs:  # "two" for "\text{two}", "(A) 2\sqrt2" for "(A)"
        return p.result("equal-text")
    if ours == theirs:
        return p.result("equal-text")
    listed = mode == "lenient" and ours is not None and ours[0] == theirs[0] == "words" and "," in theirs[1]
    if listed and sorted(_words(ours[1])) == sorted(_words(theirs[1])):
        return p.result("equal-unordered")
    return p.result("different-text", f"{ours or 'mathematics'} against {theirs}")


def _words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",")]


def _numbers_differ(given: str, gold: str, a, b) -> bool | None:
    """True when two exact numbers clearly differ, False when equal, None when a decimal side may be
    a rounding of the other (0.333333 for 1/3): the symbolic step decides those, at its precision."""
    if a == b:
        return False
    rounded = is_decimal(strip_string(given)) or is_decimal(strip_string(gold))
    if not rounded or abs(a - b) > 1e-3 * max(1, abs(a), abs(b)):
        return True
    return None


def _by_value(p: _Prepared) -> GradeResult | None:
    """Two plain numbers with roots, pi, powers (:mod:`prmkit.grade.exact`), compared exactly; None where
    either is more than that, or where they differ by so little that the symbolic step's precision decides."""
    if p.prose or _percent(p.given + p.gold):
        return None
    equal = decide(answer_value(p.given), answer_value(p.gold))
    if equal is None:
        return None
    return p.result("equal-value" if equal else "different-value")


def _by_relation(p: _Prepared) -> GradeResult | None:
    """One variable against one value on both sides (:mod:`prmkit.grade.relation`), compared exactly."""
    if p.prose:
        return None
    same = decide_relations(read_relation(p.given), read_relation(p.gold))
    if same is None:
        return None
    return p.result("equal-relation" if same else "different-relation")


@functools.lru_cache(maxsize=65536)
def answer_value(answer: str) -> Exact | None:
    """The exact value of a plain answer (:func:`prmkit.grade.exact.read_value`), cached: a pool's answers
    repeat. A value that is not finite as a float is not read (it cannot be compared by closeness)."""
    value = read_value(answer.strip())
    return value if value is not None and math.isfinite(float(value)) else None


@dataclass(frozen=True)
class Entries:
    """A collection or matrix whose every entry is an exact value: brackets (``kind``: ``"()"``, ``"[)"``,
    ``"{}"`` for a set, ``"matrix"``), ``rows``, and the values (:class:`prmkit.grade.exact.Exact`), a set's
    in value order."""

    kind: str
    rows: int
    values: tuple[Exact, ...]


def grouping_value(answer: str) -> Exact | Entries | None:
    """What :func:`decide_values` compares for a bare answer (as a pool's answer groups are formed): its exact
    value, or its entries' where it is a collection of plain values; None for anything else.

    >>> grouping_value("\\sqrt{8}") == grouping_value("2\\sqrt2"), grouping_value("\\{2, 1\\}") == grouping_value("\\{1, 2\\}")
    (True, True)
    """
    value = answer_value(answer)
    return value if value is not None else _collection(answer, answer_value)


def scalar_value(value: Exact | Entries) -> float | None:
    """The number a :func:`grouping_value` is, or None for a collection and for a value whose float may be
    off by more than a tenth of :data:`CLOSE_WINDOW` (cancelling terms): those are compared with every other
    answer, not only with neighbours in value order."""
    if not isinstance(value, Exact):
        return None
    x = float(value)
    return x if value.float_error <= 0.1 * CLOSE_WINDOW * max(1.0, abs(x)) else None


def decide_values(a: Exact | Entries, b: Exact | Entries) -> bool | None:
    """Whether :func:`grade` calls two :func:`grouping_value` answers equal (True) or not (False), where its
    fast path decides them by these values; None where something else may decide (the symbolic step)."""
    if isinstance(a, Exact) and isinstance(b, Exact):
        return decide(a, b)
    if isinstance(a, Exact) or isinstance(b, Exact):
        return _against_one(a if isinstance(a, Entries) else b)
    return _same_entries(a, b)


def _collection(text: str, cell_value) -> Entries | None:
    """``text`` as :class:`Entries`, each cell read by ``cell_value``; None where it is no collection or
    matrix, or a cell is not read."""
    found = entries(canonical_latex(text.strip()))
    if found is None:
        return None
    kind, rows, cells = found
    values = [cell_value(c) for c in cells]
    if None in values:
        return None
    return Entries(kind, rows, tuple(sorted(values, key=_value_order) if kind == "{}" else values))


def _against_one(several: Entries) -> bool | None:
    """A collection against one value: different (False), but for a set or a closed interval whose values are
    not all different from each other (``\\{5, 5\\}`` is the set {5}, ``[2, 2]`` the point 2: Math-Verify calls
    each equal to the number, so the symbolic step decides). A tuple, a half-open or open interval, a matrix,
    or values two of which differ, is never one number."""
    first = several.values[0]
    if several.kind in ("{}", "[]") and not any(decide(first, v) is False for v in several.values[1:]):
        return None
    return False


def _same_entries(a: Entries, b: Entries) -> bool | None:
    """Two collections entry by entry: None unless they have one shape and the same brackets, or where an
    entry's comparison is undecided."""
    if (a.kind, a.rows, len(a.values)) != (b.kind, b.rows, len(b.values)):
        return None
    verdicts = [decide(x, y) for x, y in zip(a.values, b.values)]
    return None if None in verdicts else all(verdicts)


def _value_order(value: Exact) -> tuple:
    return float(value), value.terms


def _by_entries(p: _Prepared) -> GradeResult | None:
    """Two collections or matrices of one shape whose entries are all exact values, entry by entry (a set's
    entries in any order), or a collection of two different values against one value (different); None
    otherwise."""
    ours, theirs = _collection(p.given, _entry_value), _collection(p.gold, _entry_value)
    if ours is not None and theirs is not None:
        equal = _same_entries(ours, theirs)
    elif (ours or theirs) is not None and not _percent(p.given + p.gold):
        equal = _against_one(ours or theirs) if answer_value(p.gold if ours else p.given) is not None else None
    else:
        equal = None
    return None if equal is None else p.result("equal-entries" if equal else "different-entries")


def _entry_value(cell: str) -> Exact | None:
    """An entry's exact value: a rational :func:`normalize` reads (decimals, repeating decimals, ``a/b``), else
    what :func:`answer_value` reads (roots, pi)."""
    number = exact_number(normalize(cell))
    if number is None:
        return answer_value(cell)
    return Exact((((1, 0), number),) if number else (), rounded=is_decimal(strip_string(cell)))


def _items(key: str) -> list[str]:
    return [normalize(x) for x in key.strip("{}").replace("\\{", "").replace("\\}", "").split(",")]


def _percent(text: str) -> bool:
    return "%" in text or "percent" in text or "pct" in text


def _for_math_verify(text: str, answer: str) -> str:
    """What Math-Verify parses for one side.

    Text with boxes goes whole (Math-Verify joins several boxes into one answer); an answer found
    under ``# Answer`` or ``####``, or a bare answer, is wrapped in ``$...$``; prose without any
    marker goes whole and Math-Verify finds the answer in it.
    """
    if count_boxes(text) or _is_prose(text):
        return canonical_latex(_MATHRM.sub(r"\1", text))
    return _delimited(canonical_latex(answer.replace("\\$", "").replace("$", "")))


def _is_prose(text: str) -> bool:
    """Text with no answer marker that is more than a bare answer: LaTeX delimiters, or two words or
    more (environment names aside), in which Math-Verify looks for the answer."""
    text = unwrap_math(text)  # "$5 \\geq x$" is an answer, not prose around one
    if extract_answer(text) is not None or text_answer(text) is not None:  # "\\text{north east}" is an answer
        return False
    return bool(_DELIMITERS.search(text.replace("\\$", "")) or len(_WORD.findall(_ENVIRONMENT.sub("", text))) >= 2)


def _delimited(text: str) -> str:
    # Math-Verify 0.9.0 cuts "\\frac{1}{\\mathrm{e}}" short (so 1-1/e "equals" 1+1/e); upright letters are letters.
    text = _MATHRM.sub(r"\1", text)
    return text if _DELIMITERS.search(text) else f"${text}$"


def _finish(p: _Prepared, reply: dict, on_timeout: str) -> GradeResult:
    if reply.get("timeout"):
        if on_timeout == "raise":
            raise GradeTimeout(f"symbolic step timed out on given {p.given[:80]!r} vs gold {p.gold[:80]!r}")
        return p.result("timeout")
    if reply.get("resource"):
        return p.result("memory", f"worker ran out of memory ({reply['resource']})")
    words = text_answer(p.given) is not None  # words without mathematics, against a mathematical gold
    if reply.get("unparsed") == "given":
        if p.prose or words:  # nothing Math-Verify can read as mathematics: no answer was given
            return p.result("no-answer", reply.get("error", ""))
        return p.result("given-unparsed", reply.get("error", ""))
    if reply.get("unparsed") == "gold":
        raise GradeError(f"gold answer {p.gold[:120]!r} cannot be parsed")
    if reply.get("equal"):
        return p.result("equal-symbolic", f"gold={reply['gold']} given={reply['given']}")
    if "error" in reply:
        raise GradeError(f"grading given {p.given[:80]!r} vs gold {p.gold[:80]!r} failed: {reply['error']}")
    if words:  # "I don't know." read as the product I*d*o*n*t*k*n*o*w is no answer, not a wrong formula
        return p.result("no-answer", f"words, not mathematics: {p.given[:80]!r}")
    return p.result("different-symbolic", f"gold={reply['gold']} given={reply['given']}")
