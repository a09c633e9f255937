"""The prmkit record: one step-labelled solution to one problem.

Every stage of prmkit reads and writes these records, in memory as the dataclasses below and on disk
as one JSON object per line (see :mod:`prmkit.io`). The schema keeps everything PRM800K records and
what the other formats need; ``docs/schema.md`` shows one fully annotated record.

A record is a :class:`Solution`. It embeds its :class:`Problem` and a list of :class:`Step`. A step
holds one or more alternative :class:`Completion` (PRM800K phase 1 rates several candidate next steps)
and says which one the solution continued with (``chosen``), or carries the ``human`` completion a
labeller wrote when none was good. Most formats have exactly one completion per step.

>>> s = Solution.from_steps("1+1?", ["1+1 = 2.", "# Answer\\n\\n2"], ratings=[1, 1], answer="2")
>>> s.ratings, s.texts[0]
([1, 1], '1+1 = 2.')
>>> Solution.from_dict(s.to_dict()) == s
True

Serialisation omits fields at their defaults, so a record on disk holds only what is known.
Unknown keys are an error (they are usually typos); foreign data that has no field here goes in
``meta``, which every level has and which round-trips untouched.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

RATINGS = (-1, 0, 1)
"""Step ratings as PRM800K defines them: -1 bad, 0 okay (neutral), +1 great."""

LABEL_SOURCES = ("human", "oracle", "model", "rollout", "judge")
"""Who produced a label: a person, the lab's exact oracle, a reward model, Monte-Carlo rollouts, an LLM judge."""

GRADES = ("correct", "incorrect", "unparseable")
"""Verdicts of :func:`prmkit.grade.grade`. A grader crash is an error, never a verdict."""

FINISH_REASONS = ("solution", "found_error", "give_up", "bad_problem")
"""Why labelling of a solution ended (PRM800K's ``finish_reason``); other strings are accepted too."""


class SchemaError(ValueError):
    """A record does not fit the schema. ``field`` is the dotted path of the offending field."""

    def __init__(self, field_path: str, message: str):
        self.field = field_path
        self.message = message
        super().__init__(f"{field_path}: {message}" if field_path else message)


# --- field checking -------------------------------------------------------------------------------

def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def check_type(value: Any, types: tuple[type, ...], path: str) -> Any:
    """``value`` when it is one of ``types`` (a boolean is never an int); else :class:`SchemaError` at ``path``.

    >>> check_type(3, (int,), "rating")
    3
    """
    # bool is an int in Python; a rating of `true` must not pass as +1.
    if isinstance(value, bool) and bool not in types:
        raise SchemaError(path, f"expected {_type_names(types)}, got a boolean")
    if not isinstance(value, types):
        raise SchemaError(path, f"expected {_type_names(types)}, got {type(value).__name__}")
    return value


def _type_names(types: tuple[type, ...]) -> str:
    return " or ".join({"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
                        "dict": "an object", "list": "a list", "NoneType": "null"}.get(t.__name__, t.__name__)
                       for t in types)


def _opt(d: dict, key: str, types: tuple[type, ...], path: str, default: Any = None) -> Any:
    if key not in d or d[key] is None:
        return default
    return check_type(d[key], types, _join(path, key))


def _req(d: dict, key: str, types: tuple[type, ...], path: str) -> Any:
    if key not in d:
        raise SchemaError(_join(path, key), "missing required field")
    return check_type(d[key], types, _join(path, key))


def _no_unknown(d: dict, known: Iterable[str], path: str) -> None:
    unknown = sorted(set(d) - set(known))
    if unknown:
        where = _join(path, unknown[0])
        raise SchemaError(where, f"unknown field (known: {', '.join(sorted(known))}; put foreign data in 'meta')")


def _as_object(value: Any, path: str) -> dict:
    return check_type(value, (dict,), path)


def check_rating(value: Any, path: str) -> int | None:
    """Return a valid rating (-1, 0, +1) or None; raise :class:`SchemaError` naming ``path`` otherwise."""
    if value is None:
        return None
    check_type(value, (int,), path)
    if value not in RATINGS:
        raise SchemaError(path, f"unknown rating {value!r} (expected -1, 0 or 1)")
    return value


def check_value(value: Any, path: str) -> float | None:
    """Return a soft label in [0, 1] as a float, or None."""
    if value is None:
        return None
    check_type(value, (int, float), path)
    if not 0.0 <= float(value) <= 1.0:
        raise SchemaError(path, f"soft label {value!r} is outside [0, 1]")
    return float(value)


def _check_choice(value: Any, choices: tuple[str, ...], path: str) -> str | None:
    if value is None:
        return None
    check_type(value, (str,), path)
    if value not in choices:
        raise SchemaError(path, f"unknown value {value!r} (expected one of {', '.join(choices)})")
    return value


@functools.cache
def _names(cls: type) -> frozenset[str]:
    """The field names of a record class (``dataclasses.fields`` is slow to ask once per record)."""
    return frozenset(f.name for f in dataclasses.fields(cls))


@functools.cache
def _defaults(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """``(name, default or default factory, whether a factory)`` of every field of a record class."""
    return tuple((f.name, f.default_factory, True) if f.default_factory is not dataclasses.MISSING
                 else (f.name, f.default, False) for f in dataclasses.fields(cls))


def _compact(obj: Any) -> dict:
    """A dataclass as a dict without the fields that sit at their defaults."""
    out = {}
    for name, default, factory in _defaults(type(obj)):
        value = getattr(obj, name)
        if factory:
            default = default()
        if value != default or (value is None and default is not None):
            out[name] = value
    return out


# --- fast paths -----------------------------------------------------------------------------------
# Reading is most of the cost of a large scored file: a step's completion is read once per step of every
# record. The fast paths accept only what is plainly valid (exact JSON types, known keys, values in range)
# and build the same objects as the full checks; anything else (an error among them) goes through the full
# checks, which name the field. So they change no result and no message, only the time.

def _plain_completion(d: Any) -> Completion | None:
    """The completion ``d`` describes, when it is plainly valid; None to take the full checks."""
    if type(d) is not dict or not _COMPLETION_KEYS.issuperset(d):
        return None
    text, rating, flagged = d.get("text"), d.get("rating"), d.get("flagged")
    value, source, meta = d.get("value"), d.get("source"), d.get("meta")
    if type(text) is not str or (rating is not None and (type(rating) is not int or rating not in RATINGS)):
        return None
    if (flagged is not None and type(flagged) is not bool) or (meta is not None and type(meta) is not dict):
        return None
    if source is not None and (type(source) is not str or source not in LABEL_SOURCES):
        return None
    if value is not None:
        if type(value) not in (int, float) or not 0.0 <= value <= 1.0:
            return None
        value = float(value)
    return Completion(text, rating, flagged, value, source, {} if meta is None else meta)


def _plain_step(d: Any) -> Step | None:
    """The step ``d`` describes, when it is plainly valid (no human completion among them); None to take the
    full checks."""
    if type(d) is not dict or not _STEP_KEYS.issuperset(d) or d.get("human") is not None:
        return None
    raw, scores, meta = d.get("completions"), d.get("scores"), d.get("meta")
    if type(raw) is not list or (scores is not None and type(scores) is not dict):
        return None
    if meta is not None and type(meta) is not dict:
        return None
    completions = []
    for c in raw:
        completion = _plain_completion(c)
        if completion is None:
            return None
        completions.append(completion)
    chosen = d.get("chosen", 0)
    if chosen is None or type(chosen) is not int or not 0 <= chosen < len(completions):
        return None
    if not completions[chosen].text.strip():
        return None
    return Step(completions, chosen, None, {} if scores is None else scores, {} if meta is None else meta)


# --- the records ----------------------------------------------------------------------------------

@dataclass
class Completion:
    """One candidate text for a step, with its label.

    ``rating`` is the hard label (-1/0/+1, None when unrated), ``value`` a soft label in [0, 1]
    (the share of Monte-Carlo rollouts that reach the right answer), ``flagged`` the labeller's
    "unsure" flag, ``source`` who labelled it when it differs from the solution's ``label_source``.
    """

    text: str
    rating: int | None = None
    flagged: bool | None = None
    value: float | None = None
    source: str | None = None
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return _compact(self)

    @classmethod
    def from_dict(cls, d: Any, path: str = "completion") -> Completion:
        if (plain := _plain_completion(d)) is not None:
            return plain
        d = _as_object(d, path)
        _no_unknown(d, _names(cls), path)
        return cls(
            text=_req(d, "text", (str,), path),
            rating=check_rating(d.get("rating"), _join(path, "rating")),
            flagged=_opt(d, "flagged", (bool,), path),
            value=check_value(d.get("value"), _join(path, "value")),
            source=_check_choice(d.get("source"), LABEL_SOURCES, _join(path, "source")),
            meta=_opt(d, "meta", (dict,), path, {}),
        )


@dataclass
class Step:
    """One step of a solution: its alternative completions and which one the solution went on with.

    ``chosen`` indexes ``completions``; it is None when the labeller wrote ``human`` instead, or when
    labelling stopped at this step without choosing (PRM800K's ``chosen_completion: null``).
    ``scores`` holds model outputs for the step (for example ``{"p_pos": 0.93, "p_neu": 0.02, "p_neg": 0.05}``).
    """

    completions: list[Completion]
    chosen: int | None = 0
    human: Completion | None = None
    scores: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @classmethod
    def of(cls, text: str, rating: int | None = None, value: float | None = None, **completion) -> Step:
        """A step with a single completion, the common case."""
        return cls([Completion(text, rating=rating, value=value, **completion)])

    @property
    def taken(self) -> Completion | None:
        """The completion the solution continued with: the chosen one, else the human-written one."""
        if self.chosen is not None and 0 <= self.chosen < len(self.completions):
            return self.completions[self.chosen]
        return self.human

    @property
    def text(self) -> str | None:
        taken = self.taken
        return taken.text if taken is not None else None

    @property
    def rating(self) -> int | None:
        taken = self.taken
        return taken.rating if taken is not None else None

    @property
    def value(self) -> float | None:
        taken = self.taken
        return taken.value if taken is not None else None

    def to_dict(self) -> dict:
        out = _compact(self)
        out["completions"] = [c.to_dict() for c in self.completions]
        if self.human is not None:
            out["human"] = self.human.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Any, path: str = "step") -> Step:
        plain = _plain_step(d)
        return plain if plain is not None else cls._checked(d, path)

    @classmethod
    def _checked(cls, d: Any, path: str) -> Step:
        """The step ``d`` describes, through every check (each error names its field)."""
        d = _as_object(d, path)
        _no_unknown(d, _names(cls), path)
        raw = _req(d, "completions", (list,), path)
        completions = [Completion.from_dict(c, _join(_join(path, "completions"), i)) for i, c in enumerate(raw)]
        chosen = d.get("chosen", 0)
        if chosen is not None:
            check_type(chosen, (int,), _join(path, "chosen"))
            if not 0 <= chosen < len(completions):
                raise SchemaError(_join(path, "chosen"), f"index {chosen} but the step has {len(completions)} completions")
        human = Completion.from_dict(d["human"], _join(path, "human")) if d.get("human") is not None else None
        step = cls(completions, chosen, human, _opt(d, "scores", (dict,), path, {}), _opt(d, "meta", (dict,), path, {}))
        if step.taken is None and not completions:
            raise SchemaError(path, "empty step: no completions and no human completion")
        if step.taken is not None and not step.taken.text.strip():
            raise SchemaError(_join(path, "completions"), "empty step text")
        return step



_COMPLETION_KEYS = _names(Completion)
_STEP_KEYS = _names(Step)

@dataclass
class Problem:
    """A problem with its reference answer and solution, when known."""

    problem: str
    answer: str | None = None
    solution: str | None = None
    id: str | None = None
    subject: str | None = None
    level: int | str | None = None
    source: str | None = None
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return _compact(self)

    @classmethod
    def from_dict(cls, d: Any, path: str = "problem") -> Problem:
        d = _as_object(d, path)
        _no_unknown(d, _names(cls), path)
        return cls(
            problem=_req(d, "problem", (str,), path),
            answer=_opt(d, "answer", (str,), path),
            solution=_opt(d, "solution", (str,), path),
            id=_opt(d, "id", (str,), path),
            subject=_opt(d, "subject", (str,), path),
            level=_opt(d, "level", (int, str), path),
            source=_opt(d, "source", (str,), path),
            meta=_opt(d, "meta", (dict,), path, {}),
        )


@dataclass
class Generator:
    """The model that wrote a solution and how it was sampled."""

    name: str
    sampling: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return _compact(self)

    @classmethod
    def from_dict(cls, d: Any, path: str = "generator") -> Generator:
        d = _as_object(d, path)
        _no_unknown(d, ["name", "sampling"], path)
        return cls(_req(d, "name", (str,), path), _opt(d, "sampling", (dict,), path, {}))


@dataclass
class Prelabel:
    """What PRM800K phase 2 showed the labeller before labelling: the generator's own steps and answer.

    ``verifier_score`` is the score of the PRM that selected the solution for labelling.
    """

    steps: list[str] | None = None
    answer: str | None = None
    verifier_score: float | None = None
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return _compact(self)

    @classmethod
    def from_dict(cls, d: Any, path: str = "prelabel") -> Prelabel:
        d = _as_object(d, path)
        _no_unknown(d, _names(cls), path)
        steps = _opt(d, "steps", (list,), path)
        for i, s in enumerate(steps or []):
            check_type(s, (str,), _join(_join(path, "steps"), i))
        return cls(steps, _opt(d, "answer", (str,), path), _opt(d, "verifier_score", (int, float), path),
                   _opt(d, "meta", (dict,), path, {}))


@dataclass
class Solution:
    """One solution to one problem, step by step, with its labels and provenance.

    Provenance of the labels (PRM800K): ``labeller``, ``timestamp``, ``generation`` (-1 is the
    screening set), ``quality_control``, ``screening``, ``total_time_ms``, ``finish_reason``.
    Provenance of the text: ``generator`` and ``prelabel``. Outcome: ``answer`` (extracted final
    answer) and ``grade`` (one of :data:`GRADES`). ``scores`` holds solution-level model scores by
    name (``{"prm_min": 0.81, "orm": 0.4}``); ``outcome`` an outcome label in [0, 1] a file carries
    when it has no gradable answer.
    """

    problem: Problem
    steps: list[Step] = field(default_factory=list)
    id: str | None = None
    answer: str | None = None
    grade: str | None = None
    outcome: float | None = None
    finish_reason: str | None = None
    label_source: str | None = None
    labeller: str | None = None
    timestamp: str | None = None
    generation: int | None = None
    quality_control: bool | None = None
    screening: bool | None = None
    total_time_ms: int | None = None
    generator: Generator | None = None
    prelabel: Prelabel | None = None
    scores: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    # -- convenience ----------------------------------------------------------------------------
    @classmethod
    def from_steps(cls, problem: str | Problem, texts: list[str], ratings: list[int | None] | None = None,
                   values: list[float | None] | None = None, **fields) -> Solution:
        """Build a solution with one completion per step."""
        prob = problem if isinstance(problem, Problem) else Problem(problem)
        ratings = ratings or [None] * len(texts)
        values = values or [None] * len(texts)
        if not len(texts) == len(ratings) == len(values):
            raise SchemaError("steps", f"{len(texts)} steps but {len(ratings)} ratings and {len(values)} values")
        steps = [Step.of(t, rating=r, value=v) for t, r, v in zip(texts, ratings, values)]
        return cls(prob, steps, **fields)

    @property
    def texts(self) -> list[str]:
        """The text of every step the solution took (steps with nothing taken are skipped)."""
        return [s.text for s in self.steps if s.text is not None]

    @property
    def ratings(self) -> list[int | None]:
        """The rating of every step the solution took, one per entry of :attr:`texts`."""
        return [s.rating for s in self.steps if s.taken is not None]

    @property
    def values(self) -> list[float | None]:
        return [s.value for s in self.steps if s.taken is not None]

    def first_error(self) -> int | None:
        """0-based index (into :attr:`ratings`) of the first step rated -1, or None."""
        return next((i for i, r in enumerate(self.ratings) if r == -1), None)

    # -- (de)serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        out = _compact(self)
        out["problem"] = self.problem.to_dict()
        out["steps"] = [s.to_dict() for s in self.steps]
        for name in ("generator", "prelabel"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name).to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Solution:
        d = _as_object(d, path or "record")
        _no_unknown(d, _names(cls), path)
        steps = _opt(d, "steps", (list,), path, [])
        return cls(
            problem=Problem.from_dict(_req(d, "problem", (dict,), path), _join(path, "problem")),
            steps=[_plain_step(s) or Step._checked(s, _join(_join(path, "steps"), i)) for i, s in enumerate(steps)],
            id=_opt(d, "id", (str,), path),
            answer=_opt(d, "answer", (str,), path),
            grade=_check_choice(d.get("grade"), GRADES, _join(path, "grade")),
            outcome=check_value(d.get("outcome"), _join(path, "outcome")),
            finish_reason=_opt(d, "finish_reason", (str,), path),
            label_source=_check_choice(d.get("label_source"), LABEL_SOURCES, _join(path, "label_source")),
            labeller=_opt(d, "labeller", (str,), path),
            timestamp=_opt(d, "timestamp", (str,), path),
            generation=_opt(d, "generation", (int,), path),
            quality_control=_opt(d, "quality_control", (bool,), path),
            screening=_opt(d, "screening", (bool,), path),
            total_time_ms=_opt(d, "total_time_ms", (int,), path),
            generator=Generator.from_dict(d["generator"], _join(path, "generator")) if d.get("generator") else None,
            prelabel=Prelabel.from_dict(d["prelabel"], _join(path, "prelabel")) if d.get("prelabel") else None,
            scores=_opt(d, "scores", (dict,), path, {}),
            meta=_opt(d, "meta", (dict,), path, {}),
        )
