"""Math-Shepherd's marker format (``input`` / ``label`` / ``task``), both ways.

Steps are tagged in ``input`` by a marker token (``ки``); ``label`` is the same string with each
marker replaced by ``+`` (the step can still reach the right answer) or ``-``. One row, annotated::

    {
      "input": "Janet pays $40/hour ... in a year? Step 1: Janet spends 3 hours + 5 hours = 8 hours ... ки\\n
                Step 2: She spends 40 * 3 = 120 on clarinet lessons per week. ки\\n ...
                Step 5: ... The answer is: 13520 ки",
                     # question, one space, then "Step k: <text> ки" joined by "\\n"
      "label": "Janet pays ... Step 1: Janet spends ... +\\nStep 2: ... +\\n ... The answer is: 13520 -",
                     # the same with each marker replaced by the step's label
      "task": "GSM8K"                                     # -> Problem.source
    }

Reading: the question is the text before ``Step 1:``; each step loses its ``Step k:`` prefix (the
writer adds it back), is rated +1 or -1 with ``label_source`` "rollout" (the labels come from
Monte-Carlo completions), and ``The answer is: X`` of the last step becomes ``Solution.answer``.
Writing labels steps with the neutral policy and supervision rule (see :mod:`prmkit.convert.trl`);
``--supervise all`` keeps every step, as Math-Shepherd does. Soft values, alternatives and
provenance are lost; the marker and separator are options (``--marker``).

>>> row = {"input": "1+1? Step 1: 1+1 = 2. ки\\nStep 2: The answer is: 2 ки",
...        "label": "1+1? Step 1: 1+1 = 2. +\\nStep 2: The answer is: 2 +", "task": "toy"}
>>> s = from_row(row, Options())
>>> s.texts, s.ratings, s.answer
(['1+1 = 2.', 'The answer is: 2'], [1, 1], '2')
>>> to_row(s, Options(supervise="all")) == row
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from prmkit.convert.base import (
    DEFAULTS,
    Dropped,
    Options,
    linear,
    opt,
    req,
    rows,
    supervised,
    text_of,
    write_rows,
)
from prmkit.schema import Problem, SchemaError, Solution, Step

STEP_PREFIX = re.compile(r"Step (\d+): ")
ANSWER = re.compile(r"The answer is:\s*(.+?)\s*\Z", re.DOTALL)


def _tags(label: str, segments: list[str]) -> list[int]:
    """The rating at each marker: ``label`` must be the input with each marker replaced by + or -."""
    ratings, pos = [], 0
    for i, seg in enumerate(segments[:-1]):
        if not label.startswith(seg, pos):
            raise SchemaError("label", f"does not match the input before step {i + 1}")
        pos += len(seg)
        tag = label[pos: pos + 1]
        if tag not in ("+", "-"):
            raise SchemaError("label", f"expected '+' or '-' for step {i + 1}, got {tag!r}")
        ratings.append(1 if tag == "+" else -1)
        pos += 1
    if label[pos:] != segments[-1]:
        raise SchemaError("label", "does not match the input after the last step")
    return ratings


def _split(inp: str, options: Options) -> tuple[str, list[str]]:
    """The question and the step texts of an ``input``."""
    segments = inp.split(options.marker)
    if len(segments) < 2:
        raise SchemaError("input", f"no step marker {options.marker!r}")
    first = segments[0].find("Step 1:")
    if first < 0:
        raise SchemaError("input", "no 'Step 1:' after the question")
    question = segments[0][:first].rstrip(" ")
    texts = [segments[0][first:]] + [s.removeprefix(options.step_separator) for s in segments[1:-1]]
    texts = [t.removesuffix(" ") for t in texts]
    for i, t in enumerate(texts):
        match = STEP_PREFIX.match(t)
        if match and int(match.group(1)) == i + 1:
            texts[i] = t[match.end():]
        text_of(texts[i], f"input (step {i + 1})")
    return question, texts


def from_row(d: Any, options: Options) -> Solution:
    """One Math-Shepherd row as a :class:`Solution` rated +1/-1."""
    inp = req(d, "input", (str,))
    question, texts = _split(inp, options)
    ratings = _tags(req(d, "label", (str,)), inp.split(options.marker))
    answer = ANSWER.search(texts[-1]) if texts else None
    s = Solution(Problem(question, source=opt(d, "task", (str,))), [Step.of(t, rating=r) for t, r in zip(texts, ratings)],
                 label_source="rollout", answer=answer.group(1) if answer else None)
    extra = {k: v for k, v in d.items() if k not in ("input", "label", "task")}
    if extra:
        s.meta = {"math_shepherd": extra}
    return s


def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a Math-Shepherd file."""
    return rows(path, lambda d: from_row(d, options), rejects)


def to_row(s: Solution, options: Options) -> dict:
    """One solution as a Math-Shepherd row; raises ``Dropped`` when it cannot be labelled."""
    path = linear(s)
    labels = supervised([c.rating for c in path], options)
    if not labels:
        raise Dropped("no steps")
    steps = [f"Step {i + 1}: {c.text} " for i, c in enumerate(path[: len(labels)])]
    body = options.step_separator.join(step + options.marker for step in steps)
    label = options.step_separator.join(step + ("+" if ok else "-") for step, ok in zip(steps, labels))
    row = {"input": f"{s.problem.problem} {body}", "label": f"{s.problem.problem} {label}"}
    if s.problem.source is not None:
        row["task"] = s.problem.source
    row.update(s.meta.get("math_shepherd", {}))
    return row


def write(records: Iterable[Solution], path, options: Options = DEFAULTS, dropped=None) -> int:
    """Write solutions as Math-Shepherd rows (atomically); return the number of rows."""
    return write_rows(records, path, to_row, options, dropped)
