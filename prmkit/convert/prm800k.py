"""PRM800K raw records (openai/prm800k ``phase{1,2}_{train,test}.jsonl``), both ways, losslessly.

One record, annotated (phase 2; phase 1 differs as noted)::

    {
      "labeler": "340d89bc-...",              # -> Solution.labeller
      "timestamp": "2023-01-22T04:34:27.052924",  # -> Solution.timestamp
      "generation": 9,                        # -> Solution.generation (null in phase 1, -1 screening)
      "is_quality_control_question": false,   # -> Solution.quality_control
      "is_initial_screening_question": false, # -> Solution.screening
      "question": {
        "problem": "How many positive two-digit integers ...",   # -> Problem.problem
        "ground_truth_answer": "6",           # -> Problem.answer
        "ground_truth_solution": "...",       # -> Problem.solution (phase 2 only; may be null)
        "pre_generated_steps": ["I want ...", "..."],   # -> Prelabel.steps (phase 2 only)
        "pre_generated_answer": "6",          # -> Prelabel.answer
        "pre_generated_verifier_score": 0.0109  # -> Prelabel.verifier_score
      },
      "label": {
        "steps": [                            # -> Solution.steps, one Step each
          {"completions": [                   # -> Step.completions (phase 1: several alternatives)
             {"text": "I want to count ...", "rating": 1, "flagged": false}],
                                              #    rating -1/0/+1 or null, flagged true/false/null
           "human_completion": null,          # -> Step.human (a labeller-written step)
           "chosen_completion": 0},           # -> Step.chosen (null: none chosen / human instead)
          {"completions": null, "human_completion": null, "chosen_completion": null}
                                              # an empty last step (give_up): kept in meta
        ],
        "total_time": 278270,                 # -> Solution.total_time_ms
        "finish_reason": "found_error"        # -> Solution.finish_reason
      }
    }

``label_source`` is set to "human" and ``Solution.answer`` to the ``# Answer`` of the last step
taken. What the typed fields cannot say goes in ``meta["prm800k"]`` of the object concerned, and
only then: ``keys`` (which known keys were present, when that differs from what the writer emits by
default: a phase-1 question has no ``ground_truth_solution``, a screening record has it as null),
``extra`` (unknown keys, such as a human completion's ``corrected_rating``), ``null_steps``
(positions of all-null steps) and ``null_completions`` (a step whose completions are null). So
PRM800K -> prmkit -> PRM800K gives back the same JSON, key order aside.

>>> raw = {"labeler": "x", "timestamp": "t", "generation": None, "is_quality_control_question": False,
...        "is_initial_screening_question": False, "question": {"problem": "1+1?", "ground_truth_answer": "2"},
...        "label": {"steps": [{"completions": [{"text": "# Answer\\n\\n2", "rating": 1, "flagged": False}],
...                             "human_completion": None, "chosen_completion": 0}],
...                  "total_time": 5, "finish_reason": "solution"}}
>>> s = from_prm800k(raw)
>>> s.answer, s.ratings, s.finish_reason
('2', [1], 'solution')
>>> to_prm800k(s) == raw
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prmkit.convert.base import DEFAULTS, Options, opt, req, rows, text_of
from prmkit.grade import extract_answer
from prmkit.io import atomic_output, dumps
from prmkit.schema import (
    Completion,
    Prelabel,
    Problem,
    SchemaError,
    Solution,
    Step,
    check_rating,
    check_type,
)

TOP = ("labeler", "timestamp", "generation", "is_quality_control_question", "is_initial_screening_question",
       "question", "label")
LABEL = ("steps", "total_time", "finish_reason")
STEP = ("completions", "human_completion", "chosen_completion")
COMPLETION = ("text", "rating", "flagged")
HUMAN = ("text", "rating", "flagged", "source")
QUESTION = ("problem", "ground_truth_answer", "ground_truth_solution", "pre_generated_steps",
            "pre_generated_answer", "pre_generated_verifier_score")
NULL_STEP = {"completions": None, "human_completion": None, "chosen_completion": None}


# --- key bookkeeping ---------------------------------------------------------------------------------

def _note(d: dict, known: tuple[str, ...], default: list[str]) -> dict:
    """What ``meta["prm800k"]`` must hold for ``d``: its key set if not the default, unknown keys."""
    note: dict = {}
    present = [k for k in known if k in d]
    if present != default:
        note["keys"] = present
    extra = {k: v for k, v in d.items() if k not in known}
    if extra:
        note["extra"] = extra
    return note


def _emit(values: dict, default: list[str], note: dict) -> dict:
    keys = note.get("keys", default)
    out = {k: values.get(k) for k in keys}
    out.update(note.get("extra", {}))
    return out


def _meta(note: dict) -> dict:
    return {"prm800k": note} if note else {}


def _question_default(problem: Problem, prelabel: Prelabel | None) -> list[str]:
    keys = ["problem", "ground_truth_answer"]
    if problem.solution is not None or prelabel is not None:
        keys.append("ground_truth_solution")
    if prelabel is not None:
        keys += ["pre_generated_steps", "pre_generated_answer", "pre_generated_verifier_score"]
    return keys


# --- reading -----------------------------------------------------------------------------------------

def _completion(d: Any, path: str, human: bool = False) -> Completion:
    req(d, "text", (str,), path)
    source = d.get("source") if human else None
    known = HUMAN if human and source in ("human", "oracle", "model", "rollout", "judge") else COMPLETION
    c = Completion(text_of(d["text"], f"{path}.text"), rating=check_rating(d.get("rating"), f"{path}.rating"),
                   flagged=opt(d, "flagged", (bool,), path), source=source if known is HUMAN else None)
    c.meta = _meta(_note(d, known, [k for k in known if k != "source" or c.source is not None]))
    return c


def _step(d: Any, path: str) -> Step:
    req(d, "chosen_completion", (int, type(None)), path)
    raw = req(d, "completions", (list, type(None)), path)
    completions = [_completion(c, f"{path}.completions[{i}]") for i, c in enumerate(raw or [])]
    human = d.get("human_completion")
    human = _completion(human, f"{path}.human_completion", human=True) if human is not None else None
    chosen = d["chosen_completion"]
    if chosen is not None and not 0 <= chosen < len(completions):
        raise SchemaError(f"{path}.chosen_completion", f"index {chosen} but the step has {len(completions)} completions")
    if not completions and human is None:
        raise SchemaError(f"{path}.completions", "empty step: no completions and no human completion")
    note = _note(d, STEP, list(STEP))
    if raw is None:
        note["null_completions"] = True
    return Step(completions, chosen, human, meta=_meta(note))


def _question(q: Any) -> tuple[Problem, Prelabel | None]:
    check_type(q, (dict,), "question")
    problem = Problem(req(q, "problem", (str,), "question"), answer=opt(q, "ground_truth_answer", (str,), "question"),
                      solution=opt(q, "ground_truth_solution", (str,), "question"))
    steps = opt(q, "pre_generated_steps", (list,), "question")
    for i, s in enumerate(steps or []):
        check_type(s, (str,), f"question.pre_generated_steps[{i}]")
    prelabel = None
    if any(k in q for k in QUESTION[3:]):
        prelabel = Prelabel(steps, opt(q, "pre_generated_answer", (str,), "question"),
                            opt(q, "pre_generated_verifier_score", (int, float), "question"))
        if prelabel == Prelabel():
            prelabel = None  # an all-null prelabel is not kept by prmkit files; the keys note says it was there
    problem.meta = _meta(_note(q, QUESTION, _question_default(problem, prelabel)))
    return problem, prelabel


def from_prm800k(d: Any) -> Solution:
    """One raw PRM800K record as a :class:`Solution` (see the module docstring)."""
    check_type(d, (dict,), "record")
    label = req(d, "label", (dict,), "")
    problem, prelabel = _question(req(d, "question", (dict,), ""))
    raw_steps = req(label, "steps", (list,), "label")
    null_steps = [i for i, s in enumerate(raw_steps) if s == NULL_STEP]
    steps = [_step(s, f"label.steps[{i}]") for i, s in enumerate(raw_steps) if i not in null_steps]
    s = Solution(problem, steps, label_source="human", prelabel=prelabel,
                 labeller=opt(d, "labeler", (str,), ""), timestamp=opt(d, "timestamp", (str,), ""),
                 generation=opt(d, "generation", (int,), ""),
                 quality_control=opt(d, "is_quality_control_question", (bool,), ""),
                 screening=opt(d, "is_initial_screening_question", (bool,), ""),
                 total_time_ms=opt(label, "total_time", (int,), "label"),
                 finish_reason=opt(label, "finish_reason", (str,), "label"))
    s.answer = extract_answer(s.texts[-1]) if s.texts else None
    note = _note(d, TOP, list(TOP))
    label_note = _note(label, LABEL, list(LABEL))
    if label_note:
        note["label"] = label_note
    if null_steps:
        note["null_steps"] = null_steps
    s.meta = _meta(note)
    return s


def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream a PRM800K file (JSONL, .gz, a JSON array or concatenated pretty-printed objects)."""
    return rows(path, from_prm800k, rejects)


# --- writing -----------------------------------------------------------------------------------------

def _completion_out(c: Completion, human: bool = False) -> dict:
    note = c.meta.get("prm800k", {})
    values = {"text": c.text, "rating": c.rating, "flagged": c.flagged, "source": c.source}
    default = list(HUMAN if human and c.source is not None else COMPLETION)
    return _emit(values, default, note)


def _step_out(step: Step) -> dict:
    note = step.meta.get("prm800k", {})
    completions = None if note.get("null_completions") else [_completion_out(c) for c in step.completions]
    values = {"completions": completions, "chosen_completion": step.chosen,
              "human_completion": _completion_out(step.human, human=True) if step.human else None}
    return _emit(values, list(STEP), note)


def _question_out(s: Solution) -> dict:
    p, pre = s.problem, s.prelabel or Prelabel()
    values = {"problem": p.problem, "ground_truth_answer": p.answer, "ground_truth_solution": p.solution,
              "pre_generated_steps": pre.steps, "pre_generated_answer": pre.answer,
              "pre_generated_verifier_score": pre.verifier_score}
    return _emit(values, _question_default(p, s.prelabel), p.meta.get("prm800k", {}))


def to_prm800k(s: Solution) -> dict:
    """A :class:`Solution` as a raw PRM800K record: the inverse of :func:`from_prm800k`.

    Soft values, model scores, ids, grades and provenance PRM800K has no key for are not written.
    """
    note = s.meta.get("prm800k", {})
    steps = [_step_out(step) for step in s.steps]
    for i in note.get("null_steps", []):
        steps.insert(i, dict(NULL_STEP))
    label = _emit({"steps": steps, "total_time": s.total_time_ms, "finish_reason": s.finish_reason},
                  list(LABEL), note.get("label", {}))
    values = {"labeler": s.labeller, "timestamp": s.timestamp, "generation": s.generation,
              "is_quality_control_question": s.quality_control, "is_initial_screening_question": s.screening,
              "question": _question_out(s), "label": label}
    return _emit(values, list(TOP), note)


def write(records: Iterable[Solution], path, options: Options = DEFAULTS, dropped=None) -> int:
    """Write solutions as PRM800K JSON Lines (atomically); return the number written."""
    n = 0
    with atomic_output(path) as f:
        for s in records:
            f.write(dumps(to_prm800k(s)) + "\n")
            n += 1
    return n
