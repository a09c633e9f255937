"""Is the labelling database consistent? The checks run after a crash and by ``GET /api/admin/check``.

Beyond the backend's own check (SQLite's ``PRAGMA integrity_check``, PostgreSQL's amcheck) it verifies what the app promises:
no label stored twice, every label on a step its item has, phase-2 labels without gaps, finished
assignments with a finish reason (and found_error ending on a Bad step), open ones without, and each
real item's ``n_assigned`` equal to its number of assignments (the overlap counter).

>>> from prmkit.label.db import open_database
>>> check_database(open_database("sqlite://"))["ok"]
True
"""

from __future__ import annotations

from sqlalchemy import func, select

from prmkit.label.db import Database
from prmkit.label.models import Assignment, Item, Label, Project


def _problems(s) -> list[str]:
    out = []
    dups = s.execute(select(Label.assignment_id, Label.step, Label.completion, func.count(Label.id))
                     .group_by(Label.assignment_id, Label.step, Label.completion).having(func.count(Label.id) > 1)).all()
    out += [f"label stored {n} times: assignment {a} step {st} completion {c}" for a, st, c, n in dups]
    beyond = s.execute(select(Label.id, Label.step, Item.n_steps).select_from(Label)
                       .join(Assignment, Label.assignment_id == Assignment.id).join(Item, Assignment.item_id == Item.id)
                       .where(Label.step >= Item.n_steps)).all()
    out += [f"label {i} on step {st} of an item with {n} steps" for i, st, n in beyond]
    counts = s.execute(select(Item.id, Item.n_assigned, func.count(Assignment.id)).outerjoin(Assignment, Assignment.item_id == Item.id)
                       .where(Item.kind == "real").group_by(Item.id, Item.n_assigned)).all()
    out += [f"item {i}: n_assigned {n} but {m} assignments" for i, n, m in counts if n != m]
    bad_status = s.execute(select(Assignment.id, Assignment.status, Assignment.finish_reason).where(
        ((Assignment.status == "done") & Assignment.finish_reason.is_(None))
        | ((Assignment.status == "open") & Assignment.finish_reason.is_not(None))
        | Assignment.status.not_in(["open", "done"]))).all()
    out += [f"assignment {a}: status {st!r} with finish_reason {r!r}" for a, st, r in bad_status]
    return out + _phase2_problems(s)


def _phase2_problems(s) -> list[str]:
    out = []
    rows = s.execute(select(Assignment.id, Assignment.finish_reason, func.count(Label.id), func.max(Label.step),
                            func.min(Label.rating))
                     .select_from(Assignment).join(Label, Label.assignment_id == Assignment.id)
                     .join(Item, Assignment.item_id == Item.id).join(Project, Item.project_id == Project.id)
                     .where(Project.phase == 2).group_by(Assignment.id, Assignment.finish_reason)).all()
    for aid, reason, n, last, worst in rows:
        if n != last + 1:
            out.append(f"assignment {aid}: {n} labels on steps 0..{last} (a gap or a duplicate)")
        if reason == "found_error" and worst != -1:
            out.append(f"assignment {aid}: found_error without a Bad step")
    return out


def check_database(db: Database) -> dict:
    """``{"ok": bool, "integrity": ..., "problems": [...], "counts": {...}}``."""
    integrity = db.integrity_check()
    with db.read() as s:
        problems = _problems(s)
        counts = {"items": s.scalar(select(func.count(Item.id))), "labels": s.scalar(select(func.count(Label.id))),
                  "assignments": s.scalar(select(func.count(Assignment.id)))}
    return {"ok": integrity == "ok" and not problems, "integrity": integrity, "problems": problems, "counts": counts}
