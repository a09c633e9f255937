"""A snapshot of Math-Verify's LaTeX parser's prediction cache, so that a fresh grading process parses as a warm one.

latex2sympy2's ANTLR parser predicts each decision adaptively and caches what it predicted in one DFA per
decision point (class attributes of its generated ``PSParser`` and ``PSLexer``), filled as the process parses.
A fresh process starts with them empty, and most of its first parses is spent filling them: on
``bench/bench_grade.py``'s pairs that reach the parser, 4.5 s in a fresh process against 1.3 s in a warm one. Every
grading worker is a fresh process, and each filled its own. The DFA is a cache of the ATN's own answers (ANTLR
reads a prediction from it exactly where it would compute the same one again), so a process that starts from a
filled DFA parses exactly as one that filled it itself, only sooner.

:func:`install` loads the snapshot into this process's parser; if there is none yet, it parses :data:`WARM_UP`
(a built-in corpus of answers of the shapes graders meet, none of them from the benchmark's pairs) and writes
one. The file lives under ``$PRMKIT_CACHE/grade/`` (default ``~/.cache/prmkit``), named by everything its content
depends on: the ANTLR runtime's, latex2sympy2_extended's and Python's versions, the corpus and this module's
format. A grading worker calls :func:`install` before it says it is ready; ``PRMKIT_GRADE_PARSER_CACHE=0`` turns
it off (the benchmark's no-snapshot row, the tests' reference).

Pickling the DFA naively would be wrong in a way no test of verdicts sees: the runtime compares some objects by
identity (``SemanticContext.NONE``, ``PredictionContext.EMPTY``, the simulators' ``ERROR`` states), and the DFA's
configurations point into the ATN, which the process already built when it imported the parser. So those are
written by name (:func:`_shared`) and bound to this process's own objects on load; and the dicts keyed by DFA
states and prediction contexts are rebuilt once everything is loaded, since a key's hash is whole only then.
A snapshot that does not load or does not fit this parser is ignored with a warning and written again: the
parser then is as it was, correct and cold. Like ``.pyc`` files, the snapshot is trusted as the user's own.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

log = logging.getLogger(__name__)

FORMAT = 1
"""Bumped when what is pickled, or how, changes."""
ENV = "PRMKIT_GRADE_PARSER_CACHE"

WARM_UP = (
    # numbers, fractions, roots, constants
    "$42$", "$-7$", "$3.14$", "$0.5$", "$1{,}000$", "$\\frac{1}{2}$", "$\\dfrac{3}{4}$", "$-\\frac{5}{6}$",
    "$\\tfrac{7}{8}$", "$3/4$", "$2\\frac{1}{3}$", "$\\sqrt{2}$", "$3\\sqrt{5}$", "$\\sqrt[3]{27}$",
    "$\\frac{\\sqrt{3}}{2}$", "$\\frac{1+\\sqrt{5}}{2}$", "$2\\pi$", "$\\frac{\\pi}{6}$", "$e^{2}$", "$2^{10}$",
    "$10^{-3}$", "$x^{2/3}$", "$\\sqrt{x^2+1}$", "$5!$", "$\\binom{10}{3}$", "$\\infty$", "$-\\infty$", "$\\pm 3$",
    "$3 \\cdot 4$", "$3 \\times 10^{8}$", "$(2+3)(4-1)$", "$2(3+x)$", "$|x-1|$", "$\\left|-4\\right|$",
    "$\\lfloor 2.5 \\rfloor$", "$\\lceil x \\rceil$", "$50\\%$", "$30^\\circ$", "$45^{\\circ}$", "$3+4i$", "$-2i$",
    "$0.\\overline{3}$",
    # algebra, functions
    "$x^2+2x+1$", "$(x+1)^2$", "$\\frac{x+2}{x-3}$", "$a_1 + a_{n}$", "$x_{1}$", "$\\sin x$", "$\\cos(2\\theta)$",
    "$\\arcsin\\left(\\frac{1}{2}\\right)$", "$\\log_2 8$", "$\\ln(x)$",
    "$\\log 100$", "$e^{i\\pi}$", "$f(x)=3x-1$", "$g^{-1}(x)$", "$\\sum_{k=1}^{n} k^2$", "$\\prod_{i=1}^{3} i$",
    "$\\int_0^1 x\\,dx$", "$\\lim_{x\\to 0} \\frac{\\sin x}{x}$", "$\\frac{d}{dx} x^2$", "$\\alpha + \\beta$",
    "$\\mathbf{v}$", "$\\vec{u}$", "$\\overline{AB}$", "$\\angle ABC$", "$\\triangle ABC$",
    # relations, equations
    "$x = 5$", "$y = 2x + 3$", "$x^2 + y^2 = 25$", "$x < 3$", "$x > -1$", "$x \\le 2$", "$x \\leq 2$",
    "$x \\geq 0$", "$x \\ge 4$", "$x \\neq 1$", "$-1 < x \\le 4$", "$x \\in [0, 1]$", "$x \\approx 2.72$",
    "$a = 1, b = 2$", "$x = 1 \\text{ or } x = -1$", "$p:q = 2:3$", "$\\frac{AB}{CD} = \\frac{2}{3}$",
    "$k = 4$ and $n = 7$", "$A \\cap B$", "$A \\cup B$", "$x \\notin S$", "$S \\subseteq T$",
    # intervals, sets, tuples, vectors, matrices
    "$(0, 1)$", "$[0, 1]$", "$(-\\infty, 2]$", "$[3, \\infty)$", "$(-2, 3) \\cup (4, 5]$", "$\\{1, 2, 3\\}$",
    "$\\{x \\mid x > 0\\}$", "$\\emptyset$", "$\\varnothing$", "$(3, -4)$", "$(1, 2, 3)$", "$\\langle 1, 2 \\rangle$",
    "$\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}$", "$\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}$",
    "$\\begin{bmatrix} 2 & -1 \\\\ 3 & 4 \\end{bmatrix}$", "$\\left[\\begin{array}{cc} 1 & 2 \\\\ 3 & 4 \\end{array}\\right]$",
    "$\\begin{vmatrix} a & b \\\\ c & d \\end{vmatrix}$", "$\\det(A)$", "$A^{T}$", "$1, 2, 3$", "$2; 5; 8$",
    # text, units, boxes, prose
    "$\\text{(A)}$", "$\\textbf{(C)}$", "$\\text{Monday}$", "$5 \\text{ cm}$", "$12\\text{ meters}$",
    "$\\$ 4.50$", "$3 \\mathrm{~kg}$", "$\\boxed{17}$", "$\\boxed{\\frac{2}{5}}$", "$\\boxed{x = 3}$",
    "$\\boxed{(1, 2)}$", "The answer is $\\boxed{12}$.", "So $x = 4$, and the area is $\\boxed{16}$ square units.",
    "Final Answer: The final answer is $\\frac{3}{8}$. I hope it is correct.", "\\[ \\boxed{\\sqrt{13}} \\]",
    "Therefore \\( y = -\\frac{1}{2} \\).", "We get $$ \\frac{a+b}{2} $$", "\\boxed{1}, \\boxed{2}",
    "The roots are $x=2$ and $x=-3$.", "$\\frac{1}{3}\\,\\text{hours}$",
    # whole solutions, as models write them: the grader reads every formula of the text
    "Let $n$ be the number of apples. Then $3n + 4 = 19$, so $3n = 15$ and $n = 5$. The answer is $\\boxed{5}$.",
    ("We have \\begin{align*} 2x + 3y &= 12 \\\\ x - y &= 1 \\end{align*} Substituting $x = y + 1$ gives "
     "$5y + 2 = 12$, so $y = 2$ and $x = 3$. Thus $(x, y) = \\boxed{(3, 2)}$."),
    ("The discriminant is $b^2 - 4ac = 25 - 24 = 1 > 0$, so the roots are $x = \\frac{5 \\pm 1}{4}$, that is "
     "$x = \\frac{3}{2}$ or $x = 1$."),
    ("Since $\\sin^2\\theta + \\cos^2\\theta = 1$ and $\\cos\\theta = \\frac{3}{5}$, we get "
     "$\\sin\\theta = \\pm\\frac{4}{5}$; as $0 < \\theta < \\frac{\\pi}{2}$, the answer is $\\frac{4}{5}$."),
    ("By the formula $V = \\frac{1}{3}Bh$ with $B = 36 \\text{ cm}^2$ and $h = 5$ cm, the volume is "
     "$V = 60 \\text{ cm}^3$."),
    ("We compute \\[ \\sum_{k=1}^{10} (2k - 1) = 2 \\cdot \\frac{10 \\cdot 11}{2} - 10 = 100. \\] "
     "Final Answer: The final answer is $100$. I hope it is correct."),
    ("The function $f(x) = x^3 - 3x$ has $f'(x) = 3x^2 - 3 = 0$ at $x = \\pm 1$, with $f(-1) = 2$ and "
     "$f(1) = -2$; the maximum on $[-2, 2]$ is $\\boxed{2}$."),
    "There are $\\binom{5}{2} = 10$ pairs, and the probability is $\\frac{4}{10} = \\frac{2}{5} = 0.4$.",
    "The solutions are $x \\in \\{-1, 0, 2\\}$, so the sum of the solutions is $1$.",
    "Let $a_n = a_1 r^{n-1}$ with $a_1 = 3$ and $r = 2$; then $a_5 = 48$ and $S_5 = 3(2^5 - 1) = 93$.",
    "Solving $|2x - 1| < 5$ gives $-5 < 2x - 1 < 5$, so $-2 < x < 3$.",
)
"""Answers of the shapes graders meet, in the formats models write them: what :func:`build` parses to fill the
prediction cache. Written for this purpose after a look at the pairs of ``bench/bench_grade.py`` that reach the
parser; answers that echoed one of them were taken out, and the snapshot's effect is also measured on pairs this
corpus was not written against (``bench/bench_grade_snapshot.py``: ProcessBench's MATH solutions)."""


_installed: str | None = None
"""What :func:`install` did in this process: once is enough (a second load would throw away what the parser has
learnt since the first)."""


def install() -> str:
    """Fill this process's parser's prediction cache from the snapshot, building the snapshot first where there is
    none; once per process. Returns what happened: ``"loaded"``, ``"built"``, ``"off"``
    (``PRMKIT_GRADE_PARSER_CACHE=0``) or ``"failed"`` (logged; the parser is as it was)."""
    global _installed
    if _installed is None:
        _installed = _install()
    return _installed


def _install() -> str:
    if os.environ.get(ENV, "1") == "0":
        return "off"
    path = snapshot_path()
    if path.exists():
        try:
            _load(path)
            return "loaded"
        except Exception as e:  # noqa: BLE001 - a cache: any failure leaves a correct, cold parser
            log.warning("ignoring the parser snapshot %s (%s: %s); writing it again", path, type(e).__name__, e)
    try:
        build(path)
        return "built"
    except Exception as e:  # noqa: BLE001 - as above
        log.warning("could not write the parser snapshot %s (%s: %s)", path, type(e).__name__, e)
        return "failed"


def snapshot_path() -> Path:
    """Where this process's snapshot lives: named by everything its content depends on."""
    key = "\n".join([str(FORMAT), version("antlr4-python3-runtime"), version("latex2sympy2_extended"),
                     sys.version, *WARM_UP])
    root = Path(os.environ.get("PRMKIT_CACHE") or Path.home() / ".cache" / "prmkit")
    return root / "grade" / f"parser-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pkl"


def build(path: Path) -> None:
    """Parse :data:`WARM_UP` as a grading worker does and write the parser's prediction cache to ``path``
    (atomically: a reader sees the whole file or none)."""
    from math_verify import parse

    from prmkit.grade.worker import PARSE_CONFIG

    for text in WARM_UP:
        try:
            parse(text, PARSE_CONFIG, parsing_timeout=None)
        except Exception as e:  # noqa: BLE001 - a corpus answer the parser rejects still warmed what it read
            log.debug("warm-up answer %r: %s", text, e)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, suffix=".tmp", delete=False) as f:
        _Writer(f, protocol=pickle.HIGHEST_PROTOCOL).dump(_caches())
    os.replace(f.name, path)


def cache_sizes() -> dict[str, int]:
    """DFA states held by this process's parser and lexer (what a snapshot carries)."""
    parser, lexer = _classes()
    return {"parser": sum(len(d.states) for d in parser.decisionsToDFA),
            "lexer": sum(len(d.states) for d in lexer.decisionsToDFA)}


def _classes():
    from latex2sympy2_extended.antlr_parser import PSLexer, PSParser

    return PSParser, PSLexer


def _caches() -> tuple:
    parser, lexer = _classes()
    return parser.decisionsToDFA, parser.sharedContextCache.cache, lexer.decisionsToDFA


def _shared() -> dict:
    """What the snapshot names rather than copies: the runtime's singletons and everything in both ATNs."""
    from antlr4.atn.ATNSimulator import ATNSimulator
    from antlr4.atn.LexerATNSimulator import LexerATNSimulator
    from antlr4.atn.SemanticContext import SemanticContext
    from antlr4.PredictionContext import PredictionContext
    from antlr4.RuleContext import RuleContext

    shared = {"semantic-none": SemanticContext.NONE, "context-empty": PredictionContext.EMPTY,
              "rule-empty": RuleContext.EMPTY, "error": ATNSimulator.ERROR, "lexer-error": LexerATNSimulator.ERROR}
    for name, cls in zip(("parser", "lexer"), _classes()):
        shared[name] = cls.atn
        shared.update({(name, "state", s.stateNumber): s for s in cls.atn.states if s is not None})
        shared.update({(name, "action", i): a for i, a in enumerate(cls.atn.lexerActions or ())})
    return shared


class _Writer(pickle.Pickler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._names = {id(obj): name for name, obj in _shared().items()}

    def persistent_id(self, obj):
        return self._names.get(id(obj))


class _Reader(pickle.Unpickler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._shared = _shared()

    def persistent_load(self, name):
        if isinstance(name, list):  # pickled tuples of names come back as lists
            name = tuple(name)
        return self._shared[name]


def _load(path: Path) -> None:
    with path.open("rb") as f:
        parser_dfas, contexts, lexer_dfas = _Reader(f).load()
    parser, lexer = _classes()
    for dfas, cls in ((parser_dfas, parser), (lexer_dfas, lexer)):
        starts = cls.atn.decisionToState
        if len(dfas) != len(starts) or any(d.atnStartState is not s for d, s in zip(dfas, starts)):
            raise ValueError(f"its DFAs do not fit this {cls.__name__}'s ATN")
        for dfa in dfas:
            dfa._states = {state: state for state in dfa._states}  # keys hashed now that every object is whole
    for dfas, cls in ((parser_dfas, parser), (lexer_dfas, lexer)):
        cls.decisionsToDFA[:] = dfas  # in place: simulators built already hold this list
    parser.sharedContextCache.cache = {context: context for context in contexts}


def main() -> None:
    """``python -m prmkit.grade.parser_cache``: load or build this machine's snapshot and say where it is."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    status = install()
    print(f"{status}: {snapshot_path()} ({cache_sizes()} DFA states)")


if __name__ == "__main__":
    main()
