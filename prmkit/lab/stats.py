"""Every rate of a generated pool: accuracy by selection, failure modes as the oracle sees them, lengths.

Selection metrics reuse :mod:`prmkit.evaluate` (exact pass@N by order statistics; majority vote of
all ``M`` samples, which is deterministic at ``N = M``); answers are grouped by exact string (ledger
answers are integers). Step metrics come from the oracle (:mod:`prmkit.lab.oracle`), reading text only.

Metric names say what they measure:

``pass@1``, ``pass@N``
    the chance that one (any of N) random sample(s) is right; ``pass@1`` is the mean accuracy.
``step_limit@N``
    the chance that one of N random samples is valid at every step: the most a perfect step judge reaches.
``maj_acc@M``
    majority vote over all M samples of a problem (ties split in expectation; no answer never votes).
``maj_wrong_pass_right``
    share of problems with a right sample whose majority answer is wrong (what a verifier can win).
``no_answer``, ``wrong_step_solutions``, ``right_answer_wrong_step``
    share of samples without ``# Answer``; with at least one -1 step; and of right-answer samples,
    the share with a -1 step (errors that cancel).
``neutral_steps``, ``wrong_steps``
    share of all steps rated 0 / -1 by the oracle.
``steps_per_solution``, ``tokens_per_solution``
    means; a token is a whitespace-separated piece of a step, plus one per line break between steps.
``misread[kind]``
    share of a trigger's occurrences (that the sample reached) it restated wrong (``again``/``undo``:
    skipped); flipped-operator slips on ``less`` count here too.
``step_reasons``, ``first_error``
    share of steps per oracle reason; share of samples per reason of their first -1 step.
``error_kinds``, ``first_error_kind`` (the plans domain)
    share of steps whose -1 is an *immediate* error (a broken constraint, visible on the line) or a
    *delayed* one (a dead end or a wasteful day, visible only later); the same for each sample's first.

>>> from prmkit.lab.config import preset
>>> from prmkit.lab.pools import generate_pool
>>> d = pool_stats(generate_pool(preset("quick"), seed=0, split="eval"))
>>> d["problems"], d["samples_per_problem"], 0 < d["pass@1"] < d["pass@16"] <= 1
(40, 16, True)
>>> print(format_stats(d).splitlines()[0])
pool: 40 problems x 16 samples = 640 solutions
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from prmkit.evaluate.bon import exact_pass
from prmkit.evaluate.curves import default_ns
from prmkit.evaluate.pool import Pool, PoolBuilder
from prmkit.evaluate.vote import vote_curve
from prmkit.lab.domains import Domain, domain_of_pool
from prmkit.schema import Solution


def count_tokens(texts: list[str]) -> int:
    """Tokens of a solution as the lab counts them (numbers and symbols are one token each).

    >>> count_tokens(["C - 6 : 14 - 6 = 8", "# Answer\\n\\n8"])
    13
    """
    return sum(len(t.split()) for t in texts) + max(len(texts) - 1, 0)


def selection_stats(solutions: list[Solution], valid: list[bool] | None = None) -> tuple[Pool, dict[str, float]]:
    """The pool of ``solutions`` and its pass@1, pass@N (powers of two up to M), maj_acc@M; with ``valid``
    (each solution's every step valid, by the oracle) the step-judge limit ``step_limit@N`` too: the most a
    perfect step judge reaches (a valid-every-step sample among the N), beside pass@N, a perfect outcome
    judge's."""
    builder = PoolBuilder([], answer_key="exact")
    for i, s in enumerate(solutions):
        builder.add(s.problem.id or s.problem.problem, s.answer, s.grade == "correct",
                    valid=None if valid is None else valid[i])
    pool = builder.build()
    m = int(pool.sizes.max())
    ns = default_ns(m)
    passes = exact_pass(pool, ns).mean(axis=0)
    out = {f"pass@{n}": float(v) for n, v in zip(ns, passes)}
    if pool.valid is not None:
        limits = exact_pass(pool, ns, good=pool.valid).mean(axis=0)
        out.update({f"step_limit@{n}": float(v) for n, v in zip(ns, limits)})
    maj = vote_curve(pool, [m]).per_problem[:, 0]
    out[f"maj_acc@{m}"] = float(maj.mean())
    any_right = exact_pass(pool, [m])[:, 0] > 0
    out["maj_wrong_pass_right"] = float(np.mean(any_right & (maj < 0.5)))
    return pool, out


class _StepTally:
    """Counts over every step and solution, from the oracle's labels."""

    def __init__(self, domain: Domain):
        self.domain = domain
        self.reasons, self.first = Counter(), Counter()
        self.reached, self.misread = Counter(), Counter()
        self.n = self.steps = self.tokens = self.no_answer = self.wrong = self.right = self.right_wrong = 0

    def add(self, s: Solution, labels: list) -> None:
        self.n += 1
        self.steps += len(labels)
        self.tokens += count_tokens(s.texts)
        self.no_answer += s.answer is None
        self.reasons.update(lab.reason for lab in labels)
        bad = next((lab.reason for lab in labels if lab.rating == -1), None)
        self.wrong += bad is not None
        if bad is not None:
            self.first[bad] += 1
        if s.grade == "correct":
            self.right += 1
            self.right_wrong += bad is not None
        for kind, misread in self.domain.misreadings(s, labels) if self.domain.misreadings else ():
            self.reached[kind] += 1
            self.misread[kind] += misread


def pool_stats(solutions: list[Solution], domain: str | None = None) -> dict:
    """Every rate of a pool of graded solutions (see the module docstring for the names), by its problems'
    own domain (:func:`prmkit.lab.domains.domain_of_pool`; ``domain`` must agree where given)."""
    d = domain_of_pool(solutions, domain)
    oracle = d.oracle
    labels = [oracle.oracle_labels(s) for s in solutions]
    pool, selection = selection_stats(solutions, [all(lab.rating >= 0 for lab in ls) for ls in labels])
    t = _StepTally(d)
    for s, ls in zip(solutions, labels):
        t.add(s, ls)
    share = lambda a, b: a / b if b else None
    rating = {k: r for k, (r, _) in oracle.REASONS.items()}
    out = {
        "problems": pool.n_problems, "samples_per_problem": int(pool.sizes.max()), "solutions": t.n,
        **selection,
        "no_answer": share(t.no_answer, t.n),
        "wrong_step_solutions": share(t.wrong, t.n),
        "right_answer_wrong_step": share(t.right_wrong, t.right),
        "neutral_steps": share(sum(v for k, v in t.reasons.items() if rating[k] == 0), t.steps),
        "wrong_steps": share(sum(v for k, v in t.reasons.items() if rating[k] == -1), t.steps),
        "steps_per_solution": share(t.steps, t.n), "tokens_per_solution": share(t.tokens, t.n),
        "misread": {k: share(t.misread[k], t.reached[k]) for k in d.triggers if t.reached[k]},
        "step_reasons": {k: share(v, t.steps) for k, v in t.reasons.most_common()},
        "first_error": {k: share(v, t.n) for k, v in t.first.most_common()},
    }
    if d.delayed:  # a domain whose errors are not all visible on their line: how many are of each kind
        kinds = {kind: [k for k in oracle.REASONS if d.error_kind(k) == kind] for kind in ("immediate", "delayed")}
        out["error_kinds"] = {kind: share(sum(t.reasons[k] for k in ks), t.steps) for kind, ks in kinds.items()}
        out["first_error_kind"] = {kind: share(sum(t.first[k] for k in ks), t.n) for kind, ks in kinds.items()}
    if not d.triggers:
        del out["misread"]
    return out


def format_stats(d: dict) -> str:
    """The stats as an aligned two-column table for a terminal."""
    lines = [f"pool: {d['problems']} problems x {d['samples_per_problem']} samples = {d['solutions']} solutions"]
    scalars = [(k, v) for k, v in d.items() if isinstance(v, float)]
    for key, value in scalars:
        lines.append(f"  {key:<28} {_fmt(key, value)}")
    for group in ("misread", "step_reasons", "first_error", "error_kinds", "first_error_kind"):
        if group not in d:
            continue
        lines.append(f"{group}:")
        lines += [f"  {k:<28} {v:7.1%}" for k, v in d[group].items() if v is not None]
    return "\n".join(lines)


def _fmt(key: str, value: float) -> str:
    return f"{value:7.2f}" if key.endswith(("_per_solution",)) else f"{value:7.1%}"
