"""The labelling flows: what a labeller is given next, and what each rating does.

**Phase 2** (PRM800K's main phase): one pre-generated solution, revealed one step at a time. Each
step is rated Great / Okay / Bad (+1 / 0 / -1), optionally flagged as unsure. A Bad step ends the
solution with ``finish_reason="found_error"``; rating the last step ends it with ``"solution"``.

**Phase 1**: at each step several alternative next steps are shown. The labeller rates every one,
then *chooses* one that is not Bad to continue with, or writes their own step. Choosing at the last
step ends the solution (``"solution"``). The alternatives of later steps are the pre-generated ones.

In both, the labeller may stop with ``give_up`` or ``bad_problem``. Only the frontier step (the first
one not yet done) can be rated; earlier ones are final, but re-sending the same label is answered
as before, so a client may retry without making duplicates. Time spent is what the client reports
per action (``time_ms``), summed per assignment.

The next assignment (:func:`next_assignment`): an open one if the labeller has one; else the screening
set until it is done (and then nothing more if it was failed); else, every ``qc_every``-th item, a
QC item the labeller has not seen; else the first real item, oldest generation first, that fewer than
``overlap`` labellers have taken.
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from prmkit.label.models import HUMAN, Assignment, Item, Label, Project, User, now
from prmkit.label.projects import Conflict, Forbidden, LabelError, NotFound, get_project

STOP_REASONS = ("give_up", "bad_problem")
MAX_TIME_MS = 3_600_000


# --- reading state --------------------------------------------------------------------------------

def labels_of(s: Session, assignment: Assignment) -> dict[tuple[int, int], Label]:
    rows = s.scalars(select(Label).where(Label.assignment_id == assignment.id))
    return {(r.step, r.completion): r for r in rows}


def steps_done(phase: int, n_steps: int, labels: dict[tuple[int, int], Label]) -> int:
    """How many leading steps are finished: rated (phase 2) or with a choice made (phase 1)."""
    chosen = {step for (step, _), lab in labels.items() if lab.chosen}
    done = 0
    while done < n_steps and ((done, 0) in labels if phase == 2 else done in chosen):
        if phase == 2 and labels[(done, 0)].rating is None:
            break
        done += 1
    return done


def gold_matches(labels: dict[tuple[int, int], Label], gold: list[list[int | None]] | None) -> tuple[int, int]:
    """(agreeing, compared): completions that both the labeller and the gold rated."""
    agree = compared = 0
    for (step, completion), lab in labels.items():
        if gold is None or lab.rating is None or completion < 0 or step >= len(gold):
            continue
        if completion < len(gold[step]) and gold[step][completion] is not None:
            compared += 1
            agree += lab.rating == gold[step][completion]
    return agree, compared


def view(s: Session, a: Assignment) -> dict:
    """What the labeller sees: problem, the revealed steps with their own labels, the current guess.

    Never the gold answer, the reference solution, model scores or gold ratings.
    """
    item, project = a.item, a.item.project
    record = item.record_dict()
    labels = labels_of(s, a)
    done = steps_done(project.phase, item.n_steps, labels)
    last_labelled = max((step + 1 for step, _ in labels), default=0)
    shown = max(done + 1 if a.status == "open" else done, last_labelled)
    steps = [_step_view(i, record["steps"][i], labels, i < done) for i in range(min(shown, item.n_steps))]
    prelabel = record.get("prelabel") or {}
    return {"assignment": a.id, "project": project.name, "phase": project.phase, "status": a.status,
            "finish_reason": a.finish_reason, "screening": item.kind == "screening",
            "problem": record["problem"]["problem"],
            "current_guess": record.get("answer") or prelabel.get("answer"),
            "steps": steps, "frontier": done if a.status == "open" and done < item.n_steps else None,
            "more_steps": shown < item.n_steps, "time_ms": a.time_ms}


def _step_view(index: int, step: dict, labels: dict, done: bool) -> dict:
    completions = []
    for j, c in enumerate(step["completions"]):
        lab = labels.get((index, j))
        completions.append({"index": j, "text": c["text"], "rating": lab.rating if lab else None,
                            "flagged": bool(lab.flagged) if lab else False, "chosen": bool(lab.chosen) if lab else False})
    human = labels.get((index, HUMAN))
    return {"index": index, "completions": completions, "done": done,
            "human": {"text": human.text, "rating": human.rating} if human else None}


# --- access ---------------------------------------------------------------------------------------

def get_assignment(s: Session, user: User, assignment_id: int, *, write: bool = False) -> Assignment:
    """The assignment if ``user`` may see it (its owner; an admin may read it) or change it (owner only)."""
    a = s.get(Assignment, assignment_id)
    if a is None or (a.user_id != user.id and user.role != "admin"):
        raise NotFound(f"no assignment {assignment_id}")
    if write and a.user_id != user.id:
        raise Forbidden("only the labeller an assignment belongs to can label it")
    return a


def list_assignments(s: Session, user: User, project: str | None = None) -> list[dict]:
    q = select(Assignment).where(Assignment.user_id == user.id).order_by(Assignment.id)
    if project is not None:
        q = q.join(Item).where(Item.project_id == get_project(s, project).id)
    return [{"assignment": a.id, "project": a.item.project.name, "status": a.status,
             "finish_reason": a.finish_reason, "started_at": a.started_at.isoformat()} for a in s.scalars(q)]


# --- the queue ------------------------------------------------------------------------------------

def screening_status(s: Session, user: User, project: Project) -> dict:
    """``none`` (no screening set), ``exempt`` (admins), ``pending``, ``passed`` or ``failed``."""
    items = s.scalars(select(Item.id).where(Item.project_id == project.id, Item.kind == "screening")).all()
    if not items:
        return {"status": "none"}
    if user.role == "admin":
        return {"status": "exempt"}
    done = s.scalars(select(Assignment).where(Assignment.user_id == user.id, Assignment.status == "done",
                                              Assignment.item_id.in_(items))).all()
    if len(done) < len(items):
        return {"status": "pending", "done": len(done), "total": len(items)}
    agree = compared = 0
    for a in done:
        got, n = gold_matches(labels_of(s, a), a.item.gold_ratings())
        agree, compared = agree + got, compared + n
    rate = agree / compared if compared else 0.0
    return {"status": "passed" if rate >= project.screening_min else "failed", "agreement": round(rate, 4),
            "compared": compared}


def _unseen(project: Project, user: User, kind: str):
    seen = select(Assignment.item_id).where(Assignment.user_id == user.id)
    return (select(Item.id).where(Item.project_id == project.id, Item.kind == kind, Item.id.not_in(seen))
            .order_by(Item.generation, Item.position))


def _assign(s: Session, user: User, item_id: int) -> Assignment:
    a = Assignment(item_id=item_id, user_id=user.id, status="open", time_ms=0, started_at=now())
    s.add(a)
    s.flush()
    return a


def _take_real(s: Session, project: Project, user: User) -> Assignment | None:
    # Several labellers race for the same items; the conditional UPDATE lets exactly `overlap` win.
    while True:
        rows = s.execute(_unseen(project, user, "real").add_columns(Item.generation)
                         .where(Item.n_assigned < project.overlap).limit(16)).all()
        if not rows:
            return None
        # Oldest generation first; within it, start at a per-labeller offset in the next 16 items so
        # that concurrent labellers do not all queue on the same row (serving order holds within 16).
        candidates = [item_id for item_id, gen in rows if gen == rows[0][1]]
        k = user.id % len(candidates)
        for item_id in candidates[k:] + candidates[:k]:
            won = s.execute(update(Item).where(Item.id == item_id, Item.n_assigned < project.overlap)
                            .values(n_assigned=Item.n_assigned + 1))
            if won.rowcount == 1:
                return _assign(s, user, item_id)


def next_assignment(s: Session, user: User, project_name: str) -> Assignment | None:
    """The labeller's open assignment in the project, or a new one, or None when nothing is left."""
    project = get_project(s, project_name)
    open_ = s.scalar(select(Assignment).join(Item).where(Assignment.user_id == user.id, Assignment.status == "open",
                                                         Item.project_id == project.id).order_by(Assignment.id))
    if open_ is not None:
        return open_
    screening = screening_status(s, user, project)
    if screening["status"] == "pending":
        return _assign(s, user, s.scalar(_unseen(project, user, "screening").limit(1)))
    if screening["status"] == "failed":
        raise Forbidden(f"screening not passed (agreement {screening['agreement']:.0%} < "
                        f"{project.screening_min:.0%}); ask an admin")
    taken = s.scalar(select(func.count(Assignment.id)).join(Item).where(
        Assignment.user_id == user.id, Item.project_id == project.id, Item.kind != "screening")) or 0
    qc = s.scalar(_unseen(project, user, "qc").limit(1))
    if qc is not None and project.qc_every > 0 and (taken + 1) % project.qc_every == 0:
        return _assign(s, user, qc)
    return _take_real(s, project, user)


# --- actions --------------------------------------------------------------------------------------

def _open_state(s: Session, a: Assignment) -> tuple[dict, int, list[dict]]:
    labels = labels_of(s, a)
    steps = a.item.record_dict()["steps"]
    return labels, steps_done(a.item.project.phase, a.item.n_steps, labels), steps


def _clamp_time(time_ms: int | None) -> int:
    return max(0, min(int(time_ms or 0), MAX_TIME_MS))


def _close(a: Assignment, reason: str) -> None:
    a.status, a.finish_reason, a.finished_at = "done", reason, now()


def rate(s: Session, user: User, assignment_id: int, step: int, rating: int, *, completion: int = 0,
         flagged: bool = False, time_ms: int = 0) -> dict:
    """Rate one completion of the frontier step; returns the new :func:`view`."""
    a = get_assignment(s, user, assignment_id, write=True)
    if rating not in (-1, 0, 1) or isinstance(rating, bool):
        raise LabelError("a rating is -1 (bad), 0 (okay) or 1 (great)")
    labels, done, steps = _open_state(s, a)
    same = labels.get((step, completion))
    if same is not None and same.rating == rating and bool(same.flagged) == bool(flagged) and (
            a.status == "done" or step < done):
        return view(s, a)  # a retry of an acknowledged label
    if a.status != "open":
        raise Conflict(f"assignment {a.id} is finished ({a.finish_reason})")
    if step != done:
        raise Conflict(f"step {step} cannot be rated now: step {done} is the current one")
    if not 0 <= completion < len(steps[step]["completions"]):
        raise LabelError(f"step {step} has no completion {completion}")
    if same is None:
        s.add(Label(assignment_id=a.id, step=step, completion=completion, rating=rating, flagged=bool(flagged),
                    chosen=a.item.project.phase == 2 and rating != -1, time_ms=_clamp_time(time_ms), created_at=now()))
    else:
        same.rating, same.flagged = rating, bool(flagged)
        same.chosen = a.item.project.phase == 2 and rating != -1
    a.time_ms += _clamp_time(time_ms)
    if a.item.project.phase == 2:
        if rating == -1:
            _close(a, "found_error")
        elif step == a.item.n_steps - 1:
            _close(a, "solution")
    s.flush()
    return view(s, a)


def choose(s: Session, user: User, assignment_id: int, step: int, *, completion: int | None = None,
           text: str | None = None, rating: int | None = None, time_ms: int = 0) -> dict:
    """Phase 1: continue with a rated, not-Bad alternative, or with a step the labeller writes."""
    a = get_assignment(s, user, assignment_id, write=True)
    if a.item.project.phase != 1:
        raise LabelError("choosing between alternatives is phase 1 only")
    labels, done, steps = _open_state(s, a)
    if a.status != "open":
        raise Conflict(f"assignment {a.id} is finished ({a.finish_reason})")
    if step != done:
        raise Conflict(f"step {step} cannot be chosen now: step {done} is the current one")
    if (completion is None) == (text is None):
        raise LabelError("give either a completion to continue with or the text of your own step")
    unrated = [j for j in range(len(steps[step]["completions"])) if getattr(labels.get((step, j)), "rating", None) is None]
    if unrated:
        # counted as the page shows them: "Step 1" first, alternatives 1, 2, ... from the top
        raise Conflict(f"rate every alternative of step {step + 1} first (unrated: alternative"
                       f"{'s' * (len(unrated) > 1)} {', '.join(str(j + 1) for j in unrated)}, counting from the top)")
    if completion is not None:
        lab = labels.get((step, completion))
        if lab is None:
            raise LabelError(f"step {step} has no completion {completion}")
        if lab.rating == -1:
            raise Conflict("a Bad step cannot be continued with; write your own instead")
        lab.chosen = True
    else:
        if not text or not text.strip():
            raise LabelError("your own step cannot be empty")
        s.add(Label(assignment_id=a.id, step=step, completion=HUMAN, rating=rating, flagged=False, chosen=True,
                    text=text, time_ms=_clamp_time(time_ms), created_at=now()))
    a.time_ms += _clamp_time(time_ms)
    if step == a.item.n_steps - 1:
        _close(a, "solution")
    s.flush()
    return view(s, a)


def finish(s: Session, user: User, assignment_id: int, reason: str, time_ms: int = 0) -> dict:
    """Stop labelling an assignment: ``give_up`` or ``bad_problem``."""
    a = get_assignment(s, user, assignment_id, write=True)
    if reason not in STOP_REASONS:
        raise LabelError(f"finish reason is one of {', '.join(STOP_REASONS)}")
    if a.status == "done":
        if a.finish_reason == reason:
            return view(s, a)
        raise Conflict(f"assignment {a.id} is finished already ({a.finish_reason})")
    a.time_ms += _clamp_time(time_ms)
    _close(a, reason)
    s.flush()
    return view(s, a)
