"""Export: every labelled assignment as a prmkit :class:`~prmkit.schema.Solution` (or a PRM800K record).

One record per (labeller, solution). The steps are those the labeller reached, with their ratings,
flags, the phase-1 choice or the labeller's own step; the full pre-generated text stays in
``prelabel.steps`` and the generator's answer in ``prelabel.answer``. Provenance as PRM800K keeps it:
``labeller`` (the account name), ``timestamp`` (when the assignment finished, UTC ISO 8601),
``generation`` (-1 for screening), ``quality_control``, ``screening``, ``total_time_ms``,
``finish_reason``, ``label_source="human"``; ``meta["prmkit_label"]`` names project, item and assignment.
PRM800K output goes through :func:`prmkit.convert.prm800k.to_prm800k`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from prmkit.io import write_records
from prmkit.label.flow import labels_of
from prmkit.label.models import HUMAN, Assignment, Item, Label
from prmkit.label.projects import LabelError, get_project
from prmkit.schema import Completion, Prelabel, Solution

FORMATS = ("prmkit", "prm800k")


def labelled_solution(a: Assignment, labels: dict[tuple[int, int], Label]) -> Solution:
    """The item's record with this assignment's labels and provenance."""
    item = a.item
    sol = Solution.from_dict(item.record_dict())
    if sol.prelabel is None:
        sol.prelabel = Prelabel(steps=sol.texts, answer=sol.answer)
    reached = max((step + 1 for step, _ in labels), default=0)
    steps = sol.steps[:reached]
    for i, step in enumerate(steps):
        step.chosen = None
        for j, completion in enumerate(step.completions):
            lab = labels.get((i, j))
            if lab is not None:
                completion.rating, completion.flagged = lab.rating, bool(lab.flagged)
                if lab.chosen:
                    step.chosen = j
        human = labels.get((i, HUMAN))
        if human is not None:
            step.human = Completion(human.text or "", rating=human.rating)
    sol.steps = steps
    sol.labeller, sol.generation = a.user.name, item.generation
    sol.quality_control, sol.screening = item.kind == "qc", item.kind == "screening"
    sol.finish_reason, sol.total_time_ms, sol.label_source = a.finish_reason, a.time_ms, "human"
    when = a.finished_at or a.started_at
    sol.timestamp = when.isoformat() if when else None
    sol.meta = {**sol.meta, "prmkit_label": {"project": item.project.name, "item": item.id, "assignment": a.id,
                                             "status": a.status}}
    return sol


def export(s: Session, project_name: str, kinds: Iterable[str] = ("real", "qc", "screening"),
           include_open: bool = False) -> Iterator[Solution]:
    """The labelled solutions of a project, in assignment order."""
    project = get_project(s, project_name)
    q = (select(Assignment).join(Item).where(Item.project_id == project.id, Item.kind.in_(list(kinds)))
         .order_by(Assignment.id))
    if not include_open:
        q = q.where(Assignment.status == "done")
    for a in s.scalars(q):
        yield labelled_solution(a, labels_of(s, a))


def as_format(solutions: Iterable[Solution], fmt: str) -> Iterator[Solution | dict]:
    """The records in ``fmt``: prmkit records, or PRM800K raw records via :mod:`prmkit.convert.prm800k`."""
    if fmt not in FORMATS:
        raise LabelError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})")
    if fmt == "prmkit":
        yield from solutions
        return
    from prmkit.convert.prm800k import to_prm800k
    for sol in solutions:
        yield to_prm800k(sol)


def write_export(s: Session, project_name: str, path: str | os.PathLike, fmt: str = "prmkit",
                 kinds: Iterable[str] = ("real", "qc", "screening"), include_open: bool = False) -> int:
    """Write the export to a JSONL file (atomically); return the number of records."""
    return write_records(path, as_format(export(s, project_name, kinds, include_open), fmt))
