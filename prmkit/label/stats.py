"""The admin figures of a project: progress, each labeller's agreement with gold, inter-annotator agreement.

- progress per generation and item kind: items, assignments open and done, labels, finish reasons;
- per labeller: assignments, labels, time, agreement with the gold labels of QC items (share of equal
  ratings and Cohen's kappa against gold), and screening status;
- per-step inter-annotator agreement on real items: a *unit* is one completion of one step that two or
  more labellers rated; Fleiss' kappa over all units, Cohen's kappa for every pair of labellers that
  share units.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from itertools import combinations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from prmkit.label.agreement import cohen_kappa, fleiss_kappa, unit_counts
from prmkit.label.flow import screening_status
from prmkit.label.models import Assignment, Item, Label, User
from prmkit.label.projects import get_project


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else round(x, 4)


def progress(s: Session, project_id: int) -> list[dict]:
    items = s.execute(select(Item.generation, Item.kind, func.count(Item.id)).where(Item.project_id == project_id)
                      .group_by(Item.generation, Item.kind)).all()
    rows = {(g, k): {"generation": g, "kind": k, "items": n, "open": 0, "done": 0, "labels": 0, "finish_reasons": {}}
            for g, k, n in items}
    for g, k, status, reason, n in s.execute(
            select(Item.generation, Item.kind, Assignment.status, Assignment.finish_reason, func.count(Assignment.id))
            .join(Item).where(Item.project_id == project_id)
            .group_by(Item.generation, Item.kind, Assignment.status, Assignment.finish_reason)):
        rows[(g, k)][status] += n
        if reason:
            rows[(g, k)]["finish_reasons"][reason] = rows[(g, k)]["finish_reasons"].get(reason, 0) + n
    for g, k, n in s.execute(select(Item.generation, Item.kind, func.count(Label.id)).select_from(Label)
                             .join(Assignment, Label.assignment_id == Assignment.id).join(Item, Assignment.item_id == Item.id).where(Item.project_id == project_id).group_by(Item.generation, Item.kind)):
        rows[(g, k)]["labels"] = n
    return [rows[key] for key in sorted(rows)]


def _label_rows(s: Session, project_id: int):
    return s.execute(select(User.name, Item.id, Item.kind, Item.gold, Label.step, Label.completion, Label.rating)
                     .select_from(Label).join(Assignment, Label.assignment_id == Assignment.id)
                     .join(Item, Assignment.item_id == Item.id).join(User, User.id == Assignment.user_id)
                     .where(Item.project_id == project_id, Label.rating.is_not(None), Label.completion >= 0)).all()


def gold_agreement(rows) -> dict[str, dict]:
    """Per labeller: how their QC ratings compare with gold (``accuracy``, ``kappa``, ``compared``)."""
    pairs: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    gold_cache: dict[int, list] = {}
    for name, item_id, kind, gold, step, completion, rating in rows:
        if kind != "qc":
            continue
        g = gold_cache.setdefault(item_id, json.loads(gold) if gold else [])
        if step < len(g) and completion < len(g[step]) and g[step][completion] is not None:
            pairs[name][0].append(rating)
            pairs[name][1].append(g[step][completion])
    out = {}
    for name, (mine, gold) in pairs.items():
        accuracy = sum(a == b for a, b in zip(mine, gold)) / len(mine)
        out[name] = {"compared": len(mine), "accuracy": _num(accuracy), "kappa": _num(cohen_kappa(mine, gold))}
    return out


def inter_annotator(rows) -> dict:
    """Fleiss' kappa over steps rated by two or more labellers, and Cohen's kappa per pair of labellers."""
    units: dict[tuple, dict[str, int]] = defaultdict(dict)
    for name, item_id, kind, _gold, step, completion, rating in rows:
        if kind == "real":
            units[(item_id, step, completion)][name] = rating
    shared = [u for u in units.values() if len(u) >= 2]
    fleiss = fleiss_kappa(unit_counts([list(u.values()) for u in shared])) if shared else math.nan
    pairs: dict[tuple[str, str], tuple[list, list]] = defaultdict(lambda: ([], []))
    for u in shared:
        for a, b in combinations(sorted(u), 2):
            pairs[(a, b)][0].append(u[a])
            pairs[(a, b)][1].append(u[b])
    cohen = [{"labellers": [a, b], "units": len(x), "kappa": _num(cohen_kappa(x, y))}
             for (a, b), (x, y) in sorted(pairs.items())]
    return {"units": len(shared), "fleiss_kappa": _num(fleiss), "cohen_pairs": cohen}


def labellers(s: Session, project, gold: dict[str, dict]) -> list[dict]:
    out = []
    q = (select(User, func.count(Assignment.id), func.sum(Assignment.time_ms))
         .join(Assignment, Assignment.user_id == User.id).join(Item)
         .where(Item.project_id == project.id).group_by(User.id).order_by(User.name))
    for user, n, time_ms in s.execute(q):
        done = s.scalar(select(func.count(Assignment.id)).join(Item).where(
            Item.project_id == project.id, Assignment.user_id == user.id, Assignment.status == "done"))
        n_labels = s.scalar(select(func.count(Label.id)).select_from(Label)
                           .join(Assignment, Label.assignment_id == Assignment.id)
                           .join(Item, Assignment.item_id == Item.id).where(
            Item.project_id == project.id, Assignment.user_id == user.id))
        out.append({"name": user.name, "role": user.role, "assignments": n, "done": done, "labels": n_labels,
                    "time_ms": int(time_ms or 0), "gold": gold.get(user.name),
                    "screening": screening_status(s, user, project)})
    return out


def project_stats(s: Session, project_name: str) -> dict:
    """Everything the admin page shows for one project."""
    project = get_project(s, project_name)
    rows = _label_rows(s, project.id)
    gold = gold_agreement(rows)
    return {"project": project.settings(), "progress": progress(s, project.id),
            "labellers": labellers(s, project, gold), "agreement": inter_annotator(rows)}
