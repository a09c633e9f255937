"""Scored candidate pools: many sampled solutions per problem, kept as flat numpy arrays.

A :class:`Pool` holds, for every sample of every problem, whether it has an answer, whether it is
correct, which answer-equivalence group it belongs to within its problem, and any number of score
columns. Samples of one problem are contiguous (``offsets``), in file order, so "the first sample" is
the first one the file lists. A million samples take about 30 MB (one byte per flag, four per group
id, eight per score), and files are streamed, never held whole.

Formats (``load_pool(path, format=...)``, ``"auto"`` detects them from the first record):

``prmkit``
    :class:`~prmkit.schema.Solution` records; samples grouped by ``problem.id`` (or the problem text).
    A missing ``grade`` is computed with :func:`prmkit.grade.grade` from ``problem.answer``.
``qwen-candidates``
    One line per problem (Qwen2.5-Math ``eval_rm_maj_example``): ``pred`` answers, ``score``
    correctness, ``pred_score`` reward-model scores (``[[x], ...]``), ``idx``.
``gsm8k-examples``
    One line per problem (openai/grade-school-math ``example_model_solutions``): four model solutions
    with ``is_correct``; the answer is the text after the last ``A:``. No score columns.

>>> pool = pool_from_lists([["4", "4", "5"], ["x", None]], [[1, 1, 0], [0, 0]], {"rm": [[.9, .8, .1], [.2, .3]]},
...                        answer_key="exact")
>>> pool.n_problems, pool.n_samples, pool.sizes.tolist(), pool.group.tolist()
(2, 5, [3, 2], [0, 0, 1, 0, -1])
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prmkit.evaluate.aggregate import aggregate, parse_score_spec
from prmkit.io import RecordError, iter_json
from prmkit.schema import SchemaError, Solution

FORMATS = ("prmkit", "qwen-candidates", "gsm8k-examples")
GSM8K_EXAMPLE_MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
"""Sample order of a gsm8k-examples problem; the first one is "the first sample"."""


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
    """Answer groups whose members carry different grades (the grader's equivalence and the file's grades disagree)."""

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
                  equivalent: Callable[[str, str], bool] | None = None) -> list[int]:
    """Group one problem's distinct answers: same ``normalize`` key first, then merge equivalent groups.

    Returns a group id per answer, numbered in order of first appearance. Merging is transitive
    (union-find over the pairwise ``equivalent`` of group representatives), which is cheap because a
    problem has few distinct answers.

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

    if equivalent is not None:
        for i in range(len(reps)):
            for j in range(i):
                if root(i) != root(j) and equivalent(reps[j], reps[i]):
                    parent[root(i)] = root(j)
    renumber: dict[int, int] = {}
    return [renumber.setdefault(root(k), len(renumber)) for k in first]


def answer_grouper(answer_key: str) -> Callable[[list[str]], list[int]]:
    """``"grader"``: group by :mod:`prmkit.grade` equivalence; ``"exact"``: by the stripped string."""
    if answer_key == "exact":
        return lambda answers: group_answers(answers)
    if answer_key != "grader":
        raise ValueError(f"unknown answer key {answer_key!r} (expected 'grader' or 'exact')")
    from prmkit import grade  # imported here: the grader pulls in sympy, which exact grouping does not need

    return lambda answers: group_answers(answers, grade.normalize, grade.equivalent)


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

    def add(self, problem: str, answer: str | None, correct: bool, scores: dict[str, float] | None = None) -> None:
        p = self.problem_of.setdefault(problem, len(self.problem_of))
        if p == len(self.answers):
            self.answers.append({})
        answered = answer is not None and answer.strip() != ""
        self.prob.append(p)
        self.local.append(self.answers[p].setdefault(answer, len(self.answers[p])) if answered else -1)
        self.has_answer.append(answered)
        self.correct.append(bool(correct) and answered)
        self._add_scores(scores or {})

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
        for name in self.fixed_columns or []:
            if np.isnan(pool.scores[name]).all():
                raise ValueError(f"score column {name!r} is missing from every sample")
        return pool

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
                    scores: dict[str, list[list[float]]] | None = None, answer_key: str = "grader") -> Pool:
    """A pool from nested lists (one list per problem), for tests and notebooks."""
    builder = PoolBuilder(list(scores or {}), answer_key=answer_key, format="lists")
    for p, (ans, cor) in enumerate(zip(answers, correct)):
        for i, (a, c) in enumerate(zip(ans, cor)):
            builder.add(str(p), a, c, {k: v[p][i] for k, v in (scores or {}).items()})
    return builder.build()


# --- formats ---------------------------------------------------------------------------------------

def detect_format(record: Any) -> str:
    """The format of a file from its first record.

    >>> detect_format({"pred": ["1"], "score": [True], "pred_score": [[0.5]]})
    'qwen-candidates'
    """
    if not isinstance(record, dict):
        raise TypeError("cannot detect the pool format: the first record is not a JSON object")
    if {"pred", "score"} <= record.keys():
        return "qwen-candidates"
    if any(isinstance(record.get(m), dict) and "is_correct" in record[m] for m in GSM8K_EXAMPLE_MODELS):
        return "gsm8k-examples"
    if "problem" in record:
        return "prmkit"
    raise ValueError(f"cannot detect the pool format from keys {sorted(record)[:8]}; pass --format "
                     f"({', '.join(FORMATS)})")


def load_pool(path, format: str = "auto", columns: list[str] | None = None, answer_key: str = "grader") -> Pool:
    """Stream a file into a :class:`Pool`. ``columns``: score specs to keep (``name`` or ``step_key:agg``); all when None."""
    records = iter_json(path)
    first = next(records, None)
    if first is None:
        raise RecordError(path, None, None, "empty file: no samples to evaluate")
    if format == "auto":
        try:
            format = detect_format(first.value)
        except TypeError as e:
            raise RecordError(path, first.line, None, str(e)) from None
    if format not in FORMATS:
        raise ValueError(f"unknown pool format {format!r} (expected one of {', '.join(FORMATS)})")
    builder = PoolBuilder(columns, answer_key=answer_key, format=format)
    add = {"prmkit": _add_prmkit, "qwen-candidates": _add_qwen, "gsm8k-examples": _add_gsm8k}[format]
    for raw in _chain(first, records):
        try:
            add(builder, raw.value, columns)
        except SchemaError as e:
            raise RecordError(path, raw.line, e.field, e.message) from None
        except (KeyError, TypeError, ValueError) as e:
            raise RecordError(path, raw.line, None, f"not a {format} record: {e!r}") from None
    return builder.build()


def _chain(first, rest) -> Iterator:
    yield first
    yield from rest


def _add_prmkit(builder: PoolBuilder, value: Any, columns: list[str] | None) -> None:
    sol = Solution.from_dict(value)
    key = sol.problem.id if sol.problem.id is not None else sol.problem.problem
    builder.add(key, sol.answer, _grade_of(sol) == "correct", solution_scores(sol, columns))


def _grade_of(sol: Solution) -> str:
    if sol.grade is not None:
        return sol.grade
    if sol.answer is None or not sol.answer.strip():
        return "unparseable"
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
    if columns is None:
        return {k: v for k, v in sol.scores.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    out = {}
    for spec in columns:
        name, how = parse_score_spec(spec)
        if how is None:
            out[spec] = sol.scores.get(name)
        else:
            steps = [st.scores.get(name) for st in sol.steps if st.taken is not None]
            out[spec] = None if not steps or None in steps else aggregate(steps, how)
    return out


def _add_qwen(builder: PoolBuilder, value: dict, columns: list[str] | None) -> None:
    preds, grades = value["pred"], value["score"]
    rm = value.get("pred_score")
    if len(grades) != len(preds) or (rm is not None and len(rm) != len(preds)):
        raise ValueError(f"{len(preds)} answers, {len(grades)} grades, {len(rm or [])} scores")
    key = str(value.get("idx", value.get("question")))
    for i, (pred, ok) in enumerate(zip(preds, grades)):
        score = rm[i] if rm is not None else None
        if isinstance(score, list):
            if len(score) != 1:
                raise ValueError(f"pred_score[{i}] has {len(score)} values; expected one")
            score = score[0]
        scores = {"pred_score": score} if score is not None else {}
        builder.add(key, pred, bool(ok), {k: v for k, v in scores.items() if columns is None or k in columns})


_GSM8K_ANSWER = re.compile(r"A:\s*(.+?)\s*$", re.DOTALL)


def gsm8k_example_answer(solution: str) -> str | None:
    """The final answer of a grade-school-math example solution: the text after the last ``A:``.

    >>> gsm8k_example_answer("16 - 3 = 13\\nA: 26"), gsm8k_example_answer("no answer")
    ('26', None)
    """
    at = solution.rfind("A:")
    if at < 0:
        return None
    match = _GSM8K_ANSWER.match(solution[at:])
    return match.group(1) if match else None


def _add_gsm8k(builder: PoolBuilder, value: dict, columns: list[str] | None) -> None:
    for model in GSM8K_EXAMPLE_MODELS:
        sample = value[model]
        builder.add(value["question"], gsm8k_example_answer(sample["solution"]), bool(sample["is_correct"]), {})
