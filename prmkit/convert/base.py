"""What every converter shares: the options, the format record, and the small pure helpers.

Readers turn rows of a foreign file into :class:`~prmkit.schema.Solution` (or
:class:`~prmkit.schema.Problem`) records; writers turn records back into rows. A reader reports a bad
row by raising :class:`~prmkit.schema.SchemaError` with the *source* field path (``label.steps[2].
completions[0].rating``); :func:`rows` turns that into a :class:`~prmkit.io.RecordError` naming file
and line, or sends the row to the rejects file.

>>> hard_label(0, Options(neutral="negative"))
False
>>> supervised([1, 0, -1, 1], Options(neutral="positive"))
[True, True, False]
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prmkit.io import RecordError, RejectWriter, atomic_output, iter_json, read_records
from prmkit.schema import Completion, Problem, SchemaError, Solution, check_type

NEUTRAL_POLICIES = ("positive", "negative", "drop")
SUPERVISE = ("first_error", "all")
SPLIT_MODES = ("newline", "blank", "paragraphs", "sentences", "marker")
"""How a reader of whole-text solutions cuts a text into steps: the modes of
:func:`prmkit.steps.split_steps` that need no further setting ("marker" uses ``Options.marker``)."""
ANSWER_MARK = "\n\n# Answer\n\n"


@dataclass(frozen=True)
class Options:
    """Settings of a conversion. Inert: checked on creation, no I/O.

    Only writers that must squeeze a three-way or missing label into a binary one read ``neutral``
    and ``supervise``; every other option is specific to one format and ignored by the rest.
    """

    neutral: str | None = None
    """How a neutral (0) step becomes a binary label: "positive", "negative", or "drop" (the whole
    solution is left out and counted). None: a neutral step met by a binary target is an error."""
    supervise: str = "first_error"
    """Which steps binary targets label: "first_error" (up to and including the first wrong step,
    the method's rule) or "all" (every step; an unrated step then drops the solution)."""
    marker: str = "ки"
    """Math-Shepherd's step tag, replaced by "+" or "-" in the label string."""
    step_separator: str = "\n"
    """What joins the tagged steps of a Math-Shepherd input."""
    split: str | None = None
    """How formats that store a solution as one text (``qwen-candidates``, ``gsm8k-examples``, ``text``)
    cut it into steps: one of :data:`SPLIT_MODES`. None: the format's own default. Formats whose rows
    hold steps already refuse it rather than ignore it."""

    def __post_init__(self):
        if self.neutral is not None and self.neutral not in NEUTRAL_POLICIES:
            raise ValueError(f"neutral policy must be one of {', '.join(NEUTRAL_POLICIES)}, got {self.neutral!r}")
        if self.supervise not in SUPERVISE:
            raise ValueError(f"supervise must be one of {', '.join(SUPERVISE)}, got {self.supervise!r}")
        if not self.marker.strip():
            raise ValueError("the step marker must not be blank")
        if self.split is not None and self.split not in SPLIT_MODES:
            raise ValueError(f"split must be one of {', '.join(SPLIT_MODES)}, got {self.split!r}")


DEFAULTS = Options()
"""The default options, shared (they are frozen)."""


@dataclass(frozen=True)
class Format:
    """A file format prmkit reads and/or writes.

    ``read(path, options, rejects)`` yields records; ``write(records, path, options, dropped=None)``
    writes them atomically and returns the number of rows written, counting what it had to leave
    out in ``dropped`` (a :class:`collections.Counter` of reasons). Either may be None.
    """

    name: str
    doc: str
    read: Callable[..., Iterator[Solution | Problem]] | None = None
    write: Callable[..., int] | None = None
    holds: str = "solutions"
    """"solutions" or "problems": what the format's records are."""
    split: str | None = None
    """The default of ``Options.split`` for a format that stores each solution as one text; None for a
    format whose rows hold steps already (``--split`` is then an error)."""
    step_scores: bool = False
    """Whether a row can carry a PRM's per-step scores, so that ``prmkit eval steps --from`` reads it."""


class Dropped(Exception):
    """A record the target format cannot hold under the chosen options (counted, not an error)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


# --- reading ---------------------------------------------------------------------------------------

def rows(path, parse: Callable[[Any], Any], rejects: RejectWriter | None = None) -> Iterator[Any]:
    """Parse every JSON value of ``path`` with ``parse(value)``; errors name file, line and field."""
    return read_records(path, lambda value, _path: parse(value), rejects=rejects)


def numbered_rows(path, parse: Callable[[Any, int], Iterable[Any]],
                  rejects: RejectWriter | None = None) -> Iterator[Any]:
    """Every record ``parse(value, line)`` makes of each JSON value of ``path`` (a row may give several).

    ``line`` is where the value starts (an array element's 1-based position). A :class:`SchemaError`
    names file, line and field, or sends the whole row to ``rejects``.
    """
    for raw in iter_json(path, rejects):
        try:
            records = list(parse(raw.value, raw.line))
        except SchemaError as e:
            error = RecordError(path, raw.line, e.field, e.message)
            if rejects is None:
                raise error from None
            rejects.add(error, raw)
            continue
        yield from records


def req(d: Any, key: str, types: tuple[type, ...], path: str = "") -> Any:
    """``d[key]`` checked against ``types``; a :class:`SchemaError` naming ``path.key`` otherwise."""
    where = f"{path}.{key}" if path else key
    if not isinstance(d, dict):
        raise SchemaError(path or "record", f"expected an object, got {type(d).__name__}")
    if key not in d:
        raise SchemaError(where, "missing required field")
    return check_type(d[key], types, where)


def opt(d: dict, key: str, types: tuple[type, ...], path: str = "") -> Any:
    """Like :func:`req` but None when absent or null."""
    if d.get(key) is None:
        return None
    return req(d, key, types, path)


def text_of(value: Any, path: str) -> str:
    """A step text: a non-blank string."""
    check_type(value, (str,), path)
    if not value.strip():
        raise SchemaError(path, "empty step")
    return value


def grouped(records: Iterable[Any], key: Callable[[Any], Any]) -> Iterator[list]:
    """Consecutive records with equal ``key``, as lists (streaming; one group in memory).

    >>> [len(g) for g in grouped([1, 1, 2, 1], key=lambda x: x)]
    [2, 1, 1]
    """
    group: list = []
    for record in records:
        if group and key(group[-1]) != key(record):
            yield group
            group = []
        group.append(record)
    if group:
        yield group


# --- linear paths and binary labels ------------------------------------------------------------------

def linear(solution: Solution) -> list[Completion]:
    """The steps as one path, for formats with one text per step.

    The taken completion of every step; a step where nothing was taken (labelling stopped there)
    contributes its first completion rated -1 (the mistake that stopped it), or nothing.

    >>> from prmkit.schema import Step
    >>> s = Solution.from_steps("q", ["a"], ratings=[1])
    >>> s.steps.append(Step([Completion("b", rating=1), Completion("c", rating=-1)], chosen=None))
    >>> [c.text for c in linear(s)]
    ['a', 'c']
    """
    path = []
    for step in solution.steps:
        if step.taken is not None:
            path.append(step.taken)
            continue
        wrong = [c for c in step.completions if c.rating == -1]
        if wrong:
            path.append(wrong[0])
        break
    return path


def hard_label(rating: int | None, options: Options) -> bool | None:
    """A -1/0/+1 rating as a binary label under the neutral policy; None when it cannot be labelled.

    >>> [hard_label(r, Options(neutral="positive")) for r in (1, 0, -1, None)]
    [True, True, False, None]
    """
    if rating is None:
        return None
    if rating == 0:
        if options.neutral is None:
            raise ValueError("a neutral (0) step needs an explicit neutral policy: "
                             "--neutral positive, negative or drop")
        if options.neutral == "drop":
            raise Dropped("neutral step (policy: drop)")
        return options.neutral == "positive"
    return rating == 1


def supervised(ratings: list[int | None], options: Options) -> list[bool]:
    """Binary labels for the supervised steps: up to the first wrong one, or all of them.

    Raises :class:`Dropped` when a supervised step is neutral under the "drop" policy or unrated.

    >>> supervised([1, -1, None], Options())
    [True, False]
    >>> supervised([1, 1, 1], Options(supervise="all"))
    [True, True, True]
    """
    labels: list[bool] = []
    for rating in ratings:
        label = hard_label(rating, options)
        if label is None:
            raise Dropped("unrated step")
        labels.append(label)
        if not label and options.supervise == "first_error":
            break
    return labels


def write_rows(records: Iterable[Solution], path, to_row: Callable[[Solution, Options], dict],
               options: Options, dropped: Counter | None = None, array: bool = False) -> int:
    """Write ``to_row`` of every record atomically, as JSON Lines or (``array``) one JSON array.

    A record ``to_row`` cannot express (:class:`Dropped`) is left out and counted in ``dropped``.
    Returns the number of rows written.
    """
    n = 0
    with atomic_output(path) as f:
        f.write("[\n" if array else "")
        for record in records:
            try:
                row = to_row(record, options)
            except Dropped as e:
                count_drop(dropped, e.reason)
                continue
            if array:
                f.write((",\n" if n else "") + json.dumps(row, ensure_ascii=False, indent=2))
            else:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
        f.write("\n]\n" if array else "")
    return n


def count_drop(dropped: Counter | None, reason: str) -> None:
    if dropped is not None:
        dropped[reason] += 1


def problems_of(records: Iterable[Any]) -> Iterator[Problem]:
    """Problems, from problem records or from the problem of each solution."""
    for record in records:
        yield record.problem if isinstance(record, Solution) else record
