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

from prmkit.evaluate.steps import StepSet
from prmkit.io import RecordError, iter_json
from prmkit.schema import SchemaError, Solution

STEP_FORMATS = ("processbench", "prmkit")


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
    raise ValueError("cannot detect the step format (ProcessBench or prmkit); pass --format")


def load_step_set(path, score_key: str, format: str = "auto") -> tuple[StepSet, int]:
    """Read one subset; returns it and the number of solutions skipped for having no labelled step."""
    data = StepSet(subset_name(path), [], [], [], [])
    skipped = 0
    for raw in iter_json(path):
        fmt = detect_step_format(raw.value) if format == "auto" else format
        try:
            row = _processbench(raw.value, score_key) if fmt == "processbench" else _prmkit(raw.value, score_key)
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
    StepSet.__post_init__(data)
    return data, skipped


def _processbench(rec: dict, key: str):
    if key not in rec:
        raise SchemaError(key, f"no per-step scores under {key!r}: ProcessBench ships none; add a PRM's "
                               "scores (one per step) to each record, or pick the key with --score")
    scores = [float(x) for x in rec[key]]
    if len(scores) != len(rec["steps"]):
        raise SchemaError(key, f"{len(scores)} scores for {len(rec['steps'])} steps")
    label = int(rec["label"])
    return str(rec.get("id", "")), scores, label, None


def _prmkit(rec: dict, key: str):
    sol = Solution.from_dict(rec)
    steps = [s for s in sol.steps if s.taken is not None]
    ratings = [s.rating for s in steps]
    if all(r is None for r in ratings):
        return None
    missing = [i for i, s in enumerate(steps) if key not in s.scores]
    if missing:
        raise SchemaError(f"steps[{missing[0]}].scores", f"no step score {key!r} (pick the key with --score)")
    first = sol.first_error()
    step_labels = [-1 if r is None else int(r >= 0) for r in ratings]
    return sol.id or sol.problem.id or "", [float(s.scores[key]) for s in steps], -1 if first is None else first, \
        step_labels
