"""A trained PRM (or ORM) as the reward of an RL trainer: :class:`PRMReward`, a callable with TRL's
reward-function signature, ``reward(prompts, completions, **columns) -> list[float]``.

It scores with :class:`prmkit.score.Scorer`, the model's own formatter, so the reward sees a completion
exactly as training saw a solution. Per completion:

1. The problem: the dataset's ``problem`` column when there is one (TRL passes every dataset column as
   a keyword argument), else the prompt less the model's ``problem_suffix``; a conversational prompt
   (a list of ``{"role", "content"}`` messages) gives its last user message.
2. The steps: the ``steps`` column when given, else :func:`prmkit.steps.split_steps` in ``auto``
   mode with the model's marker. That mode splits on newlines as well as on the marker, so a completion
   whose marker a tokenizer dropped (``skip_special_tokens``) still has its steps.
3. The reward: a PRM's P(correct) per step through a credit rule of :mod:`prmkit.rl.credit` (``min`` by
   default); an ORM has one score, P(correct) at the final step (its only rule is ``last``), plus
   ``answer_weight`` when ``answer_check`` says the final answer is right.

A completion with no steps earns 0.0 (see :mod:`prmkit.rl.credit`). Steps past the model's
``max_length`` are not scored: such a completion is rewarded on the steps that fit and counted in
``stats["truncated"]`` (train the PRM with a ``max_length`` above prompt + ``max_completion_length``).

>>> problem_of("What is 2 + 3?\\n", "\\n"), problem_of([{"role": "user", "content": "Add."}], "\\n")
('What is 2 + 3?', 'Add.')
>>> completion_text([{"role": "assistant", "content": "2 + 3 = 5\\n# Answer\\n\\n5"}])
'2 + 3 = 5\\n# Answer\\n\\n5'
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path

import numpy as np

from prmkit.model.labels import step_scores as class_scores
from prmkit.rl import credit as credit_rules
from prmkit.steps import split_steps


def _text(content) -> str:
    """A message's text: a string, or the text parts of a multimodal content list."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def problem_of(prompt, problem_suffix: str = "") -> str:
    """The problem in a prompt: its last user message when conversational, else the text less ``problem_suffix``
    at its end (the formatter adds that suffix back between problem and steps)."""
    if not isinstance(prompt, str):
        users = [m for m in prompt if m.get("role") == "user"]
        if not users:
            raise ValueError("a conversational prompt needs a user message to take the problem from")
        return _text(users[-1]["content"])
    if problem_suffix and prompt.endswith(problem_suffix):
        return prompt[: -len(problem_suffix)]
    return prompt


def completion_text(completion) -> str:
    """A completion's text: the string itself, or the assistant messages' contents when conversational."""
    if isinstance(completion, str):
        return completion
    return "\n".join(_text(m["content"]) for m in completion if m.get("role", "assistant") == "assistant")


def step_char_ends(text: str, steps: list[str]) -> list[int]:
    """Where each step ends in ``text``: the offset just past its last line. For per-step rewards on tokens
    (verl, OpenRLHF): a step's reward goes on the token holding character ``end - 1``. Steps are found in
    order, line by line, so stripped steps and :func:`~prmkit.steps.split_steps`' re-joined
    ``# Answer`` step are found too.

    >>> text = "2 + 2 = 4.\\nSo x = 4.\\n# Answer\\n\\n 4 \\n"
    >>> [text[:e] for e in step_char_ends(text, split_steps(text))]
    ['2 + 2 = 4.', '2 + 2 = 4.\\nSo x = 4.', '2 + 2 = 4.\\nSo x = 4.\\n# Answer\\n\\n 4']
    """
    ends, at = [], 0
    for k, step in enumerate(steps):
        for line in (piece.strip() for piece in step.split("\n")):
            if not line:
                continue
            found = text.find(line, at)
            if found < 0:
                raise ValueError(f"step {k} ({step!r}) is not in the text after offset {at}")
            at = found + len(line)
        ends.append(at)
    return ends


def step_token_ends(offsets, char_ends: list[int]) -> list[int]:
    """Per step, the index of the token holding its last character (``end - 1``), from a fast tokenizer's
    ``offset_mapping`` (``(start, end)`` per token, no special tokens) and :func:`step_char_ends`.

    >>> offsets = [(0, 2), (2, 5), (5, 6), (6, 9)]     # tokens "ab", "c d", "\\n", "efg"
    >>> step_token_ends(offsets, [5, 9])
    [1, 3]
    """
    starts = [start for start, _ in offsets]
    return [max(0, bisect_left(starts, end) - 1) for end in char_ends]


def grader_check(problem: str, completion: str, *, answer=None, **row) -> bool | None:
    """The built-in ``answer_check="grader"``: the completion's final answer against the ``answer`` column,
    with :func:`prmkit.grade.grade`. No final answer in the completion is wrong (False); a pair the grader
    cannot decide (a timeout, an unparseable answer) is None, ungradable.

    >>> grader_check("1 + 1?", "1 + 1 = 2\\n# Answer\\n\\n2", answer="2"), grader_check("", "no idea", answer="2")
    (True, False)
    """
    from prmkit.grade import extract_answer, grade

    if answer is None:
        raise ValueError("answer_check='grader' needs an 'answer' column in the dataset")
    given = extract_answer(completion)
    if given is None:
        return False
    verdict = grade(given, str(answer)).verdict
    return None if verdict == "unparseable" else verdict == "correct"


class PRMReward:
    """A saved prmkit PRM or ORM as an RL reward (see the module docstring).

    ``credit``: a rule of :data:`prmkit.rl.credit.CREDIT_RULES`; default ``min`` for a PRM, ``last`` for an ORM
    (the only rule an ORM has). ``answer_weight`` w and ``answer_check`` (a callable
    ``(problem, completion_text, **row) -> bool | None``, or ``"grader"`` for :func:`grader_check`): the
    reward becomes ``credit + w * (check is True)``. ``name`` is what TRL logs the reward under
    (``rewards/<name>/mean``); default ``prm_<credit>``, or ``orm``. ``stats`` counts completions, empty ones,
    truncated ones, right and ungradable answers over the object's life.
    """

    def __init__(self, model_dir: str | os.PathLike, credit: str | None = None, answer_weight: float = 0.0,
                 answer_check: Callable | str | None = None, batch_size: int = 64, device: str = "cpu",
                 name: str | None = None):
        from prmkit.score import Scorer

        if not Path(model_dir).is_dir():
            raise FileNotFoundError(f"no reward model folder at {model_dir}")
        if credit is not None and credit not in credit_rules.CREDIT_RULES:
            raise ValueError(f"unknown credit rule {credit!r} (expected one of {', '.join(credit_rules.CREDIT_RULES)})")
        if answer_weight and answer_check is None:
            raise ValueError("answer_weight needs an answer_check (a callable or 'grader')")
        if isinstance(answer_check, str) and answer_check != "grader":
            raise ValueError(f"answer_check must be a callable or 'grader', not {answer_check!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.scorer = Scorer(model_dir, device=device)
        self.kind = self.scorer.card.kind
        if self.kind == "orm" and credit not in (None, "last"):
            raise ValueError(f"an ORM scores only the final step: its credit rule is 'last', not {credit!r}")
        self.credit = credit or ("last" if self.kind == "orm" else "min")
        self.answer_weight = float(answer_weight)
        self.answer_check = grader_check if answer_check == "grader" else answer_check
        self.batch_size = batch_size
        self.__name__ = name or ("orm" if self.kind == "orm" else f"prm_{self.credit}")
        self.stats = {"completions": 0, "empty": 0, "truncated": 0, "answer_correct": 0, "ungradable": 0}

    def __repr__(self) -> str:
        return f"PRMReward({self.__name__!r}, credit={self.credit!r}, answer_weight={self.answer_weight})"

    def __call__(self, prompts: list, completions: list, **columns) -> list[float]:
        """One reward per completion (TRL's reward-function signature)."""
        scores, bonus = self._score(prompts, completions, columns)
        return [credit_rules.solution_reward(p, self.credit) + b for p, b in zip(scores, bonus)]

    def step_rewards(self, prompts: list, completions: list, **columns) -> list[list[float]]:
        """Per completion, one reward per scored step, summing to what :meth:`__call__` returns; the answer
        bonus sits on the last step. For trainers with token-level rewards (``docs/rl.md``)."""
        scores, bonus = self._score(prompts, completions, columns)
        out = []
        for p, b in zip(scores, bonus):
            dense = credit_rules.step_rewards(p, self.credit)
            if dense:
                dense[-1] += b
            out.append(dense)
        return out

    def step_scores(self, problems: list[str], step_lists: list[list[str]]) -> list[np.ndarray]:
        """P(correct) of each scored step of each solution, all solutions in one batched pass."""
        probs = self.scorer.probabilities(problems, step_lists, batch_size=self.batch_size)
        neutral = self.scorer.neutral
        # A 3-class model's P(correct) is a sum of two probabilities, which rounding can push past 1 by an ulp.
        return [np.clip([class_scores(list(row), neutral)["p_correct"] for row in p], 0.0, 1.0).reshape(-1)
                for p in probs]

    def _score(self, prompts: list, completions: list, columns: dict) -> tuple[list[np.ndarray], list[float]]:
        """(step scores, answer bonus) per completion; updates ``stats`` and logs to TRL when it can."""
        n = len(completions)
        if len(prompts) != n:
            raise ValueError(f"{len(prompts)} prompts for {n} completions")
        texts = [completion_text(c) for c in completions]
        problems = (_column(columns, "problem", n) if "problem" in columns
                    else [problem_of(p, self.scorer.fmt.problem_suffix) for p in prompts])
        if "steps" in columns:
            step_lists = [list(s) for s in _column(columns, "steps", n)]
        else:
            step_lists = [split_steps(t, "auto", marker=self.scorer.fmt.marker or "") for t in texts]
        scores = self.step_scores(problems, step_lists)
        bonus = self._bonus(problems, texts, step_lists, columns)
        truncated = sum(len(p) < len(s) for p, s in zip(scores, step_lists))
        self.stats["completions"] += n
        self.stats["empty"] += sum(not s for s in step_lists)
        self.stats["truncated"] += truncated
        log = columns.get("log_metric")
        if callable(log) and n:
            # The same metric names on every call: TRL gathers them across processes in name order.
            log(f"{self.__name__}/truncated", truncated / n)
        return scores, bonus

    def _bonus(self, problems: list[str], texts: list[str], step_lists: list, columns: dict) -> list[float]:
        if not self.answer_weight:
            return [0.0] * len(texts)
        n = len(texts)
        # Per-row columns only (TRL also passes trainer_state, log_metric, ...); problem and completion are
        # the check's own arguments.
        rows = [{k: v[i] for k, v in columns.items()
                 if isinstance(v, list | tuple) and len(v) == n and k not in ("problem", "completion")}
                for i in range(n)]
        bonus = []
        for problem, text, steps, row in zip(problems, texts, step_lists, rows):
            # An empty completion earns nothing, answer included (its step rewards have no step to carry it).
            verdict = self.answer_check(problem, text, **row) if steps else False
            if verdict is None:
                self.stats["ungradable"] += 1
            right = verdict is not None and bool(verdict)
            self.stats["answer_correct"] += right
            bonus.append(self.answer_weight if right else 0.0)
        return bonus


def _column(columns: dict, key: str, n: int) -> list:
    values = columns[key]
    if not isinstance(values, list | tuple) or len(values) != n:
        size = len(values) if isinstance(values, list | tuple) else type(values).__name__
        raise ValueError(f"column {key!r} has {size} entries for {n} completions (one per completion expected)")
    return list(values)


__all__ = ["PRMReward", "completion_text", "grader_check", "problem_of", "step_char_ends", "step_token_ends"]
