"""Loading step-scored solutions for :mod:`prmkit.evaluate.steps`: ProcessBench files and prmkit files.

``processbench``
    The ProcessBench JSON (``id``, ``steps``, ``label`` = 0-based first wrong step or -1). The benchmark
    ships no model scores: a PRM's per-step scores go in a list under ``score_key`` in each record
    (one number per step, higher = more likely correct).
``prmkit``
    :class:`~prmkit.schema.Solution` records: the score of a step is ``step.scores[score_key]`` (for
    example ``p_correct`` written by a scorer); labels come from the step ratings (-1 is an error,
    0 and +1 count as correct, unrated steps are left out of step-level metrics); the first-error label
    is the first -1, or -1 when none. Solutions with no rated step are skipped and counted.

A file is one subset, named after the file (``gsm8k.json`` -> ``gsm8k``).

>>> import json, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "toy.json")
>>> _ = open(path, "w").write(json.dumps([{"id": "a", "steps": ["x", "y"], "label": 1, "p": [0.9, 0.1]}]))
>>> data, skipped = load_step_set(path, "p")
>>> data.name, data.labels, data.scores, skipped
('toy', [1], [[0.9, 0.1]], 0)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prmkit.convert import step_score_formats
from prmkit.convert.processbench import steps_and_label
from prmkit.evaluate.pool import steps_lost_key, truncation_note
from prmkit.evaluate.steps import StepSet
from prmkit.io import RecordError, iter_json, require_records
from prmkit.schema import SchemaError, Solution

STEP_FORMATS = tuple(step_score_formats())
"""The formats whose records can carry a PRM's step scores (one registry: :data:`prmkit.convert.FORMATS`)."""


def subset_name(path) -> str:
    """``data/gsm8k.json`` -> ``gsm8k``; ``x.jsonl.gz`` -> ``x``."""
    name = Path(path).name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


def detect_step_format(record: Any) -> str:
    if isinstance(record, dict) and isinstance(record.get("problem"), dict):
        return "prmkit"
    if isinstance(record, dict) and "label" in record and isinstance(record.get("steps"), list):
        return "processbench"
    raise ValueError("cannot detect the step format (ProcessBench or prmkit); pass --from")


class MissingStepScore(SchemaError):
    """A record without the step scores asked for (``lost``: its ``NAME_steps_lost`` key when truncation at
    scoring dropped steps; ``keys``: the step-score keys it has)."""

    def __init__(self, field: str, message: str, lost: str | None = None, keys: frozenset = frozenset()):
        super().__init__(field, message)
        self.lost, self.keys = lost, keys


def load_step_set(path, score_key: str, format: str = "auto", unscored: list | None = None) -> tuple[StepSet, int]:
    """Read one subset; returns it and the number of solutions skipped for having no labelled step.

    Records without the step scores are all counted before the error, which says how many lack them
    and why when the file says (truncation at scoring: ``NAME_steps_lost``). With a list ``unscored``
    (``eval steps --skip-unscored``) they are left out and listed there instead, as ``(line, why)``,
    unless every record lacks them."""
    require_records(path)  # said as such, not later as a lack of labelled steps
    data = StepSet(subset_name(path), [], [], [], [])
    skipped = 0
    missing: list[tuple[int, MissingStepScore]] = []
    for raw in iter_json(path):
        fmt = detect_step_format(raw.value) if format == "auto" else format
        try:
            row = _processbench(raw.value, score_key) if fmt == "processbench" else _prmkit(raw.value, score_key)
        except MissingStepScore as e:
            missing.append((raw.line, e))
            continue
        except SchemaError as e:
            raise RecordError(path, raw.line, e.field, e.message) from None
        except (KeyError, TypeError, ValueError) as e:
            raise RecordError(path, raw.line, None, str(e)) from None
        if row is None:
            skipped += 1
            continue
        ident, scores, label, step_labels = row
        data.ids.append(ident)
        data.scores.append(scores)
        data.labels.append(label)
        data.step_labels.append(step_labels)
    if missing and (unscored is None or not data.ids):
        raise _missing_error(path, score_key, missing, len(missing) + len(data.ids))
    if missing:
        unscored.extend((line, f"steps lost to truncation at scoring ({e.lost})" if e.lost else e.message)
                        for line, e in missing)
    StepSet.__post_init__(data)
    return data, skipped


def _missing_error(path, key: str, missing: list, records: int) -> RecordError:
    """One error for every record without the step scores: how many, the first, and the cause if known."""
    line, first = missing[0]
    keys = sorted(set().union(*(e.keys for _, e in missing)))
    every = len(missing) == records
    lost = [e.lost for _, e in missing if e.lost]
    if every and key not in keys and not lost and first.field.startswith("steps["):
        have = f" (step scores they have: {', '.join(keys[:8])}{', ...' if len(keys) > 8 else ''})" if keys else ""
        message = f"none of the {records} records has the step score {key!r}{have}; pick the key with --score"
    else:
        count = "every record lacks" if every else f"{len(missing)} of {records} records lack{'s' * (len(missing) == 1)}"
        message = f"{first.message} ({count} {'them' if first.field == key else 'it on some steps'}, this is the first)"
    if lost:
        who = "It" if len(missing) == 1 else "All of them" if len(lost) == len(missing) else f"{len(lost)} of them"
        message += f". {truncation_note(who, set(lost), key, step_key=True)}"
    if not every:
        message += "; or pass --skip-unscored to leave them out (counted and printed)"
    return RecordError(path, line, first.field, message)


def _processbench(rec: dict, key: str):
    texts, label = steps_and_label(rec)
    if key not in rec:
        raise MissingStepScore(key, f"no per-step scores under {key!r}: ProcessBench ships none; add a PRM's "
                                    "scores (one per step) to each record, or pick the key with --score")
    scores = [float(x) for x in rec[key]]
    if len(scores) != len(texts):
        raise SchemaError(key, f"{len(scores)} scores for {len(texts)} steps")
    return str(rec.get("id", "")), scores, label, None


def _prmkit(rec: dict, key: str):
    sol = Solution.from_dict(rec)
    steps = [s for s in sol.steps if s.taken is not None]
    ratings = [s.rating for s in steps]
    if all(r is None for r in ratings):
        return None
    missing = [i for i, s in enumerate(steps) if key not in s.scores]
    if missing:
        raise MissingStepScore(f"steps[{missing[0]}].scores",
                               f"no step score {key!r} on {len(missing)} of its {len(steps)} steps",
                               steps_lost_key(sol.scores, key, step_key=True),
                               frozenset(k for s in steps for k in s.scores))
    first = sol.first_error()
    step_labels = [-1 if r is None else int(r >= 0) for r in ratings]
    return sol.id or sol.problem.id or "", [float(s.scores[key]) for s in steps], -1 if first is None else first, \
        step_labels
