"""ProcessBench rows (steps + index of the first wrong step), both ways.

ProcessBench (QwenLM/ProcessBench ``dataset/*.json``, JSON arrays). One row, annotated::

    {
      "id": "gsm8k-0",                          # -> Solution.id
      "generator": "Qwen2-7B-Instruct",         # -> Solution.generator.name
      "problem": "Sue lives in a fun neighborhood ...",   # -> Problem.problem
      "steps": ["To find out how many ...", "On Saturday, ..."],   # one text per step
      "final_answer_correct": false,            # -> Solution.grade "correct" / "incorrect"
      "label": 1                                # 0-based index of the earliest wrong step, -1 if none
    }

Reading rates the steps before ``label`` +1, the step at ``label`` -1 and leaves the later ones
unrated (experts stopped there), with ``label_source`` "human"; ``Solution.answer`` is the final
answer found in the steps (:func:`prmkit.grade.extract_answer` of their text, usually the last
``\\boxed{}``), derived and so not written back. Writing takes the first wrong step
under the neutral policy (a neutral step needs ``--neutral``); ratings after it, alternatives,
soft values and provenance are lost; a solution without a grade is dropped (``final_answer_correct``
cannot be left out). A file named ``*.json`` is written as a JSON array like the originals, anything
else as JSON Lines.

>>> row = {"id": "x-0", "generator": "m", "problem": "1+1?", "steps": ["1+1 = 3.", "So 3."],
...        "final_answer_correct": False, "label": 0}
>>> s = from_row(row)
>>> s.ratings, s.grade, s.answer
([-1, None], 'incorrect', None)
>>> from_row({**row, "steps": ["1+1 = 2.", "So $\\\\boxed{2}$."], "label": -1}).answer
'2'
>>> to_row(s, Options()) == row
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prmkit.convert.base import (
    DEFAULTS,
    Dropped,
    Options,
    hard_label,
    linear,
    opt,
    req,
    rows,
    text_of,
    write_rows,
)
from prmkit.grade import extract_answer
from prmkit.schema import Generator, Problem, SchemaError, Solution, Step

KEYS = ("id", "generator", "problem", "steps", "final_answer_correct", "label")


def steps_and_label(d: Any) -> tuple[list, int]:
    """A row's ``steps`` and its ``label`` (0-based first wrong step, -1: none), checked: what every
    reader of a ProcessBench row needs (this converter, and ``prmkit eval steps``, which needs no more).

    >>> steps_and_label({"steps": ["a", "b"], "label": 1})
    (['a', 'b'], 1)
    """
    texts = req(d, "steps", (list,))
    label = req(d, "label", (int,))
    if not -1 <= label < len(texts):
        raise SchemaError("label", f"first-error index {label} but the solution has {len(texts)} steps")
    return texts, label


def from_row(d: Any) -> Solution:
    """One ProcessBench row as a :class:`Solution`."""
    texts, label = steps_and_label(d)
    ratings = [1 if label == -1 or i < label else -1 if i == label else None for i in range(len(texts))]
    steps = [Step.of(text_of(t, f"steps[{i}]"), rating=r) for i, (t, r) in enumerate(zip(texts, ratings))]
    answer = extract_answer("\n".join(texts))
    correct = req(d, "final_answer_correct", (bool,))
    generator = opt(d, "generator", (str,))
    extra = {k: v for k, v in d.items() if k not in KEYS}
    return Solution(Problem(req(d, "problem", (str,))), steps, id=opt(d, "id", (str,)), answer=answer,
                    grade="correct" if correct else "incorrect", label_source="human",
                    generator=Generator(generator) if generator is not None else None,
                    meta={"processbench": extra} if extra else {})


def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a ProcessBench file (JSON array or JSON Lines)."""
    return rows(path, from_row, rejects)


def first_error(ratings: list[int | None], options: Options) -> int:
    """0-based index of the first wrong step under the neutral policy, or -1.

    >>> first_error([1, 0, -1], Options(neutral="negative")), first_error([1, None], Options())
    (1, -1)
    """
    for i, rating in enumerate(ratings):
        if hard_label(rating, options) is False:  # unrated steps (None) are passed over
            return i
    return -1


def to_row(s: Solution, options: Options) -> dict:
    """One solution as a ProcessBench row; raises ``Dropped`` without a grade."""
    if s.grade is None:
        raise Dropped("no grade (final_answer_correct)")
    path = linear(s)
    if not path:
        raise Dropped("no steps")
    row = {"id": s.id, "generator": s.generator.name if s.generator else None, "problem": s.problem.problem,
           "steps": [c.text for c in path], "final_answer_correct": s.grade == "correct",
           "label": first_error([c.rating for c in path], options)}
    row.update(s.meta.get("processbench", {}))
    return row


def write(records: Iterable[Solution], path, options: Options = DEFAULTS, dropped=None) -> int:
    """Write ProcessBench rows (a JSON array for ``*.json``, else JSON Lines); return the count."""
    return write_rows(records, path, to_row, options, dropped, array=str(path).endswith(".json"))
