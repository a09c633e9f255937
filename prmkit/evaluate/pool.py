"""Scored candidate pools: many sampled solutions per problem, kept as flat numpy arrays.

A :class:`Pool` holds, for every sample of every problem, whether it has an answer, whether it is
correct, which answer-equivalence group it belongs to within its problem, and any number of score
columns. Samples of one problem are contiguous (``offsets``), in file order, so "the first sample" is
the first one the file lists. A million samples take about 30 MB (one byte per flag, four per group
id, eight per score), and files are streamed, never held whole.

Formats (``load_pool(path, format=...)``; ``"auto"`` detects the first four from the first record):

``prmkit``
    :class:`~prmkit.schema.Solution` records; samples grouped by ``problem.id`` (or the problem text).
    A missing ``grade`` is computed with :func:`prmkit.grade.grade` from ``problem.answer``.
``qwen-candidates``
    One line per problem (Qwen2.5-Math ``eval_rm_maj_example``): ``pred`` answers, ``score``
    correctness, ``pred_score`` reward-model scores (``[[x], ...]``), ``idx``.
``gsm8k-examples``
    One line per problem (openai/grade-school-math ``example_model_solutions``): four model solutions
    with ``is_correct``; the answer is the text after the last ``A:``. No score columns.
``prm800k-samples``
    One line per sample (openai/prm800k's released scored test samples, read as its ``eval/eval.py``
    reads them): ``problem`` text, ``answer`` (else ``given_answer``), ``is_correct``, and the score
    columns ``prm_score`` and ``orm_score`` where a sample has them. Grouped by the problem text.
any other solution format of :data:`prmkit.convert.FORMATS` (``processbench``, ``trl``, ``text``...)
    Read through its converter into :class:`~prmkit.schema.Solution` records, then as ``prmkit``. The
    registry is the one list of names (:data:`FORMATS`); what a candidate file's fields mean is read by
    :mod:`prmkit.convert.candidates` for both paths.

>>> pool = pool_from_lists([["4", "4", "5"], ["x", None]], [[1, 1, 0], [0, 0]], {"rm": [[.9, .8, .1], [.2, .3]]},
...                        answer_key="exact")
>>> pool.n_problems, pool.n_samples, pool.sizes.tolist(), pool.group.tolist()
(2, 5, [3, 2], [0, 0, 1, 0, -1])
"""

from __future__ import annotations

import functools
import math
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from operator import and_
from typing import Any

import numpy as np
import orjson

from prmkit.convert import read as read_format
from prmkit.convert import solution_formats
from prmkit.convert.base import req
from prmkit.convert.candidates import (
    GSM8K_EXAMPLE_MODELS,
    gsm8k_samples,
    is_prm800k_sample,
    plain_prm800k_sample,
    plain_qwen_row,
    prm800k_sample,
    qwen_samples,
)
from prmkit.evaluate.aggregate import AGGREGATIONS, aggregate, parse_score_spec
from prmkit.io import NoRecords, RecordError, iter_json, loads, open_binary
from prmkit.schema import SchemaError, Solution

NATIVE = ("prmkit", "qwen-candidates", "gsm8k-examples", "prm800k-samples")
"""The formats read straight into a pool, a raw record at a time (the candidate files' own meaning of
their columns, as the paper's and Qwen's evaluation scripts read them; ``auto`` detects these). Every
other format is read through its converter."""
FORMATS = tuple(solution_formats())
"""Every format ``prmkit eval bon --from`` takes: one registry (:data:`prmkit.convert.FORMATS`)."""


@dataclass
class Pool:
    """Candidate pools of many problems, flat. Samples of problem ``p`` are ``offsets[p]:offsets[p+1]``.

    ``group[i]`` is the answer-equivalence class of sample ``i`` within its problem (0, 1, ...), -1
    when it has no answer. ``correct`` is False for answerless samples. ``scores[name]`` is NaN where a
    sample has no score; such a sample is never picked by that column.
    """

    problem_ids: list[str]
    offsets: np.ndarray
    correct: np.ndarray
    has_answer: np.ndarray
    group: np.ndarray
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    format: str = "prmkit"
    group_conflicts: int = 0
    ungradable: int = 0
    """Samples left out because the grader could not decide them (grade ``unparseable``: a timeout, an
    answer it failed to read). They are no verdict, so they neither use budget nor count right or wrong;
    a sample with no answer is graded ``incorrect`` and stays in."""
    """Answer groups whose members carry different grades (the grader's equivalence and the file's grades disagree)."""
    truncated: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per score column, the samples without that score whose record says truncation at scoring dropped
    steps of the model behind it, by that record's ``NAME_steps_lost`` key (:func:`steps_lost_key`)."""
    valid: np.ndarray | None = None
    """The second gold, where the records carry step truth for every sample: the sample's every step is
    valid (no step rated -1, every step rated), or None. It gives the step-judge limit and valid-solution
    accuracy (:mod:`prmkit.evaluate.curves`)."""

    @property
    def n_problems(self) -> int:
        return len(self.problem_ids)

    @property
    def n_samples(self) -> int:
        return int(self.offsets[-1])

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def problem_index(self) -> np.ndarray:
        """The problem of every sample, as an index into ``problem_ids``."""
        return np.repeat(np.arange(self.n_problems), self.sizes)

    def column(self, name: str) -> np.ndarray:
        if name not in self.scores:
            raise ValueError(f"no score column {name!r} in the pool (columns: {', '.join(self.scores) or 'none'})")
        return self.scores[name]

    @property
    def nbytes(self) -> int:
        arrays = [self.offsets, self.correct, self.has_answer, self.group, *self.scores.values()]
        return sum(a.nbytes for a in arrays)


# --- answer grouping -------------------------------------------------------------------------------

def group_answers(answers: list[str], normalize: Callable[[str], str] = str.strip,
                  equivalent: Callable[[str, str], bool] | None = None, values: AnswerValues | None = None) -> list[int]:
    """Group one problem's distinct answers: same ``normalize`` key first, then merge equivalent groups.

    Returns a group id per answer, numbered in order of first appearance. Merging is transitive
    (union-find over the pairwise ``equivalent`` of group representatives, the earlier one in the role of
    gold). ``values`` spares most of those calls where many answers are plain numbers: answers it reads
    with equal values are merged at once, two read values that :attr:`AnswerValues.decide` calls different
    are never compared, and only the pairs it leaves undecided, or with an answer it does not read, go to
    ``equivalent``; the groups are the same as without it when ``equivalent`` agrees with it wherever it
    decides (``prmkit.grade``'s does: it decides such pairs by these values).

    >>> group_answers(["1/2", "0.5", " 1/2", "3"], equivalent=lambda a, b: {a, b} == {"1/2", "0.5"})
    [0, 0, 0, 1]
    """
    keys: dict[str, int] = {}
    first = [keys.setdefault(normalize(a), len(keys)) for a in answers]
    reps = [answers[first.index(k)] for k in range(len(keys))]
    parent = list(range(len(reps)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def merge(j: int, i: int) -> None:  # j < i: the earlier representative plays gold
        if root(i) != root(j) and equivalent(reps[j], reps[i]):
            parent[root(i)] = root(j)

    if equivalent is not None:
        read = [values.read(r) for r in reps] if values is not None else [None] * len(reps)
        for i in range(len(reps)):
            for j in range(i):
                if read[i] is None or read[j] is None:
                    merge(j, i)
        if values is not None:
            _merge_read(read, values, root, parent, merge)
    renumber: dict[int, int] = {}
    return [renumber.setdefault(root(k), len(renumber)) for k in first]


@dataclass(frozen=True)
class AnswerValues:
    """How :func:`group_answers` reads answers as values. ``read(answer)``: a hashable value, or None;
    ``decide(a, b)``: True (equal), False (different) or None (ask ``equivalent``); ``scalar(v)``: a float for
    a value that is one number and whose float can be trusted, else None (such values are compared with
    every other); ``decide`` of two scalars farther apart than ``window`` (relatively) is never None, so
    only neighbours in value order are compared."""

    read: Callable[[str], Any]
    decide: Callable[[Any, Any], bool | None]
    scalar: Callable[[Any], float | None]
    window: float


def _merge_read(read: list, values: AnswerValues, root, parent: list, merge) -> None:
    """Merge the representatives read as values: equal values at once; then, of two numbers, only the pairs
    close enough for ``values.decide`` to leave undecided (neighbours in value order within its window);
    of pairs with a value that is not one number (a tuple, a matrix), those it does not decide, through
    ``merge``."""
    by_value: dict = {}
    for i, v in enumerate(read):
        if v is not None:
            j = by_value.setdefault(v, i)
            if j != i and root(i) != root(j):
                parent[root(i)] = root(j)
    scalars = {i: values.scalar(v) for i, v in enumerate(read) if v is not None}
    order = sorted((x, i) for i, x in scalars.items() if x is not None)
    for a, (x, i) in enumerate(order):
        for b in range(a + 1, len(order)):
            y, j = order[b]
            if y - x > values.window * max(1.0, abs(x), abs(y)):
                break
            if values.decide(read[i], read[j]) is None:
                merge(min(i, j), max(i, j))
    others = {i for i, x in scalars.items() if x is None}
    for i in others:
        for j in scalars:  # every read value, each pair of two others once
            if (j not in others or j < i) and root(i) != root(j) and values.decide(read[i], read[j]) is None:
                merge(min(i, j), max(i, j))


def answer_grouper(answer_key: str) -> Callable[[list[str]], list[int]]:
    """``"grader"``: group by :mod:`prmkit.grade` equivalence; ``"exact"``: by the stripped string."""
    if answer_key == "exact":
        return lambda answers: group_answers(answers)
    if answer_key != "grader":
        raise ValueError(f"unknown answer key {answer_key!r} (expected 'grader' or 'exact')")
    from prmkit import grade  # imported here: the grader pulls in sympy, which exact grouping does not need

    # a pool's answers repeat across its problems: each distinct one is normalised and read once
    cached = functools.partial(functools.lru_cache, maxsize=1 << 16)
    values = AnswerValues(cached()(grade.grouping_value), grade.decide_values, grade.scalar_value, grade.CLOSE_WINDOW)
    normalize = cached()(grade.normalize)
    return lambda answers: group_answers(answers, normalize, grade.equivalent, values)


# --- building --------------------------------------------------------------------------------------

class PoolBuilder:
    """Accumulates samples one at a time in compact arrays; :meth:`build` returns the :class:`Pool`."""

    def __init__(self, columns: Iterable[str] | None = None, answer_key: str = "grader", format: str = "prmkit"):
        self.fixed_columns = list(columns) if columns is not None else None
        self.answer_key, self.format = answer_key, format
        self.problem_of: dict[str, int] = {}
        self.answers: list[dict[str, int]] = []  # per problem: distinct answer -> local id
        self.prob, self.local = array("i"), array("i")
        self.correct, self.has_answer = array("b"), array("b")
        self.scores: dict[str, array] = {c: array("d") for c in self.fixed_columns or []}
        self.lost: dict[str, array] = {}  # model NAME -> per sample: its record has NAME_steps_lost > 0
        self.ungradable = 0  # samples the grader could not decide, left out (Pool.ungradable)
        self.seen: set[str] = set()  # every score the records hold, to name them when a column is misspelt
        self.valid = array("b")  # per sample: 1 every step valid, 0 not, -1 no step truth (Pool.valid)

    def add(self, problem: str, answer: str | None, correct: bool, scores: dict[str, float] | None = None,
            solution_scores: dict | None = None, valid: bool | None = None) -> None:
        """One sample. ``solution_scores``: its record's own scores, to tell truncation (``NAME_steps_lost``)
        apart among the samples that lack a column. ``valid``: whether its every step is valid, where known."""
        self.valid.append(-1 if valid is None else int(bool(valid)))
        p = self.problem_of.setdefault(problem, len(self.problem_of))
        if p == len(self.answers):
            self.answers.append({})
        answered = answer is not None and answer.strip() != ""
        self.prob.append(p)
        self.local.append(self.answers[p].setdefault(answer, len(self.answers[p])) if answered else -1)
        self.has_answer.append(answered)
        self.correct.append(bool(correct) and answered)
        self._add_scores(scores or {})
        if solution_scores or self.lost:
            self._add_lost(solution_scores or {})

    def add_many(self, problem: str, answers: list[str | None], correct: list[bool],
                 scores: dict[str, list[float | None]] | None = None) -> None:
        """Samples of one problem at once (a one-line-per-problem pool's row): what :meth:`add` of each, in
        order, would do, with no per-sample call. ``scores``: per column, a value or None per sample."""
        n = len(answers)
        if not n:  # as add: a problem is known by its samples
            return
        p = self.problem_of.setdefault(problem, len(self.problem_of))
        if p == len(self.answers):
            self.answers.append({})
        ids = self.answers[p]
        # per distinct answer first (a released row: 1,860 samples, a few dozen answers), then mapped in C loops
        distinct = {a: a is not None and a.strip() != "" for a in dict.fromkeys(answers)}
        for a, ok in distinct.items():
            if ok:
                ids.setdefault(a, len(ids))
        answered = list(map(distinct.__getitem__, answers))
        before = len(self.prob)
        self.valid.extend(array("b", [-1]) * n)
        self.prob.extend(array("i", [p]) * n)
        self.local.extend(array("i", list(map(ids.get, answers, repeat(-1, n)))))  # an unanswered one is no key
        self.has_answer.frombytes(bytes(answered))
        self.correct.frombytes(bytes(list(map(and_, map(bool, correct), answered))))
        scores = scores or {}
        if self.fixed_columns is None:
            for name, values in scores.items():
                if name not in self.scores and any(v is not None for v in values):
                    self.scores[name] = array("d", [math.nan]) * before
        for name, col in self.scores.items():
            values = scores.get(name)
            col.extend([math.nan if v is None else float(v) for v in values] if values is not None
                       else array("d", [math.nan]) * n)
        for col in self.lost.values():
            col.extend(array("b", [0]) * n)

    def _add_lost(self, scores: dict) -> None:
        self.seen.update(k for k in scores if not k.endswith(STEPS_LOST))
        n = len(self.prob) - 1
        models = {k.removesuffix(STEPS_LOST) for k, v in scores.items() if k.endswith(STEPS_LOST) and v}
        for model in models - self.lost.keys():
            self.lost[model] = array("b", [0]) * n
        for model, col in self.lost.items():
            col.append(model in models)

    def _truncated(self, column: str) -> dict[str, int]:
        """Samples without ``column`` whose record says the model behind it lost steps to truncation."""
        name, step_key = column.partition(":")[0], ":" in column
        unscored = np.isnan(np.frombuffer(self.scores[column], dtype=np.float64))
        out = {}
        for model, col in self.lost.items():
            if writes_column(model, name, step_key):
                n = int(np.sum(unscored & np.frombuffer(col, dtype=np.int8).astype(bool)))
                if n:
                    out[model + STEPS_LOST] = n
        return out

    def _add_scores(self, scores: dict[str, float]) -> None:
        n = len(self.prob) - 1
        if self.fixed_columns is None:
            for name in scores:
                if name not in self.scores:
                    self.scores[name] = array("d", [math.nan]) * n
        for name, col in self.scores.items():
            value = scores.get(name)
            col.append(math.nan if value is None else float(value))

    def build(self) -> Pool:
        if not self.prob:
            raise ValueError("no samples to evaluate")
        prob = np.frombuffer(self.prob, dtype=np.int32)
        order = np.argsort(prob, kind="stable")  # contiguous problems, file order within each
        sizes = np.bincount(prob, minlength=len(self.problem_of))
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        group = self._groups(prob, np.frombuffer(self.local, dtype=np.int32))[order]
        correct = np.frombuffer(self.correct, dtype=np.int8).astype(bool)[order]
        pool = Pool(list(self.problem_of), offsets, correct,
                    np.frombuffer(self.has_answer, dtype=np.int8).astype(bool)[order], group,
                    {k: np.frombuffer(v, dtype=np.float64)[order] for k, v in self.scores.items()}, self.format)
        pool.group_conflicts = count_group_conflicts(pool)
        pool.ungradable = self.ungradable
        valid = np.frombuffer(self.valid, dtype=np.int8)[order]
        pool.valid = valid.astype(bool) if valid.size and (valid >= 0).all() else None  # every sample, or none
        pool.truncated = {name: self._truncated(name) for name in pool.scores}
        for name in self.fixed_columns or []:
            if np.isnan(pool.scores[name]).all():
                lost = pool.truncated[name]
                why = f"; {truncation_note('they', lost, name)}" if lost else self._columns_note(name)
                raise ValueError(f"score column {name!r} is missing from every sample{why}")
        return pool

    def _columns_note(self, name: str) -> str:
        """The columns that exist, and the nearest to a misspelt ``name``."""
        import difflib

        if not self.seen:
            return "; the samples hold no solution scores (score them with `prmkit score`)"
        near = difflib.get_close_matches(name, sorted(self.seen), n=1)
        hint = f": did you mean {near[0]!r}?" if near else "."
        return f"{hint} The file's columns: {', '.join(sorted(self.seen))} (or KEY:AGG of a step score)"

    def _groups(self, prob: np.ndarray, local: np.ndarray) -> np.ndarray:
        grouper = answer_grouper(self.answer_key)
        starts = np.zeros(len(self.answers) + 1, dtype=np.int64)
        mapping: list[int] = []
        for p, distinct in enumerate(self.answers):
            mapping.extend(grouper(list(distinct)) if distinct else [])
            starts[p + 1] = len(mapping)
        mapping_arr = np.asarray(mapping + [-1], dtype=np.int32)
        index = np.where(local >= 0, starts[prob] + local, len(mapping))
        return mapping_arr[index]


def count_group_conflicts(pool: Pool) -> int:
    """How many answer groups hold both correct and incorrect samples."""
    key = pool.problem_index().astype(np.int64) * (int(pool.group.max(initial=0)) + 1) + pool.group
    answered = pool.group >= 0
    keys, inverse = np.unique(key[answered], return_inverse=True)
    n_correct = np.bincount(inverse, weights=pool.correct[answered], minlength=keys.size)
    n_total = np.bincount(inverse, minlength=keys.size)
    return int(np.sum((n_correct > 0) & (n_correct < n_total)))


def pool_from_lists(answers: list[list[str | None]], correct: list[list[bool]],
                    scores: dict[str, list[list[float]]] | None = None, answer_key: str = "grader",
                    valid: list[list[bool]] | None = None) -> Pool:
    """A pool from nested lists (one list per problem), for tests and notebooks; ``valid``: every step valid."""
    builder = PoolBuilder(list(scores or {}), answer_key=answer_key, format="lists")
    for p, (ans, cor) in enumerate(zip(answers, correct)):
        for i, (a, c) in enumerate(zip(ans, cor)):
            builder.add(str(p), a, c, {k: v[p][i] for k, v in (scores or {}).items()},
                        valid=None if valid is None else valid[p][i])
    return builder.build()


# --- formats ---------------------------------------------------------------------------------------

def detect_format(record: Any) -> str:
    """The format of a file from its first record.

    >>> detect_format({"pred": ["1"], "score": [True], "pred_score": [[0.5]]})
    'qwen-candidates'
    >>> detect_format({"problem": "What is 2+2?", "answer": "4", "is_correct": True, "prm_score": 0.9})
    'prm800k-samples'
    """
    if not isinstance(record, dict):
        raise TypeError("cannot detect the pool format: the first record is not a JSON object")
    if {"pred", "score"} <= record.keys():
        return "qwen-candidates"
    if any(isinstance(record.get(m), dict) and "is_correct" in record[m] for m in GSM8K_EXAMPLE_MODELS):
        return "gsm8k-examples"
    if is_prm800k_sample(record):
        return "prm800k-samples"
    if "problem" in record:
        return "prmkit"
    raise ValueError(f"cannot detect the pool format from keys {sorted(record)[:8]}; pass --from "
                     f"({', '.join(FORMATS)})")


def load_pool(path, format: str = "auto", columns: list[str] | None = None, answer_key: str = "grader",
              step_truth: Callable[[Solution], list | None] | None = None) -> Pool:
    """Stream a file into a :class:`Pool`. ``columns``: score specs to keep (``name`` or ``step_key:agg``); all when None.

    ``format``: any of :data:`FORMATS` (every solution format :mod:`prmkit.convert` reads), or ``auto``
    to detect one of :data:`NATIVE` from the first record. ``step_truth(solution)``: the true rating
    (-1, 0, +1) of each step the solution took, or None where unknown; default
    :func:`recorded_step_truth` (the records' own step ratings, as in human-verified data). Where every
    sample has it, the pool carries :attr:`Pool.valid`."""
    if format not in FORMATS and format != "auto":
        raise ValueError(f"unknown pool format {format!r} (expected one of {', '.join(FORMATS)})")
    if answer_key == "grader":  # a symbolic worker starts while the file is read, for the pairs grouping leaves it
        from prmkit.grade.symbolic import default_pool

        default_pool().prestart()
    builder = PoolBuilder(columns, answer_key=answer_key, format=format)
    truth = step_truth or recorded_step_truth
    if format not in NATIVE + ("auto",):  # read by its converter: errors name file, line and field there
        count = 0
        for count, record in enumerate(_solutions_of(path, format), 1):
            try:
                _add_solution(builder, record, columns, truth)
            except SchemaError as e:
                raise RecordError(path, None, e.field, f"solution {record.id or count}: {e.message}") from None
        if not count:
            raise NoRecords(path)
        return builder.build()
    records = iter_json(path)
    first = next(records, None)
    if first is None:
        raise NoRecords(path)
    if format == "auto":
        try:
            builder.format = format = detect_format(first.value)
        except TypeError as e:
            raise RecordError(path, first.line, None, str(e)) from None
    plain = _read_plain(path, format, columns, answer_key)
    if plain is not None:
        return plain.build()
    add = {"prmkit": _add_prmkit, "qwen-candidates": _add_qwen, "gsm8k-examples": _add_gsm8k,
           "prm800k-samples": _add_prm800k}[format]
    for raw in _chain(first, records):
        try:
            if format == "prmkit":
                _add_prmkit(builder, raw.value, columns, truth)
            else:
                add(builder, raw.value, columns)
        except SchemaError as e:
            raise RecordError(path, raw.line, e.field, e.message) from None
        except (KeyError, TypeError, ValueError) as e:
            raise RecordError(path, raw.line, None, f"not a {format} record: {e!r}") from None
    return builder.build()


def _read_plain(path, format: str, columns: list[str] | None, answer_key: str) -> PoolBuilder | None:
    """A file of one of the released layouts (:data:`_PLAIN`) read straight from its bytes (a released pool is
    about a million samples, and reading is most of what best-of-N costs); None where the format has no
    such path, or at the first line that is not a plain, valid record (a blank line is skipped): the
    general path then reads the file and names what is wrong where."""
    add = _PLAIN.get(format)
    if add is None:
        return None
    builder = PoolBuilder(columns, answer_key=answer_key, format=format)
    keep = None if columns is None else set(columns)
    try:
        with open_binary(path) as f:
            for raw in f:
                if not raw.isspace() and not add(builder, raw, keep):
                    return None
    except (ValueError, OSError, EOFError, zlib.error):  # malformed, not UTF-8, a cut gzip: the general path says so
        return None
    return builder


def _plain_prm800k_line(builder: PoolBuilder, raw: bytes, keep: set[str] | None) -> bool:
    # orjson, not prmkit.io.loads: it reads an integer past 64 bits as a float where json keeps it whole, but
    # here only the scores are numbers, and float() of either is the same value
    plain = plain_prm800k_sample(orjson.loads(raw))
    if plain is None:
        return False
    problem, answer, correct, scores = plain
    builder.add(problem, answer, bool(correct), scores if keep is None else {k: v for k, v in scores.items() if k in keep})
    return True


def _plain_qwen_line(builder: PoolBuilder, raw: bytes, keep: set[str] | None) -> bool:
    value = orjson.loads(raw)
    plain = plain_qwen_row(value)
    if plain is None or type(value.get("idx")) is float:
        # an integer ``idx`` is the problem's key, and orjson reads one past 64 bits as a float where json keeps
        # it whole (the general path reads it so); of the other numbers only the scores are read, as floats
        return False
    _add_qwen_row(builder, str(value.get("idx", value.get("question"))), plain, keep)
    return True


_PLAIN = {"prm800k-samples": _plain_prm800k_line, "qwen-candidates": _plain_qwen_line}


def _solutions_of(path, format: str) -> Iterator[Solution]:
    """The records of a file read by :mod:`prmkit.convert`, which must be solutions."""
    for record in read_format(path, format):
        if not isinstance(record, Solution):
            raise RecordError(path, None, None, f"format {format!r} gave a problem without steps; a pool holds "
                              "sampled solutions")
        yield record


def _chain(first, rest) -> Iterator:
    yield first
    yield from rest


def _add_prmkit(builder: PoolBuilder, value: Any, columns: list[str] | None, step_truth=None) -> None:
    _add_solution(builder, Solution.from_dict(value), columns, step_truth)


def _add_solution(builder: PoolBuilder, sol: Solution, columns: list[str] | None, step_truth=None) -> None:
    key = sol.problem.id if sol.problem.id is not None else sol.problem.problem
    grade = _grade_of(sol)
    if grade == "unparseable":  # the grader could not decide: no verdict to evaluate (Pool.ungradable)
        builder.ungradable += 1
        return
    ratings = (step_truth or recorded_step_truth)(sol)
    valid = None if ratings is None else all(r >= 0 for r in ratings)
    builder.add(key, sol.answer, grade == "correct", solution_scores(sol, columns), sol.scores, valid)


def recorded_step_truth(sol: Solution) -> list | None:
    """The ratings of the steps a solution took, where every one is rated (PRM800K's human labels, a step
    oracle's); None otherwise (one unrated step leaves validity unknown).

    >>> recorded_step_truth(Solution.from_steps("q", ["a", "b"], ratings=[1, -1])), recorded_step_truth(Solution.from_steps("q", ["a"]))
    ([1, -1], None)
    """
    ratings = [s.rating for s in sol.steps if s.taken is not None]
    return ratings if ratings and None not in ratings else None


def _grade_of(sol: Solution) -> str:
    if sol.grade is not None:
        return sol.grade
    if sol.answer is None or not sol.answer.strip():
        return "incorrect"
    if sol.problem.answer is None:
        raise SchemaError("grade", "no grade and no problem.answer to grade against")
    from prmkit import grade

    return grade.grade(sol.answer, sol.problem.answer).verdict


def solution_scores(sol: Solution, columns: list[str] | None) -> dict[str, float]:
    """The requested score columns of one solution: ``name`` from ``sol.scores``, ``key:agg`` from step scores.

    >>> s = Solution.from_steps("q", ["a", "b"], scores={"orm": 0.4})
    >>> s.steps[0].scores["p"], s.steps[1].scores["p"] = 0.9, 0.5
    >>> solution_scores(s, ["orm", "p:min", "p:last"])
    {'orm': 0.4, 'p:min': 0.5, 'p:last': 0.5}
    """
    if columns is None:  # every score but the truncation counts and tags that are no number (a flag, a dict)
        return {k: _score_value(v, f"scores.{k}") for k, v in sol.scores.items()
                if not k.endswith(STEPS_LOST) and not isinstance(v, (bool, dict, list))}
    out = {}
    for spec in columns:
        name, how = parse_score_spec(spec)
        if how is None:
            out[spec] = _score_value(sol.scores.get(name), f"scores.{name}")
        else:
            steps = [_score_value(st.scores.get(name), f"steps[{i}].scores.{name}")
                     for i, st in enumerate(sol.steps) if st.taken is not None]
            out[spec] = None if not steps or None in steps else aggregate(steps, how)
    return out


def _score_value(value: Any, field_path: str) -> float | None:
    """A score as a float (None when absent); anything but a number is a :class:`SchemaError` on its field,
    never a sample quietly left unscored.

    >>> _score_value("high", "scores.prm_min")
    Traceback (most recent call last):
    ...
    prmkit.schema.SchemaError: scores.prm_min: expected a number, got str 'high'
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(field_path, f"expected a number, got {type(value).__name__} {value!r:.40}")
    return float(value)


STEPS_LOST = "_steps_lost"
"""Suffix of the count ``prmkit score`` writes when truncation drops steps: ``NAME_steps_lost`` beside
the scores ``NAME``, ``NAME_min``... of the model it ran as NAME (step scores ``p_correct`` for ``prm``,
``NAME_p_correct`` otherwise). Lost steps get no step score; an ORM (or a PRM left with no step) writes
no solution score at all."""


def steps_lost_key(scores: dict, column: str, step_key: bool = False) -> str | None:
    """The ``NAME_steps_lost`` in a solution's ``scores`` that says truncation at scoring dropped steps of the
    model behind ``column``, a solution score (``orm``, ``prm_min``) or, with ``step_key``, a step-score
    key (``p_correct``); None when there is none.

    >>> steps_lost_key({"prm_steps_lost": 3}, "prm_min"), steps_lost_key({"prm_steps_lost": 3}, "p_correct", True)
    ('prm_steps_lost', 'prm_steps_lost')
    >>> steps_lost_key({"prm_steps_lost": 3}, "orm"), steps_lost_key({"orm_steps_lost": 1}, "orm")
    (None, 'orm_steps_lost')
    """
    for key, value in scores.items():
        if (key.endswith(STEPS_LOST) and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
                and writes_column(key.removesuffix(STEPS_LOST), column, step_key)):
            return key
    return None


def writes_column(model: str, column: str, step_key: bool = False) -> bool:
    """Whether ``prmkit score --name MODEL`` writes the solution score (or, ``step_key``, the step score)
    ``column``: ``MODEL``, ``MODEL_min``...; step scores ``p_correct`` for ``prm``, else ``MODEL_p_correct``.

    >>> writes_column("prm", "prm_min"), writes_column("prm", "p_correct", True), writes_column("prm", "orm")
    (True, True, False)
    >>> writes_column("prm", "prm_mni")  # a misspelt column is no truncation
    False
    """
    prefix = "" if model == "prm" else f"{model}_"
    if step_key:
        return column in {f"{prefix}{k}" for k in STEP_SCORES}
    return column == model or column in {f"{model}_{how}" for how in AGGREGATIONS}


STEP_SCORES = ("p_correct", "p_pos", "p_neg", "p_neu")
"""The step scores ``prmkit score`` writes (prefixed ``NAME_`` for a model not named ``prm``)."""


def truncation_note(who: str, keys, column: str, step_key: bool = False) -> str:
    """``who`` lost steps to truncation at scoring (the ``keys`` say so), why, and the fix.

    >>> truncation_note("It", ["orm_steps_lost"], "orm")[:45]
    'It lost steps to truncation (orm_steps_lost):'
    """
    guess = next((k for k in ("orm", "prm") if column == k or column.startswith(k + "_")), "prm|orm")
    kind = "prm" if step_key or ":" in column else guess
    return (f"{who} lost steps to truncation ({', '.join(sorted(keys))}): the model's max length cut the "
            f"solutions short when scoring, and steps past it get no score; train with a longer max length "
            f"(`prmkit train {kind} ... --max-length N`) and score again")


def _add_qwen(builder: PoolBuilder, value: dict, columns: list[str] | None) -> None:
    key = str(value.get("idx", value.get("question")))
    plain = plain_qwen_row(value)
    if plain is not None:
        _add_qwen_row(builder, key, plain, None if columns is None else set(columns))
        return
    for j, (_, pred, ok, score, _) in enumerate(qwen_samples(value)):
        if ok is None:
            raise ValueError(f"sample {j} has no 'score' (its correctness): convert the file with `prmkit data "
                             "convert --from qwen-candidates`, which grades it against the answer")
        scores = {"pred_score": score} if score is not None else {}
        builder.add(key, pred, ok, {k: v for k, v in scores.items() if columns is None or k in columns})


def _add_qwen_row(builder: PoolBuilder, key: str, plain: tuple, keep: set[str] | None) -> None:
    """A row :func:`prmkit.convert.candidates.plain_qwen_row` passed: 1,860 samples in a released pool, added
    in bulk."""
    preds, grades, scores = plain
    kept = scores is not None and (keep is None or "pred_score" in keep)
    builder.add_many(key, [pred or None for pred in preds], grades, {"pred_score": scores} if kept else None)


def _add_gsm8k(builder: PoolBuilder, value: dict, columns: list[str] | None) -> None:
    key = req(value, "question", (str,))
    for _, _, answer, correct in gsm8k_samples(value):
        builder.add(key, answer, correct, {})


def _add_prm800k(builder: PoolBuilder, value: Any, columns: list[str] | None) -> None:
    """One released PRM800K scored sample (:func:`prmkit.convert.candidates.prm800k_sample`); a missing or
    null score leaves NaN in that column."""
    problem, answer, correct, scores = prm800k_sample(value)
    builder.add(problem, answer, bool(correct), {k: v for k, v in scores.items() if columns is None or k in columns})
