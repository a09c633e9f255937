"""Problem files: MATH / MATH-500, GSM8K and the competition sets (AIME, AMC), both ways.

They hold :class:`~prmkit.schema.Problem` records, not solutions. A MATH-500 row, annotated::

    {
      "problem": "Convert the point $(0,3)$ ...",     # -> Problem.problem
      "solution": "We have that $r = ...$ ... $\\\\boxed{...}$.",   # -> Problem.solution
      "answer": "\\\\left( 3, \\\\frac{\\\\pi}{2} \\\\right)",     # -> Problem.answer (original MATH has
                                                      #    none: taken from the last \\\\boxed{})
      "subject": "Precalculus",                       # -> Problem.subject (MATH's "type")
      "level": 2,                                     # -> Problem.level (MATH: "Level 2")
      "unique_id": "test/precalculus/807.json"        # -> Problem.id
    }

GSM8K (``gsm8k``): ``{"question": "Janet's ducks ...", "answer": "Janet sells ... \\n#### 18"}`` ->
``problem``; the text before ``#### `` is ``solution``, the number after it ``answer``.

Competition sets (``competition``): ``{"id": 0, "problem": "...", "question": "...", "answer": 27.0,
"url": "https://...", "solution": "..."}``, where ``problem`` or ``question`` (or both, equal) hold
the problem, ``id`` is a number or a string (-> Problem.id as a string), ``answer`` a string or a
number (an integral number becomes "27"). Numbers, which of the two problem keys were there, and
keys with no field (``url``) are kept in ``meta["competition"]`` so the rows come back unchanged.
Unknown keys of MATH and GSM8K rows go to ``meta["math"]`` / ``meta["gsm8k"]`` the same way.

>>> p = from_gsm8k({"question": "2+2?", "answer": "2+2 = 4.\\n#### 4"})
>>> p.answer, p.solution
('4', '2+2 = 4.')
>>> to_gsm8k(p)
{'question': '2+2?', 'answer': '2+2 = 4.\\n#### 4'}
>>> from_competition({"id": 3, "question": "x?", "answer": 27.0}).answer
'27'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prmkit.convert.base import DEFAULTS, Options, opt, problems_of, req, rows
from prmkit.grade import extract_answer
from prmkit.io import atomic_output, dumps
from prmkit.schema import Problem, SchemaError, check_type

MATH_KEYS = ("problem", "solution", "answer", "subject", "type", "level", "unique_id")
MATH_DEFAULT = ["problem", "solution", "answer", "subject", "level", "unique_id"]


def from_math(d: Any) -> Problem:
    """One MATH / MATH-500 row as a :class:`Problem`."""
    solution = opt(d, "solution", (str,))
    p = Problem(req(d, "problem", (str,)), solution=solution, id=opt(d, "unique_id", (str,)),
                answer=opt(d, "answer", (str,)), level=opt(d, "level", (int, str)),
                subject=opt(d, "subject", (str,)) or opt(d, "type", (str,)), source="MATH")
    if p.answer is None:
        p.answer = extract_answer(solution)
    keys = [k for k in MATH_KEYS if k in d]
    note: dict = {}
    if keys != [k for k in MATH_DEFAULT if _math_values(p).get(k) is not None]:
        note["keys"] = keys
    extra = {k: v for k, v in d.items() if k not in MATH_KEYS}
    if extra:
        note["extra"] = extra
    p.meta = {"math": note} if note else {}
    return p


def _math_values(p: Problem) -> dict:
    return {"problem": p.problem, "solution": p.solution, "answer": p.answer, "subject": p.subject,
            "type": p.subject, "level": p.level, "unique_id": p.id}


def to_math(p: Problem) -> dict:
    """A :class:`Problem` as a MATH-500 row (the inverse of :func:`from_math`)."""
    values, note = _math_values(p), p.meta.get("math", {})
    keys = note.get("keys", [k for k in MATH_DEFAULT if values[k] is not None])
    out = {k: values[k] for k in keys}
    out.update(note.get("extra", {}))
    return out


def from_gsm8k(d: Any) -> Problem:
    """One GSM8K row as a :class:`Problem`: the answer is what follows ``#### ``."""
    text = req(d, "answer", (str,))
    solution, mark, answer = text.rpartition("#### ")
    if not mark or not answer.strip():
        raise SchemaError("answer", "no final answer after '#### '")
    if solution and not solution.endswith("\n"):
        raise SchemaError("answer", "'#### ' must start a line")
    extra = {k: v for k, v in d.items() if k not in ("question", "answer")}
    return Problem(req(d, "question", (str,)), answer=answer, solution=solution[:-1] if solution else None,
                   source="GSM8K", meta={"gsm8k": extra} if extra else {})


def to_gsm8k(p: Problem) -> dict:
    """A :class:`Problem` as a GSM8K row."""
    if p.answer is None:
        raise ValueError(f"GSM8K rows need an answer (problem {p.id or p.problem[:40]!r})")
    answer = (p.solution + "\n" if p.solution else "") + "#### " + p.answer
    return {"question": p.problem, "answer": answer, **p.meta.get("gsm8k", {})}


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def from_competition(d: Any) -> Problem:
    """One competition row (AIME / AMC style) as a :class:`Problem`."""
    check_type(d, (dict,), "record")
    text = opt(d, "problem", (str,)) or opt(d, "question", (str,))
    if text is None:
        raise SchemaError("problem", "missing required field (neither 'problem' nor 'question')")
    answer, qid = opt(d, "answer", (str, int, float)), opt(d, "id", (str, int))
    note: dict = {"keys": list(d)}
    note.update({k: d[k] for k in ("answer", "id") if k in d and not isinstance(d[k], str)})
    note.update({k: v for k, v in d.items() if k not in ("problem", "question", "answer", "id", "solution")})
    if "problem" in d and "question" in d and d["problem"] != d["question"]:
        note["question"] = d["question"]
    return Problem(text, answer=None if answer is None else _number(answer), id=None if qid is None else str(qid),
                   solution=opt(d, "solution", (str,)), meta={"competition": note})


def to_competition(p: Problem) -> dict:
    """A :class:`Problem` as a competition row (the inverse of :func:`from_competition`)."""
    note = p.meta.get("competition", {})
    values = {"problem": p.problem, "question": note.get("question", p.problem), "answer": note.get("answer", p.answer),
              "id": note.get("id", p.id), "solution": p.solution}
    keys = note.get("keys", [k for k in ("id", "problem", "solution", "answer") if values[k] is not None])
    return {k: values[k] if k in values else note.get(k) for k in keys}


def _reader(parse):
    def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Problem]:
        return rows(path, parse, rejects)
    read.__doc__ = f"Stream the problems of a file with :func:`{parse.__name__}`."
    return read


def _writer(to_row):
    def write(records: Iterable[Any], path, options: Options = DEFAULTS, dropped=None) -> int:
        n = 0
        with atomic_output(path) as f:
            for p in problems_of(records):
                f.write(dumps(to_row(p)) + "\n")
                n += 1
        return n
    write.__doc__ = f"Write problems (or the problems of solutions) with :func:`{to_row.__name__}`; return rows."
    return write


read_math, write_math = _reader(from_math), _writer(to_math)
read_gsm8k, write_gsm8k = _reader(from_gsm8k), _writer(to_gsm8k)
read_competition, write_competition = _reader(from_competition), _writer(to_competition)
