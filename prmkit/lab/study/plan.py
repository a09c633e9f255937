"""``prmkit lab study NAME --plan``: a study's jobs, which are done, and what the rest will cost on this machine,
without running anything.

Each job is found as the driver would run it (:func:`~prmkit.lab.study.protocol.run_study`'s stages, keyed the
same way): ``done`` (its ``done.json`` holds its key), ``partial`` (an interrupted run left its folder, which
the next run resumes) or ``to run``. A job not done is estimated by the compute seconds of the done jobs of
its kind in the same study folder (the median of their seconds per unit of work, :attr:`Job.work`, times its own
work: a search at N = 64 costs more than one at N = 4), else by the published run's mean per job of its stage
(``docs/results/study-<name>.json``, where that run had the same preset and the study's own settings: a run of
200 RL steps is not priced as the published 40), else not at all: a study that has run one job of a kind knows
what the next one costs.

>>> rows = [{"stage": "rm", "job": "RewardModel", "folder": "seed-0/rm-prm-500", "status": "done", "seconds": 100.0},
...         {"stage": "rm", "job": "RewardModel", "folder": "seed-1/rm-prm-500", "status": "to run", "seconds": None}]
>>> estimate(rows, {})[1]["estimate"], estimate(rows, {})[1]["basis"]
(100.0, 'median of 1 done RewardModel job')
>>> rows = [{"stage": "search", "job": "Tree", "kind": "Tree/prm", "work": 256, "status": "done", "seconds": 40.0},
...         {"stage": "search", "job": "Tree", "kind": "Tree/prm", "work": 1024, "status": "to run", "seconds": None}]
>>> estimate(rows, {})[1]["estimate"], estimate(rows, {})[1]["basis"]
(160.0, 'median of 1 done Tree/prm job, scaled by size')
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

from prmkit.lab.jobs import is_done


def plan_study(study, cfg, seeds: list[int], run_dir, device: str = "auto", published: dict | None = None,
               domain: str = "ledger") -> dict:
    """The plan of ``study`` for ``seeds`` in ``RUN_DIR/study-<name>/``: every job with its status and estimate
    (``published``: the study's published summary, read where it ran the same preset of ``domain``)."""
    from prmkit.lab.study.protocol import Context

    cfg = study.prepare(cfg, list(seeds))
    root = Path(run_dir) / f"study-{study.name}"
    rows = []
    stages = iter(study.stages(cfg, Context(root, tuple(seeds), device)))
    while (listed := _next_stage(stages)) is not None:
        if isinstance(listed, FileNotFoundError):  # a stage whose jobs an earlier stage's outputs decide, not yet written
            rows.append({"stage": "later", "job": "-", "kind": LATER, "work": 1.0, "status": "to run", "seconds": None,
                         "folder": f"(reads {_shown(Path(listed.filename or '-'), root)})"})
            break
        stage, jobs = listed
        for job in jobs:
            folder = Path(job.folder)
            rows.append({"stage": stage, "job": type(job).__name__, "kind": job.plan_kind, "work": job.work,
                         "folder": _shown(folder, root), "status": status(folder, job.key),
                         "seconds": _seconds(folder, job.key)})
    recorded = (published.get("config") or published.get("settings")) if published else None  # budget's: settings
    same = same_settings(recorded, getattr(cfg, study.name, None))
    stage_means = published_means(published, cfg.name, domain) if same else {}
    return {"study": study.name, "root": str(root), "seeds": list(seeds), "rows": estimate(rows, stage_means)}


LATER = "decided by the stages above"
"""The plan's last row where a stage's jobs depend on what earlier stages write (the autolabel study trains a PRM
only for the label sets with enough labelled solutions): they are listed once those stages have run."""


def _next_stage(stages):
    """The next ``(stage, jobs)``, None after the last, the error where building a stage reads an output not yet
    written (the row names the file, so a file missing for another reason shows). Only a study whose ``stages``
    is a generator builds its stages one by one; a list is built whole before the plan reads it."""
    try:
        return next(stages)
    except StopIteration:
        return None
    except FileNotFoundError as missing:
        return missing


def status(folder: Path, key: str) -> str:
    """``done``, ``partial`` (an interrupted run of the same key left its temporary folder) or ``to run``."""
    if is_done(folder, key):
        return "done"
    mark = folder.with_name(f".{folder.name}.part") / ".key"
    return "partial" if mark.is_file() and mark.read_text() == key else "to run"


def _seconds(folder: Path, key: str) -> float | None:
    return json.loads((folder / "done.json").read_text()).get("seconds") if is_done(folder, key) else None


def _shown(folder: Path, root: Path) -> str:
    try:
        return str(folder.relative_to(root))
    except ValueError:  # the base model lives in the lab's cache, shared with `prmkit lab run`
        return str(folder)


def same_settings(published: dict | None, section) -> bool:
    """Whether the study's own settings (its config section, ``section``) are the published run's (``published``,
    its summary's ``config``) wherever the published run records them; a field it does not record (added since)
    is not held against it, and a summary with no settings matches nothing.

    >>> from prmkit.rl.grpo import RLConfig
    >>> same_settings({"steps": 40, "beta": 0.04}, RLConfig(steps=40)), same_settings({"steps": 40}, RLConfig(steps=200))
    (True, False)
    """
    if not isinstance(published, dict) or not dataclasses.is_dataclass(section):
        return False
    return _recorded_equal(json.loads(json.dumps(dataclasses.asdict(section), default=str)), published)


def _recorded_equal(ours, recorded) -> bool:
    """``ours`` equals ``recorded`` wherever ``recorded`` has a field, nested sections (``rl``) included."""
    if isinstance(ours, dict) and isinstance(recorded, dict):
        return all(_recorded_equal(ours[k], v) for k, v in recorded.items() if k in ours)
    return ours == recorded


def published_means(summary: dict, preset: str, domain: str) -> dict[str, float]:
    """Mean compute seconds per job of each stage of a published run of the same preset and domain (else
    nothing: another size costs otherwise).

    >>> published_means({"preset": "default", "timings": {"rm": {"ran": 4, "job_seconds": 10.0}}}, "default", "ledger")
    {'rm': 2.5}
    """
    if summary.get("preset") != preset or summary.get("domain", "ledger") != domain:
        return {}
    out = {}
    for stage, t in summary.get("timings", {}).items():
        if t.get("ran") and t.get("job_seconds"):
            out[stage] = t["job_seconds"] / t["ran"]
    return out


def estimate(rows: list[dict], stage_means: dict[str, float]) -> list[dict]:
    """Each row with ``estimate`` (seconds; None where nothing is known) and ``basis`` (where it comes from)."""
    rates: dict[str, list[float]] = {}  # seconds per unit of work of each kind's done jobs
    sized: set[str] = set()  # kinds whose jobs differ in size
    for r in rows:
        kind, work = r.get("kind", r["job"]), r.get("work", 1.0)
        if work != 1.0:
            sized.add(kind)
        if r["status"] == "done" and r["seconds"] is not None:
            rates.setdefault(kind, []).append(r["seconds"] / work)
    out = []
    for r in rows:
        kind = r.get("kind", r["job"])
        if r["status"] == "done":
            out.append({**r, "estimate": r["seconds"], "basis": "measured"})
        elif kind == LATER:
            out.append({**r, "estimate": None, "basis": "jobs listed once the stages above have run"})
        elif kind in rates:
            n = len(rates[kind])
            out.append({**r, "estimate": statistics.median(rates[kind]) * r.get("work", 1.0),
                        "basis": f"median of {n} done {kind} job{'s' if n > 1 else ''}"
                                 + (", scaled by size" if kind in sized else "")})
        elif r["stage"] in stage_means:
            out.append({**r, "estimate": stage_means[r["stage"]], "basis": "the published run's stage mean"})
        else:
            out.append({**r, "estimate": None, "basis": "no job of this kind has run yet"})
    return out


def format_plan(plan: dict, workers: int) -> str:
    """The plan as people read it: one line per job, then what is left, in compute and in wall time."""
    rows = [r for r in plan["rows"] if r.get("kind") != LATER]
    later = len(rows) < len(plan["rows"])
    left = [r for r in rows if r["status"] != "done"]
    known = sum(r["estimate"] for r in left if r["estimate"] is not None)
    unknown = sum(r["estimate"] is None for r in left)
    width = max([len(r["folder"]) for r in rows] + [6])
    head = (f"study {plan['study']} in {plan['root']}: seeds {', '.join(map(str, plan['seeds']))}; {len(rows)} jobs, "
            f"{len(rows) - len(left)} done")
    lines = [head, "", f"{'stage':<10} {'job':<14} {'folder':<{width}} {'status':<8} {'seconds':>9}  basis"]
    for r in plan["rows"]:
        secs = "?" if r["estimate"] is None else f"{r['estimate']:,.0f}"
        lines.append(f"{r['stage']:<10} {r['job']:<14} {r['folder']:<{width}} {r['status']:<8} {secs:>9}  {r['basis']}")
    more = f", and {unknown} job{'s' if unknown > 1 else ''} not yet estimated" if unknown else ""
    more += ", and the later stages' jobs" if later else ""
    tail = (f"left: {len(left)} jobs, about {known:,.0f} s of compute ({known / max(workers, 1):,.0f} s of wall time on "
            f"{workers} worker{'s' if workers > 1 else ''}){more}")
    lines += ["", tail]
    return "\n".join(lines)


__all__ = ["estimate", "format_plan", "plan_study", "published_means", "same_settings", "status"]
