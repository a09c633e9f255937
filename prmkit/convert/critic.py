"""The denormalised "stepwise-critic" rows of PRM800K: one row per candidate step, both ways.

Each row repeats the problem and the steps taken so far; consecutive rows with the same prefix are
the alternatives of one step. One row, annotated::

    {
      "instruction": "Three pencils and a jumbo eraser cost ...",  # -> Problem.problem
      "responses": ["Let's call the price of a pencil p ..."],     # the steps taken before this one
      "next_response": "So the price of a pencil is 29 cents.",    # a candidate step (Completion.text)
      "answer": "29",                 # the candidate's "# Answer" block, split off (null if none);
                                      #   rejoined as text + "\\n\\n# Answer\\n\\n" + answer
      "is_human_response": false,     # true: the labeller wrote it (-> Step.human)
      "is_solution": false,           # true: the chosen step that ends the solution with an answer
      "is_preferred_response": false, # true: the step the solution went on with (-> Step.chosen)
      "rating": 1                     # -1 / 0 / +1, null when unrated (human-written steps)
    }

Reading rebuilds each solution's step tree: a solution starts where ``responses`` is empty, and
each later step must continue it (``responses`` = the steps taken so far), else the row is an error.
Only PRM800K's labels survive the trip: labeller, timestamps, ``flagged`` and ``finish_reason``
are not in these rows. Writing emits every completion of every step (prmkit -> critic -> prmkit is
exact for records that hold only texts and ratings); ``meta["critic"]`` records a human row that is
not last in its step (``human_at``) and an ``is_solution`` that does not follow the rule above.

>>> rows = [{"instruction": "1+1?", "responses": [], "next_response": "1+1 = 2.", "answer": "2",
...          "is_human_response": False, "is_solution": True, "is_preferred_response": True, "rating": 1}]
>>> s = solution_of([rows_to_step(rows)], "1+1?")
>>> s.texts, s.answer
(['1+1 = 2.\\n\\n# Answer\\n\\n2'], '2')
>>> list(to_rows(s)) == rows
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prmkit.convert.base import ANSWER_MARK, DEFAULTS, Options, opt, req, text_of
from prmkit.grade import extract_answer
from prmkit.io import RecordError, atomic_output, dumps, iter_json
from prmkit.schema import Completion, Problem, SchemaError, Solution, Step, check_rating, check_type

KEYS = ("instruction", "responses", "next_response", "answer", "is_human_response", "is_solution",
        "is_preferred_response", "rating")


def check_row(d: Any) -> dict:
    """Check one row's fields and types; return it."""
    check_type(d, (dict,), "record")
    req(d, "instruction", (str,))
    for i, r in enumerate(req(d, "responses", (list,))):
        check_type(r, (str,), f"responses[{i}]")
    text_of(req(d, "next_response", (str,)), "next_response")
    opt(d, "answer", (str,))
    for key in ("is_human_response", "is_solution", "is_preferred_response"):
        req(d, key, (bool,))
    check_rating(d.get("rating"), "rating")
    unknown = sorted(set(d) - set(KEYS))
    if unknown:
        raise SchemaError(unknown[0], f"unknown field (known: {', '.join(KEYS)})")
    return d


def rows_to_step(group: list[dict]) -> Step:
    """The rows of one step (same instruction and responses) as a :class:`Step`."""
    completions, human, chosen, meta = [], None, None, {}
    for j, row in enumerate(group):
        text = row["next_response"] + (ANSWER_MARK + row["answer"] if row.get("answer") is not None else "")
        c = Completion(text, rating=row.get("rating"))
        if row["is_solution"] != (row["is_preferred_response"] and row.get("answer") is not None):
            c.meta = {"critic": {"is_solution": row["is_solution"]}}
        if row["is_human_response"]:
            if human is not None:
                raise SchemaError("is_human_response", "two human-written rows for one step")
            human = c
            if j != len(group) - 1:
                meta["human_at"] = j
            continue
        if row["is_preferred_response"]:
            if chosen is not None:
                raise SchemaError("is_preferred_response", "two preferred rows for one step")
            chosen = len(completions)
        completions.append(c)
    if human is not None and chosen is None and not group[meta.get("human_at", -1)]["is_preferred_response"]:
        meta["human_not_preferred"] = True
    return Step(completions, chosen, human, meta={"critic": meta} if meta else {})


def solution_of(steps: list[Step], instruction: str) -> Solution:
    s = Solution(Problem(instruction), steps, label_source="human")
    s.answer = extract_answer(s.texts[-1]) if s.texts else None
    return s


def _checked(path, rejects) -> Iterator[tuple[int, dict, Any]]:
    for raw in iter_json(path, rejects):
        try:
            yield raw.line, check_row(raw.value), raw
        except SchemaError as e:
            error = RecordError(path, raw.line, e.field, e.message)
            if rejects is None:
                raise error from None
            rejects.add(error, raw)


def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions rebuilt from a stepwise-critic file (one solution in memory at a time)."""
    steps: list[Step] = []
    group: list[dict] = []
    instruction, taken = None, []
    for line, row, raw in _checked(path, rejects):
        if group and (row["instruction"], row["responses"]) == (group[0]["instruction"], group[0]["responses"]):
            group.append(row)
            continue
        if group:
            steps.append(rows_to_step(group))
            taken.append(steps[-1].text)
        if not row["responses"] or row["instruction"] != instruction:
            if steps:
                yield solution_of(steps, instruction)
            steps, taken, instruction = [], [], row["instruction"]
        if row["responses"] != taken:
            error = RecordError(path, line, "responses", "does not continue the solution of the rows before "
                                "(expected the steps taken so far, or [] to start a new solution)")
            if rejects is None:
                raise error
            rejects.add(error, raw)
            group = []
            continue
        group = [row]
    if group:
        steps.append(rows_to_step(group))
    if steps:
        yield solution_of(steps, instruction)


def _row(s: Solution, responses: list[str], c: Completion, human: bool, preferred: bool) -> dict:
    text, answer = c.text, None
    if ANSWER_MARK in text:
        text, answer = text.rsplit(ANSWER_MARK, 1)
    is_solution = c.meta.get("critic", {}).get("is_solution", preferred and answer is not None)
    return {"instruction": s.problem.problem, "responses": list(responses), "next_response": text,
            "answer": answer, "is_human_response": human, "is_solution": is_solution,
            "is_preferred_response": preferred, "rating": c.rating}


def to_rows(s: Solution) -> Iterator[dict]:
    """The rows of one solution: every completion of every step, in order."""
    responses: list[str] = []
    for step in s.steps:
        meta = step.meta.get("critic", {})
        out = [_row(s, responses, c, False, i == step.chosen) for i, c in enumerate(step.completions)]
        if step.human is not None:
            preferred = step.chosen is None and not meta.get("human_not_preferred")
            out.insert(meta.get("human_at", len(out)), _row(s, responses, step.human, True, preferred))
        yield from out
        if step.text is not None:
            responses.append(step.text)


def write(records: Iterable[Solution], path, options: Options = DEFAULTS, dropped=None) -> int:
    """Write solutions as stepwise-critic rows (atomically); return the number of rows."""
    n = 0
    with atomic_output(path) as f:
        for s in records:
            for row in to_rows(s):
                f.write(dumps(row) + "\n")
                n += 1
    return n
