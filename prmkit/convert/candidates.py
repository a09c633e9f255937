"""Candidate pools: one row per problem holding many sampled solutions, each written as one text. In only.

Each sample becomes one :class:`~prmkit.schema.Solution`, its text cut into unlabelled steps by
``--split`` (:func:`prmkit.convert.text.sample_solution`), named ``<problem id>/<j>`` (j: the sample's
position in the row), with the file's own answer, correctness and scores. These are the files
``prmkit eval bon`` reads directly (:mod:`prmkit.evaluate.pool`); converted, they can be scored
(``prmkit score``) and evaluated under the new score next to the file's own. What a row of each
means is read here once, for both: the grade-school-math model order (:data:`GSM8K_EXAMPLE_MODELS`)
and its ``A:`` answer (:func:`gsm8k_example_answer`), and :func:`qwen_samples`, the checked reading
of a Qwen row, which the pool reader (:mod:`prmkit.evaluate.pool`) uses too.

``qwen-candidates`` (Qwen2.5-Math ``evaluation`` outputs, e.g. ``eval_rm_maj_example/math_cot_100.jsonl``)::

    {"idx": 0,                              # -> Problem.id "0"; Solution.id "0/<j>"
     "question": "What is $10.0000198\\\\cdot 5.9999985401\\\\cdot 6.9999852$ ...?",   # -> Problem.problem
     "answer": "420",                       # the reference answer -> Problem.answer (without it: "gt")
     "gt": "420",                           # Qwen's normalised reference ("4:30p.." for 4:30 p.m.)
     "solution": "Notice that ...",         # -> Problem.solution
     "level": "Level 3",                    # -> Problem.level
     "code": ["To find the value ...\\n\\n- \\\\(10.0000198 \\\\approx 10\\\\)\\n- ...", ...],
                                            # the sampled solutions, cut into steps (default: paragraphs)
     "pred": ["420", ...],                  # -> Solution.answer ("" -> none), the file's own extraction
     "score": [true, ...],                  # -> Solution.grade (absent: pred graded against the reference)
     "pred_score": [[3.546875], ...],       # a reward model's score -> Solution.scores["pred_score"]
     "report": [null, ...],                 # -> Solution.meta["qwen-candidates"]["report"] when not null
     "query": "...", "response": [...], "gt_cot": "...",   # copies of question, code, solution: dropped
     "system": "Please reason step by step ...",
     "history": []}                         # the rest -> Problem.meta["qwen-candidates"]

A copy that differs from what it copies (``gt`` unlike ``answer``: 13 of the 100 real rows) is kept
in ``Problem.meta["qwen-candidates"]`` too. The score keeps the file's name, ``pred_score``, so that
``prmkit eval bon --score pred_score`` gives the same numbers on the converted file as on the original.

``gsm8k-examples`` (openai/grade-school-math ``example_model_solutions.jsonl``)::

    {"question": "Janet's ducks lay 16 eggs per day. ...",    # -> Problem.problem
     "ground_truth": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\\n...\\nA: 18",
                                            # -> Problem.solution; the text after its last "A:"
                                            #    -> Problem.answer
     "6b_finetuning": {"is_correct": false, "solution": "Janet eats 3 ...\\nA: 26"},
                                            # sample 0: steps (default: one per line), answer after "A:",
                                            # grade from is_correct, Generator("6b_finetuning")
     "6b_verification": {...}, "175b_finetuning": {...}, "175b_verification": {...}}   # samples 1, 2, 3

The file has no ids: a problem's id is its row's 0-based line number (its index in GSM8K test).
Unknown keys go to ``meta["gsm8k-examples"]`` of the problem (row keys) or of the solution (sample keys).

>>> row = {"idx": 3, "question": "1+1?", "gt": "2", "code": ["1+1 = 2.\\n\\nSo \\\\boxed{2}."], "pred": ["2"],
...        "score": [True], "pred_score": [[0.7]]}
>>> [s] = from_qwen(row, 1)
>>> s.id, s.texts, s.answer, s.grade, s.scores
('3/0', ['1+1 = 2.', 'So \\\\boxed{2}.'], '2', 'correct', {'pred_score': 0.7})
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from prmkit.convert.base import DEFAULTS, Options, numbered_rows, opt, req, rows
from prmkit.convert.text import sample_solution
from prmkit.grade import extract_answer
from prmkit.schema import Generator, Problem, SchemaError, Solution, Step, check_type

QWEN = "qwen-candidates"
QWEN_SPLIT = "paragraphs"
"""Qwen's chains of thought put a blank line between steps and keep a display equation (``\\[`` ...
``\\]`` on several lines) or a list inside one paragraph: cutting at every newline would make ``\\[``
a step of its own (20.6 steps a sample on the real file, against 7.4). It is ProcessBench's rule
too (none of the 6,505 steps of its ``math.json`` holds a blank line). ``paragraphs`` rather than
``blank``: it also sees blank lines written with ``\\r\\n``."""
QWEN_FIELDS = ("idx", "question", "answer", "solution", "level", "code", "pred", "score", "pred_score",
               "report")
QWEN_COPIES = {"query": "question", "response": "code", "gt": "answer", "gt_cot": "solution"}
"""Keys that repeat another (dropped when equal to it, kept in meta when not)."""
GSM8K = "gsm8k-examples"
GSM8K_EXAMPLE_MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
"""Sample order of a gsm8k-examples problem; the first one is "the first sample"."""
GSM8K_SPLIT = "newline"
"""grade-school-math solutions are one step per line, ending with the line ``A: <answer>``."""


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


# --- qwen-candidates -------------------------------------------------------------------------------

def reward(value: Any, path: str) -> float | None:
    """A Qwen reward score: a number, a one-number list ``[x]`` (the file's shape), or null.

    >>> reward([3.5], "pred_score[0]"), reward(2, "pred_score[1]"), reward(None, "pred_score[2]")
    (3.5, 2.0, None)
    """
    if isinstance(value, list):
        if len(value) != 1:
            raise SchemaError(path, f"{len(value)} values; expected one")
        value = value[0]
    return None if value is None else float(check_type(value, (int, float), path))


def qwen_samples(d: Any) -> list[tuple[str, str | None, bool | None, float | None, Any]]:
    """Per sample of one ``qwen-candidates`` row, checked: (text, answer, correct, reward score, report).

    ``pred``, ``score``, ``pred_score`` and ``report`` are optional but, when present, hold one entry
    per text. An empty ``pred`` is no answer (None).

    >>> qwen_samples({"code": ["a", "b"], "pred": ["1", ""], "score": [True, False],
    ...               "pred_score": [[.5], [.1]], "report": [None, "x"]})
    [('a', '1', True, 0.5, None), ('b', None, False, 0.1, 'x')]
    """
    texts = req(d, "code", (list,))
    columns = {key: opt(d, key, (list,)) for key in ("pred", "score", "pred_score", "report")}
    for key, values in columns.items():
        if values is not None and len(values) != len(texts):
            raise SchemaError(key, f"{len(values)} entries but 'code' has {len(texts)} samples")
    preds, grades, scores, reports = (columns[k] or [None] * len(texts) for k in columns)
    samples = []
    for j, text in enumerate(texts):
        check_type(text, (str,), f"code[{j}]")
        pred = check_type(preds[j], (str, type(None)), f"pred[{j}]")
        ok = check_type(grades[j], (bool, type(None)), f"score[{j}]")
        samples.append((text, pred or None, ok, reward(scores[j], f"pred_score[{j}]"), reports[j]))
    return samples


def plain_qwen_row(d: Any) -> tuple[list, list, list | None] | None:
    """``(pred, score, pred_score as floats or None)`` of a ``qwen-candidates`` row whose every field passes
    :func:`qwen_samples`' checks as a plain row does (answers strings, grades booleans, scores ``[x]`` or
    numbers, one per text), checked with no per-sample calls; None for anything else, which
    :func:`qwen_samples` then reads or refuses, naming the field.

    >>> plain_qwen_row({"code": ["a", "b"], "pred": ["1", ""], "score": [True, False], "pred_score": [[.5], [1]]})
    (['1', ''], [True, False], [0.5, 1.0])
    """
    if type(d) is not dict or type(d.get("code")) is not list:
        return None
    n, preds, grades, scores = len(d["code"]), d.get("pred"), d.get("score"), d.get("pred_score")
    if type(preds) is not list or type(grades) is not list or len(preds) != n or len(grades) != n:
        return None
    reports = d.get("report")
    if reports is not None and (type(reports) is not list or len(reports) != n):
        return None
    # types checked by the set of them (C loops: a released row holds 1,860 samples)
    if not (set(map(type, d["code"])) <= {str} and set(map(type, preds)) <= {str} and set(map(type, grades)) <= {bool}):
        return None
    if scores is None:
        return preds, grades, None
    if type(scores) is not list or len(scores) != n:
        return None
    if set(map(type, scores)) <= {list} and set(map(len, scores)) <= {1}:
        scores = list(map(itemgetter(0), scores))
    elif list in set(map(type, scores)):  # some ``[x]``, some bare: as a mixed row reads
        scores = [s[0] if type(s) is list and len(s) == 1 else s for s in scores]
    if not set(map(type, scores)) <= {float, int}:
        return None
    return preds, grades, list(map(float, scores))


def _qwen_problem(d: Any, line: int) -> Problem:
    question = opt(d, "question", (str,)) or req(d, "query", (str,))
    idx = opt(d, "idx", (int, str))
    problem = Problem(question, answer=opt(d, "answer", (str,)) or opt(d, "gt", (str,)),
                      solution=opt(d, "solution", (str,)) or opt(d, "gt_cot", (str,)),
                      level=opt(d, "level", (int, str)), id=str(idx if idx is not None else line - 1))
    resolved = {"question": problem.problem, "code": d.get("code"), "answer": problem.answer,
                "solution": problem.solution}
    extra = {k: v for k, v in d.items()
             if k not in QWEN_FIELDS and not (k in QWEN_COPIES and v == resolved[QWEN_COPIES[k]])}
    problem.meta = {QWEN: extra} if extra else {}
    return problem


def from_qwen(d: Any, line: int, options: Options = DEFAULTS) -> list[Solution]:
    """The solutions of one ``qwen-candidates`` row (``line``: where it starts, the problem id when ``idx``
    is missing)."""
    check_type(d, (dict,), "record")
    problem = _qwen_problem(d, line)
    out = []
    has_pred = d.get("pred") is not None
    for j, (text, pred, ok, score, report) in enumerate(qwen_samples(d)):
        answer = pred if has_pred else extract_answer(text)  # "" in pred: Qwen found no answer; keep it so
        out.append(sample_solution(problem, text, f"code[{j}]", options, QWEN_SPLIT, j, answer, ok,
                                   scores={"pred_score": score} if score is not None else {},
                                   meta={QWEN: {"report": report}} if report is not None else {}))
    return out


def read_qwen(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a ``qwen-candidates`` file, problem by problem."""
    return numbered_rows(path, lambda value, line: from_qwen(value, line, options), rejects)


# --- gsm8k-examples ------------------------------------------------------------------------------

def from_gsm8k_examples(d: Any, line: int, options: Options = DEFAULTS) -> list[Solution]:
    """The four solutions of one ``gsm8k-examples`` row (``line``: where it starts; the problem id is
    ``line - 1``)."""
    check_type(d, (dict,), "record")
    reference = opt(d, "ground_truth", (str,))
    extra = {k: v for k, v in d.items() if k not in ("question", "ground_truth", *GSM8K_EXAMPLE_MODELS)}
    problem = Problem(req(d, "question", (str,)), solution=reference, id=str(line - 1),
                      answer=gsm8k_example_answer(reference) if reference else None,
                      meta={GSM8K: extra} if extra else {})
    out = []
    for j, (model, text, answer, correct) in enumerate(gsm8k_samples(d)):
        rest = {k: v for k, v in d[model].items() if k not in ("solution", "is_correct")}
        out.append(sample_solution(problem, text, f"{model}.solution", options, GSM8K_SPLIT, j, answer, correct,
                                   generator=Generator(model), meta={GSM8K: rest} if rest else {}))
    return out


def gsm8k_samples(d: Any) -> list[tuple[str, str, str | None, bool]]:
    """Per sample of one ``gsm8k-examples`` row, checked, in :data:`GSM8K_EXAMPLE_MODELS` order:
    (model, text, answer after ``A:``, is_correct).

    >>> row = {m: {"solution": "1+1 = 2\\nA: 2", "is_correct": True} for m in GSM8K_EXAMPLE_MODELS}
    >>> gsm8k_samples(row)[0]
    ('6b_finetuning', '1+1 = 2\\nA: 2', '2', True)
    """
    out = []
    for model in GSM8K_EXAMPLE_MODELS:
        sample = req(d, model, (dict,))
        text = req(sample, "solution", (str,), model)
        out.append((model, text, gsm8k_example_answer(text), req(sample, "is_correct", (bool,), model)))
    return out


def read_gsm8k_examples(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a ``gsm8k-examples`` file, four per problem."""
    return numbered_rows(path, lambda value, line: from_gsm8k_examples(value, line, options), rejects)


# --- prm800k-samples -----------------------------------------------------------------------------

PRM800K_SAMPLES = "prm800k-samples"
PRM800K_SCORES = ("prm_score", "orm_score")
"""The score fields of a ``prm800k-samples`` record, each kept as a score of the same name."""
PRM800K_SAMPLE_FIELDS = ("problem", "answer", "given_answer", "is_correct", "ground_truth_answer", "steps",
                         *PRM800K_SCORES)


def is_prm800k_sample(record: dict) -> bool:
    """A released scored sample: ``problem`` text and ``is_correct``, and no prmkit steps (objects).

    No score field is required, so that a first sample without one (answerless samples may lack them)
    is still recognised. A prmkit record is never taken for one: its schema refuses ``is_correct`` at
    the top level, and a prmkit solution's ``problem`` is an object; third-party files' ``steps``, if
    any, are strings.

    >>> is_prm800k_sample({"problem": "q", "is_correct": None}), is_prm800k_sample({"problem": {"problem": "q"}})
    (True, False)
    """
    steps = record.get("steps")
    prmkit_steps = isinstance(steps, list) and any(isinstance(s, dict) for s in steps)
    return isinstance(record.get("problem"), str) and "is_correct" in record and not prmkit_steps


def prm800k_sample(d: Any) -> tuple[str, str | None, bool | None, dict[str, float]]:
    """One released PRM800K scored sample, checked, with the semantics of openai/prm800k ``eval/eval.py``:
    (problem text, answer, is_correct, scores).

    The answer is ``answer`` when the key is there (null: no answer), else ``given_answer``. An
    answerless sample is never picked, so its ``is_correct`` may be missing or null; an answered one
    needs true or false. A missing or null score is left out.

    >>> prm800k_sample({"problem": "q", "answer": None, "given_answer": "2", "prm_score": 1})
    ('q', None, None, {'prm_score': 1.0})
    """
    plain = plain_prm800k_sample(d)
    if plain is not None:
        return plain
    check_type(d, (dict,), "record")
    problem = req(d, "problem", (str,))
    answer_key = "answer" if "answer" in d else "given_answer"
    answer = opt(d, answer_key, (str,))
    correct = opt(d, "is_correct", (bool,))
    if correct is None and answer is not None and answer.strip():
        raise SchemaError("is_correct", f"missing: a sample with an answer ({answer_key}) needs true or false")
    return problem, answer, correct, {name: number(d[name], name) for name in PRM800K_SCORES
                                      if d.get(name) is not None}


def plain_prm800k_sample(d: Any) -> tuple[str, str | None, bool | None, dict[str, float]] | None:
    """:func:`prm800k_sample` of a record that passes every check, read with no per-field calls (a released
    pool is a million of them); None for anything else, which the full checks then read or refuse."""
    if type(d) is not dict or type(d.get("problem")) is not str:
        return None
    answer = d["answer"] if "answer" in d else d.get("given_answer")
    correct = d.get("is_correct")
    if not (answer is None or type(answer) is str) or not (type(correct) is bool or correct is None):
        return None
    if correct is None and answer is not None and answer.strip():
        return None
    scores = {}
    for name in PRM800K_SCORES:
        value = d.get(name)
        if value is not None:
            if type(value) is not float and type(value) is not int:
                return None
            scores[name] = float(value)
    return d["problem"], answer, correct, scores


def number(value: Any, name: str) -> float:
    """A score as a float: an integer is read as one; a boolean or a string is a :class:`SchemaError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        got = "a boolean" if isinstance(value, bool) else type(value).__name__
        raise SchemaError(name, f"expected a number, got {got}")
    return float(value)


def from_prm800k_sample(d: Any, options: Options = DEFAULTS) -> Solution:
    """One scored sample as a :class:`Solution`: its ``steps`` (strings) when it has them, its answer and
    grade (``is_correct``; answerless: incorrect), ``prm_score``/``orm_score`` as scores, the reference
    ``ground_truth_answer`` as the problem's answer; other keys go to ``meta["prm800k-samples"]``.

    >>> s = from_prm800k_sample({"problem": "1+1?", "answer": "2", "is_correct": True, "steps": ["2"],
    ...                          "orm_score": 0.5, "level": 1})
    >>> s.texts, s.answer, s.grade, s.scores, s.meta
    (['2'], '2', 'correct', {'orm_score': 0.5}, {'prm800k-samples': {'level': 1}})
    """
    text, answer, correct, scores = prm800k_sample(d)
    steps = [Step.of(check_type(t, (str,), f"steps[{i}]")) for i, t in enumerate(opt(d, "steps", (list,)) or [])]
    extra = {k: v for k, v in d.items() if k not in PRM800K_SAMPLE_FIELDS}
    return Solution(Problem(text, answer=opt(d, "ground_truth_answer", (str,))), steps, answer=answer,
                    grade="correct" if correct else "incorrect", scores=scores,
                    meta={PRM800K_SAMPLES: extra} if extra else {})


def read_prm800k_samples(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a ``prm800k-samples`` file, one per line."""
    return rows(path, lambda value: from_prm800k_sample(value, options), rejects)
