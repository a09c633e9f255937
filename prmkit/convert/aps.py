"""Monte-Carlo-valued steps (MATH-APS / OmegaPRM style), flat and tree, both ways.

Each step (or prefix) carries ``mc_value``: the share of rollouts from it that reach the right
answer, prmkit's ``Completion.value`` with ``label_source`` "rollout". A flat row, annotated::

    {
      "question": "Let $a,$ $b,$ and $c$ be constants ...",   # -> Problem.problem
      "final_answer": "64",                                   # -> Problem.answer
      "question_id": 2,                                       # -> Problem.id (as the string "2")
      "reasoning_steps": [                 # one entry per prefix searched, each a separate sample
        {"solution_prefix": "Let $a,$ ...", "mc_value": 0.75},  # the bare question: a solution
                                                                #   with no steps, value in outcome
        {"solution_prefix": "Let $a,$ ...\\n\\n\\nTo solve the inequality ...", "mc_value": 1.0}
      ]                                    # question + "\\n\\n\\n" + text: one solution, one step
    }

A tree row (``math-aps-tree``) has ``reasoning_steps`` as a node ``{"text", "mc_value",
"children": [...]}`` whose root is the question: each root-to-leaf path becomes one solution whose
steps are the nodes' texts and values; the bare question is a solution with no steps, its value in
``outcome``; ``meta["math_aps"]["path"]`` keeps the child index at each level, so the tree is rebuilt
exactly. Flat prefixes are not split into steps (their boundaries are not marked); a separator
other than three newlines is kept in ``meta["math_aps"]["sep"]``. Writing a multi-step solution flat
emits one prefix per valued step (joined by blank lines). Ratings and provenance are lost both ways.

>>> row = {"question": "1+1?", "final_answer": "2", "reasoning_steps": [
...     {"solution_prefix": "1+1?", "mc_value": 0.5}, {"solution_prefix": "1+1?\\n\\n\\n2", "mc_value": 1.0}],
...     "question_id": 7}
>>> [(s.texts, s.values, s.outcome) for s in from_flat(row)]
[([], [], 0.5), (['2'], [1.0], None)]
>>> to_flat(list(from_flat(row))) == row
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prmkit.convert.base import DEFAULTS, Dropped, Options, count_drop, grouped, req, rows, text_of
from prmkit.io import atomic_output, dumps
from prmkit.schema import Problem, SchemaError, Solution, Step, check_type, check_value

SEP = "\n\n\n"


def _problem(d: Any) -> Problem:
    qid = req(d, "question_id", (int, str))
    return Problem(req(d, "question", (str,)), answer=req(d, "final_answer", (str,)), id=str(qid))


def _root(problem: Problem, value: Any, path: str) -> Solution:
    return Solution(problem, [], outcome=check_value(value, path), label_source="rollout")


def from_flat(d: Any) -> Iterator[Solution]:
    """The solutions of one flat row: one per prefix."""
    problem = _problem(d)
    for i, entry in enumerate(req(d, "reasoning_steps", (list,))):
        where = f"reasoning_steps[{i}]"
        prefix = req(entry, "solution_prefix", (str,), where)
        value = req(entry, "mc_value", (int, float), where)
        if prefix == problem.problem:
            yield _root(problem, value, f"{where}.mc_value")
            continue
        if not prefix.startswith(problem.problem):
            raise SchemaError(f"{where}.solution_prefix", "does not start with the question")
        rest = prefix[len(problem.problem):]
        text = rest.lstrip("\n")
        step = Step.of(text_of(text, f"{where}.solution_prefix"), value=check_value(value, f"{where}.mc_value"))
        sep = rest[: len(rest) - len(text)]
        yield Solution(problem, [step], label_source="rollout", meta={"math_aps": {"sep": sep}} if sep != SEP else {})


def _paths(node: dict, where: str, prefix: list, index: list) -> Iterator[tuple[list, list]]:
    children = req(node, "children", (list,), where)
    if not children and prefix:
        yield prefix, index
    for i, child in enumerate(children):
        at = f"{where}.children[{i}]"
        text = text_of(req(child, "text", (str,), at), f"{at}.text")
        step = Step.of(text, value=check_value(req(child, "mc_value", (int, float), at), f"{at}.mc_value"))
        yield from _paths(child, at, prefix + [step], index + [i])


def from_tree(d: Any) -> Iterator[Solution]:
    """The solutions of one tree row: the bare question, then one per root-to-leaf path."""
    problem = _problem(d)
    root = req(d, "reasoning_steps", (dict,))
    check_type(req(root, "text", (str,), "reasoning_steps"), (str,), "reasoning_steps.text")
    if root["text"] != problem.problem:
        problem.meta = {"math_aps": {"root_text": root["text"]}}
    yield _root(problem, req(root, "mc_value", (int, float), "reasoning_steps"), "reasoning_steps.mc_value")
    for steps, index in list(_paths(root, "reasoning_steps", [], [])):
        yield Solution(problem, steps, label_source="rollout", meta={"math_aps": {"path": index}})


def read_flat(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a flat MATH-APS file."""
    for group in rows(path, lambda d: list(from_flat(d)), rejects):
        yield from group


def read_tree(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a MATH-APS tree file."""
    for group in rows(path, lambda d: list(from_tree(d)), rejects):
        yield from group


def _row(p: Problem, steps: Any) -> dict:
    qid = int(p.id) if p.id is not None and p.id.isdigit() else p.id
    return {"question": p.problem, "final_answer": p.answer, "reasoning_steps": steps, "question_id": qid}


def _prefixes(s: Solution) -> Iterator[dict]:
    if not s.steps:
        if s.outcome is None:
            raise Dropped("no steps and no outcome value")
        yield {"solution_prefix": s.problem.problem, "mc_value": s.outcome}
        return
    sep = s.meta.get("math_aps", {}).get("sep", SEP)
    texts, values = s.texts, s.values
    if all(v is None for v in values):
        raise Dropped("no Monte-Carlo values")
    for j, value in enumerate(values):
        if value is not None:
            yield {"solution_prefix": s.problem.problem + sep + "\n\n".join(texts[: j + 1]), "mc_value": value}


def to_flat(group: list[Solution], dropped=None) -> dict:
    """One flat row from the solutions of one problem."""
    entries = []
    for s in group:
        try:
            entries += list(_prefixes(s))
        except Dropped as e:
            count_drop(dropped, e.reason)
    return _row(group[0].problem, entries)


def to_tree(group: list[Solution], dropped=None) -> dict:
    """One tree row from the solutions of one problem (paths merged where they share steps)."""
    p = group[0].problem
    root = {"text": p.meta.get("math_aps", {}).get("root_text", p.problem), "mc_value": None, "children": []}
    for s in group:
        if not s.steps:
            root["mc_value"] = s.outcome
            continue
        if any(v is None for v in s.values):
            count_drop(dropped, "a step without a Monte-Carlo value")
            continue
        node, index = root, s.meta.get("math_aps", {}).get("path")
        for depth, step in enumerate(s.steps):
            node = _child(node, step, index[depth] if index and depth < len(index) else None)
    return _row(p, root)


def _child(node: dict, step: Step, index: int | None) -> dict:
    children = node["children"]
    if index is not None and index < len(children):
        return children[index]
    if index is None:
        same = [c for c in children if c["text"] == step.text and c["mc_value"] == step.value]
        if same:
            return same[0]
    children.append({"text": step.text, "mc_value": step.value, "children": []})
    return children[-1]


def _writer(to_row):
    def write(records: Iterable[Solution], path, options: Options = DEFAULTS, dropped=None) -> int:
        n = 0
        with atomic_output(path) as f:
            for group in grouped(records, key=lambda s: (s.problem.id, s.problem.problem)):
                f.write(dumps(to_row(group, dropped)) + "\n")
                n += 1
        return n
    write.__doc__ = f"Write solutions grouped by problem with :func:`{to_row.__name__}` (atomically); return rows."
    return write


write_flat = _writer(to_flat)
write_tree = _writer(to_tree)
