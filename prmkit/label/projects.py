"""Projects and generations: create a project, push candidates, QC items and screening sets into it.

A push is one *generation*: the candidates a selection strategy (:mod:`prmkit.label.queue`) chose,
numbered 1, 2, ... per project, as PRM800K released its phase-2 data between retrainings of the PRM.
Quality-control items (gold labels known) belong to a generation and are mixed into every labeller's
queue; the screening set is generation -1 and must be passed before real work.

An item stores the record stripped of every label, and the gold ratings apart; phase-2 items keep one
completion per step (the one the solution took), phase-1 items keep all alternatives.

>>> from prmkit.label.db import open_database
>>> from prmkit.schema import Solution
>>> db = open_database("sqlite://")
>>> with db.write() as s:
...     _ = create_project(s, "demo", phase=2, overlap=2)
...     gen, n = push(s, "demo", [Solution.from_steps("1+1?", ["1+1=2", "# Answer\\n\\n2"])] * 3, count=2)
>>> gen, n
(1, 2)
"""

from __future__ import annotations

import json
from random import Random

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from prmkit.label.models import KINDS, Item, Project
from prmkit.label.queue import select as select_candidates
from prmkit.schema import Solution


class LabelError(ValueError):
    """A request the labelling app refuses; ``status`` is the HTTP status it maps to."""

    status = 422


class NotFound(LabelError):
    status = 404


class Forbidden(LabelError):
    status = 403


class Conflict(LabelError):
    status = 409


SETTINGS = {"phase": (1, 2), "overlap": (1, 1000), "qc_every": (0, 100000), "screening_min": (0.0, 1.0)}
"""Project settings and their allowed ranges (phase is one of the two)."""


def _check_settings(settings: dict) -> dict:
    out = {}
    for key, value in settings.items():
        if value is None:
            continue
        if key not in SETTINGS:
            raise LabelError(f"unknown project setting {key!r} (known: {', '.join(SETTINGS)})")
        lo, hi = SETTINGS[key]
        if key == "phase" and value not in (1, 2):
            raise LabelError("phase is 1 (alternatives) or 2 (stop at the first bad step)")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            raise LabelError(f"{key} must be a number in [{lo}, {hi}], got {value!r}")
        out[key] = value
    return out


def create_project(s: Session, name: str, **settings) -> Project:
    """A new project; settings default to phase 2, overlap 1, a QC item every 10, screening bar 0.8."""
    if not name or len(name) > 200 or "/" in name:
        raise LabelError("a project name is 1 to 200 characters without '/'")
    if s.scalar(select(Project).where(Project.name == name)) is not None:
        raise Conflict(f"project {name!r} exists already")
    values = {"phase": 2, "overlap": 1, "qc_every": 10, "screening_min": 0.8, **_check_settings(settings)}
    project = Project(name=name, **values)
    s.add(project)
    s.flush()
    return project


def get_project(s: Session, name: str) -> Project:
    project = s.scalar(select(Project).where(Project.name == name))
    if project is None:
        raise NotFound(f"no project {name!r}")
    return project


def update_project(s: Session, name: str, **settings) -> Project:
    """Change settings; the phase of a project that has items cannot change."""
    project = get_project(s, name)
    values = _check_settings(settings)
    if "phase" in values and values["phase"] != project.phase and _n_items(s, project) > 0:
        raise Conflict("the phase of a project with items cannot change")
    for key, value in values.items():
        setattr(project, key, value)
    return project


def _n_items(s: Session, project: Project) -> int:
    return s.scalar(select(func.count(Item.id)).where(Item.project_id == project.id)) or 0


def latest_generation(s: Session, project: Project) -> int:
    """The newest real generation, 0 before the first push."""
    return s.scalar(select(func.max(Item.generation)).where(Item.project_id == project.id,
                                                             Item.kind == "real")) or 0


def strip_labels(solution: Solution, phase: int) -> tuple[dict, list[list[int | None]]]:
    """The record to serve (no labels, no gold answer exposure decided later) and the ratings it carried."""
    record = Solution.from_dict(solution.to_dict())
    if phase == 2:
        for step in record.steps:
            taken = step.taken
            if taken is not None:
                step.completions, step.chosen, step.human = [taken], 0, None
    record.steps = [st for st in record.steps if st.completions]
    gold = [[c.rating for c in st.completions] for st in record.steps]
    for st in record.steps:
        st.human = None
        for c in st.completions:
            c.rating, c.flagged, c.value, c.source = None, None, None, None
    for name in ("finish_reason", "labeller", "timestamp", "total_time_ms", "label_source"):
        setattr(record, name, None)
    return record.to_dict(), gold


def push(s: Session, project_name: str, candidates: list[Solution], *, kind: str = "real",
         strategy: str = "random", count: int | None = None, seed: int = 0,
         generation: int | None = None) -> tuple[int, int]:
    """Add the candidates ``strategy`` picks as items; return ``(generation, items added)``.

    ``kind="real"`` opens a new generation; ``qc`` items join ``generation`` (default: the newest,
    or 1 before any); ``screening`` items are generation -1. QC and screening records must carry gold
    ratings on at least one step.
    """
    if kind not in KINDS:
        raise LabelError(f"unknown item kind {kind!r} (expected one of {', '.join(KINDS)})")
    project = get_project(s, project_name)
    try:
        chosen = select_candidates(strategy, candidates, count, Random(seed))
    except ValueError as e:  # an unknown strategy name or a bad count: the caller's mistake, a 422
        raise LabelError(str(e)) from None
    gen = {"real": latest_generation(s, project) + 1, "screening": -1,
           "qc": generation if generation is not None else max(latest_generation(s, project), 1)}[kind]
    start = s.scalar(select(func.max(Item.position)).where(Item.project_id == project.id)) or 0
    for i, solution in enumerate(chosen):
        record, gold = strip_labels(solution, project.phase)
        if not record["steps"]:
            raise LabelError(f"candidate {i} ({solution.id or 'no id'}) has no steps")
        has_gold = any(r is not None for step in gold for r in step)
        if kind != "real" and not has_gold:
            raise LabelError(f"{kind} candidate {i} ({solution.id or 'no id'}) carries no gold ratings")
        s.add(Item(project_id=project.id, generation=gen, kind=kind, position=start + i + 1,
                   record=json.dumps(record, ensure_ascii=False), n_steps=len(record["steps"]),
                   gold=json.dumps(gold) if kind != "real" else None, n_assigned=0, strategy=strategy))
    s.flush()
    return gen, len(chosen)
