"""Solutions written as one text, cut into steps on reading: the ``text`` format, and the builder the
candidate-pool readers (:mod:`prmkit.convert.candidates`) share.

A ``text`` row (JSON Lines, a JSON array or concatenated objects), annotated::

    {"problem": "What is 2+3?",                 # -> Problem.problem
     "solution": "2 + 3 = 5.\\nSo \\\\boxed{5}.",  # one text, cut into steps by --split (default newline)
     "answer": "5",                             # optional: the *reference* answer -> Problem.answer
     "id": "p7",                                # optional: the problem's id -> Problem.id (a number: "7")
     "meta": {"model": "m"}}                    # optional: -> Solution.meta, untouched

Several rows may hold one problem (a candidate pool): rows with the same ``id`` (without ids, the
same problem text) are one problem. ``Solution.id`` is ``<problem id>/<j>``, j counting that
problem's rows from 0 in file order; without ids, problems are numbered by first appearance ("0",
"1", ...) and that number is the problem id. Give every row an ``id`` or none (a mix is an error:
a given "3" and a numbered 3 would collide). A row rejected after its problem was read keeps its
number, so fixing it shifts no other id. The solution's answer is extracted from its text
(:func:`prmkit.grade.extract_answer`) and graded against ``answer`` (:func:`prmkit.grade.grade`);
without a reference the grade is left unset. Steps are unlabelled; ``meta["prmkit_split"]`` says how
they were cut. Any other key is an error, since a typo (``anwser``) would otherwise lose the
reference silently: put extra data in ``meta``. No writer: write ``prmkit``.

>>> s = from_text({"problem": "1+1?", "solution": "1 + 1 = 2.\\n# Answer\\n\\n2", "answer": "2"})
>>> s.id, s.texts, s.answer, s.grade
('0/0', ['1 + 1 = 2.', '# Answer\\n\\n2'], '2', 'correct')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prmkit.convert.base import DEFAULTS, Options, numbered_rows, opt, req
from prmkit.grade import extract_answer, grade
from prmkit.schema import Problem, SchemaError, Solution, Step, check_type
from prmkit.steps import split_steps

DEFAULT_SPLIT = "newline"
"""How a ``text`` solution is cut by default: one step per line, the paper's format."""
TEXT_KEYS = ("problem", "solution", "answer", "id", "meta")


# --- the builder the whole-text readers share -----------------------------------------------------

def steps_of(text: Any, path: str, options: Options, default: str) -> tuple[list[Step], str]:
    """``text`` cut into unlabelled steps by ``options.split`` (else ``default``), and the mode used.

    >>> steps, how = steps_of("a\\n\\nb\\nc", "solution", Options(split="blank"), "newline")
    >>> [s.text for s in steps], how
    (['a', 'b\\nc'], 'blank')
    """
    check_type(text, (str,), path)
    how = options.split or default
    texts = split_steps(text, how, marker=options.marker if how == "marker" else "")
    if not texts:
        raise SchemaError(path, "empty solution text: nothing to cut into steps")
    return [Step.of(t) for t in texts], how


def grade_of(answer: str | None, gold: str | None, correct: bool | None) -> str | None:
    """The file's own correctness when it has one, else ``answer`` graded against ``gold``, else None.

    >>> (grade_of("5", "4", True), grade_of("5", "4", None), grade_of(None, "4", None),
    ...  grade_of("5", None, None))
    ('correct', 'incorrect', 'incorrect', None)
    """
    if correct is not None:
        return "correct" if correct else "incorrect"
    if gold is None:
        return None
    return grade(answer, gold).verdict


def sample_solution(problem: Problem, text: Any, path: str, options: Options, default: str, j: int,
                    answer: str | None, correct: bool | None = None, **fields) -> Solution:
    """Sample ``j`` of ``problem``: ``text`` (field ``path``) cut into steps, named ``<problem.id>/<j>``.

    ``answer`` is the sample's final answer (the file's own, or :func:`~prmkit.grade.extract_answer`
    of the text: the caller's choice), ``correct`` the file's own correctness (None: the answer is
    graded against ``problem.answer``). ``fields`` go to the :class:`Solution` (``scores``,
    ``generator``, ``meta``).

    >>> s = sample_solution(Problem("q", answer="4", id="p"), "2+2 = 4.\\n\\\\boxed{4}", "code[1]", Options(),
    ...                     "newline", 1, answer="4")
    >>> s.id, s.texts, s.grade, s.meta
    ('p/1', ['2+2 = 4.', '\\\\boxed{4}'], 'correct', {'prmkit_split': {'how': 'newline'}})
    """
    steps, how = steps_of(text, path, options, default)
    meta = {**fields.pop("meta", {}), "prmkit_split": {"how": how}}
    return Solution(problem, steps, id=f"{problem.id}/{j}", answer=answer,
                    grade=grade_of(answer, problem.answer, correct), meta=meta, **fields)


# --- the text format ------------------------------------------------------------------------------

def _key(value: Any, key: str) -> str | None:
    """An optional string-or-integer field as a string (``7`` -> ``"7"``)."""
    value = opt(value, key, (str, int))
    return None if value is None else str(value)


class ProblemNumbers:
    """Problem ids and sample numbers across the rows of one ``text`` file (see the module docstring).

    >>> n = ProblemNumbers()
    >>> n.take(None, "q1"), n.take(None, "q2"), n.take(None, "q1")
    (('0', 0), ('1', 0), ('0', 1))
    """

    def __init__(self):
        self.rows: dict[str, list] = {}  # problem key -> [problem id, rows so far]
        self.with_ids: bool | None = None

    def take(self, given: str | None, problem: str) -> tuple[str, int]:
        """(problem id, j) of the next row of a problem with id ``given`` (None: numbered by ``problem``)."""
        if self.with_ids is None:
            self.with_ids = given is not None
        if self.with_ids != (given is not None):
            raise SchemaError("id", "some rows have an id and others not: give every row an id, or none")
        key = given if given is not None else problem
        entry = self.rows.setdefault(key, [given if given is not None else str(len(self.rows)), 0])
        entry[1] += 1
        return entry[0], entry[1] - 1


def from_text(d: Any, options: Options = DEFAULTS, numbers: ProblemNumbers | None = None) -> Solution:
    """One ``text`` row as a :class:`Solution`, numbered by ``numbers`` (a fresh numbering by default)."""
    text = req(d, "problem", (str,))
    # Numbered as soon as its problem is known, so a later error does not shift the ids of the rows after it.
    pid, j = (numbers or ProblemNumbers()).take(_key(d, "id"), text)
    unknown = sorted(set(d) - set(TEXT_KEYS))
    if unknown:
        raise SchemaError(unknown[0], f"unknown field (known: {', '.join(TEXT_KEYS)}; "
                                      "put extra data in 'meta')")
    problem, solution = Problem(text, answer=_key(d, "answer"), id=pid), req(d, "solution", (str,))
    return sample_solution(problem, solution, "solution", options, DEFAULT_SPLIT, j, extract_answer(solution),
                           meta=opt(d, "meta", (dict,)) or {})


def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a ``text`` file (one per row)."""
    numbers = ProblemNumbers()
    return numbered_rows(path, lambda value, line: [from_text(value, options, numbers)], rejects)
