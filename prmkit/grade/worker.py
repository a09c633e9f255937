"""What runs inside a grading worker process: Math-Verify's parse and verify, with its timeouts off.

The parent (:mod:`prmkit.grade.symbolic`) owns the deadline and kills this process when it passes,
so Math-Verify's own ``signal.alarm`` timeouts are disabled here (they only work on a main thread,
and a process kill also stops sympy inside C code). The protocol is one JSON object per line on
stdin and stdout; the first line out is ``{"ready": true}``.

An exception while comparing one pair is sent back as ``{"error": ...}``, never turned into "not
equal": the parent decides what it means (see :func:`compare`).

>>> compare({"gold": "$\\\\frac{1}{2}$", "given": "$0.5$", "mode": "strict"})["equal"]
True
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import threading
import time

logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns once that its timeouts are off

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from sympy import Basic, MatrixBase, nan, zoo

# Boxed first: in prmkit's formats the box is the answer, before any "final answer is" sentence.
PARSE_CONFIG = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
_UNDEFINED = (zoo, nan)
MODES = {"strict": {"strict": True, "allow_set_relation_comp": False},
         "lenient": {"strict": False, "allow_set_relation_comp": True}}


SLL_FIRST = True
"""Whether :func:`two_stage_parsing`'s parser tries SLL first (off: LL alone, as latex2sympy2 parses; for tests)."""
PARSES = {"sll": 0, "ll": 0}
"""Parses completed by each stage in this process."""


def two_stage_parsing() -> None:
    """Math-Verify's LaTeX parser (latex2sympy2's ANTLR grammar) tries ANTLR's SLL prediction first and falls back
    to full LL only where SLL reports a syntax error: ANTLR guarantees that a parse SLL completes is the one LL
    would give, and LL's full-context prediction is much of the parser's time. The tree is converted once. Applied
    where this module is imported: a worker process, or a process that grades in-process; Math-Verify as the
    reference grader (``--audit math-verify``, :func:`_reference`) parses with LL alone, as it does itself."""
    from antlr4.atn.PredictionMode import PredictionMode
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    if getattr(_Latex2Sympy, "_prmkit_two_stage", False):
        return
    create = _Latex2Sympy.create_parser

    def create_two_stage(self, latex: str):
        parser = create(self, latex)  # the real parser, its ``math`` made two-stage; everything else as it was
        ll_math = parser.math

        def math():
            if not SLL_FIRST:
                PARSES["ll"] += 1
                return ll_math()
            parser._interp.predictionMode = PredictionMode.SLL
            try:
                tree = ll_math()
                PARSES["sll"] += 1
                return tree
            except Exception:  # noqa: BLE001 - SLL's syntax error (raised by latex2sympy's listener): LL decides
                PARSES["ll"] += 1
                return create(self, latex).math()

        parser.math = math
        return parser

    _Latex2Sympy.create_parser = create_two_stage
    _Latex2Sympy._prmkit_two_stage = True


two_stage_parsing()


def compare(job: dict) -> dict:
    """Compare ``job["given"]`` with ``job["gold"]`` (texts Math-Verify can parse) under ``job["mode"]``.

    Returns ``{"equal": bool, "gold": [...], "given": [...]}`` with the parsed forms, or
    ``{"unparsed": "given"|"gold", ...}`` when a side yields nothing, or ``{"error": "Type: message"}``
    when parsing or every comparison raised, so that no crash reads as "not equal".
    """
    if job.get("grader") == "math-verify":
        return _reference(job)
    if job.get("grader") == "prm800k":
        from prmkit.grade.prm800k import grade_answer
        return {"equal": grade_answer(job["given"], job["gold"])}
    gold = _parse_gold(job["gold"])
    if not gold:
        return {"unparsed": "gold"}
    try:
        given = [c for c in parse(job["given"], PARSE_CONFIG, parsing_timeout=None, raise_on_error=True)
                 if _finite(c)]
    except Exception as e:  # noqa: BLE001 - reported to the parent as the reason, not swallowed
        return {"unparsed": "given", "error": _describe(e)}
    if not given:
        return {"unparsed": "given", "gold": _show(gold)}
    errors = []
    for g in gold:
        for p in given:
            try:
                if verify(g, p, timeout_seconds=None, raise_on_error=True, **MODES[job["mode"]]):
                    return {"equal": True, "gold": _show(gold), "given": _show(given)}
            except Exception as e:  # noqa: BLE001 - collected and sent back; see the docstring
                errors.append(_describe(e))
    out = {"equal": False, "gold": _show(gold), "given": _show(given)}
    if errors:
        out["error"] = "; ".join(errors)
    return out


@functools.lru_cache(maxsize=2048)
def _parse_gold(text: str) -> list:
    """The gold side's candidates, parsed once per gold text: a pool grades many answers against one gold.
    (A parse error is not cached: it raises, and goes back to the parent as the error it is.)"""
    return [c for c in parse(text, PARSE_CONFIG, parsing_timeout=None, raise_on_error=True) if _finite(c)]


def _reference(job: dict) -> dict:
    """Math-Verify as its README uses it (default configs), for audits and benchmarks: its own LL parsing."""
    global SLL_FIRST
    two_stage, SLL_FIRST = SLL_FIRST, False
    try:
        gold = parse(job["gold"], parsing_timeout=None)
        given = parse(job["given"], parsing_timeout=None)
        return {"equal": bool(verify(gold, given, timeout_seconds=None))}
    finally:
        SLL_FIRST = two_stage


def _finite(candidate) -> bool:
    """Drop parse artefacts that are undefined: "12:00" parses as 12/0 = zoo, which no answer means."""
    if isinstance(candidate, Basic) and not isinstance(candidate, MatrixBase):
        return not candidate.has(*_UNDEFINED)
    return True


def _show(candidates: list) -> list[str]:
    return [str(c)[:200] for c in candidates]


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:300]}"


def _watch_parent() -> None:
    """Exit when the parent dies, so a killed grader leaves no orphan spinning in sympy."""
    parent = os.getppid()
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def main() -> None:
    _limit_memory(int(os.environ.get("PRMKIT_GRADE_MEMORY_MB", "4096")))
    threading.Thread(target=_watch_parent, daemon=True).start()
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        job = json.loads(line)
        out.write(json.dumps(dict(answer(job), id=job.get("id"))) + "\n")
        out.flush()


def answer(job: dict) -> dict:
    """:func:`compare` as the parent reads it: running out of memory and any error become replies."""
    try:
        return compare(job)
    except MemoryError:
        return {"resource": "memory"}
    except Exception as e:  # noqa: BLE001 - the boundary: every error goes back to the parent
        return {"error": _describe(e)}


def _limit_memory(megabytes: int) -> None:
    """Cap the address space so ``10**10**10`` raises MemoryError instead of eating the machine."""
    try:
        import resource
    except ImportError:  # not on POSIX: the deadline still applies
        return
    limit = megabytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


if __name__ == "__main__":
    main()
