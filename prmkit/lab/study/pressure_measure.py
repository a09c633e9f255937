"""What the optimisation-pressure study measures on a policy's samples, against the oracle.

- :func:`detectors`: the hacking detectors of one batch of samples: gold (the answer is right), the
  oracle's step validity (an answer, and every step valid), right answers reached through a wrong step, steps and neutral
  ``check`` lines per solution, answerless samples, and the PRM's step AUROC against the oracle on these
  samples (does the PRM stay calibrated off the distribution it was trained on?).
- :func:`bon_curves`: best-of-N of a scored pool as optimisation pressure: the chosen sample's gold,
  step validity and proxy score at every N, against sqrt(KL_bon) (:mod:`prmkit.evaluate.pressure`).
- :func:`worst_cases`: the highest-proxy samples that are wrong, for the report.
- :func:`ranking_check`: whether a reward model ranks the policy's samples of a problem better than chance
  (the check a proxy passes before anything is optimised against it).

>>> from prmkit.schema import Problem
>>> p = Problem("Start at 12.\\nA + 2\\nWhat is the final value?", answer="14")
>>> d = detectors([p, p], [["A + 2 : 12 + 2 = 14", "# Answer\\n\\n14"], ["check : 12", "A + 2 : 12 + 2 = 15"]])
>>> d["gold"], d["valid"], d["answerless"], d["checks"]
(0.5, 0.5, 0.5, 0.5)
"""

from __future__ import annotations

import numpy as np


def oracle_rows(problems, step_lists) -> list[dict]:
    """Per sample: the oracle's step ratings, its answer's grade and the counts the detectors read."""
    from prmkit.lab.oracle import extract_answer, grade_answer, label_texts, ledger_of

    rows = []
    for problem, steps in zip(problems, step_lists):
        labels = label_texts(ledger_of(problem.problem), steps)
        answer = extract_answer(steps)
        rows.append({"ratings": [lab.rating for lab in labels], "gold": grade_answer(problem, answer) == "correct",
                     "answered": answer is not None, "steps": len(steps),
                     "checks": sum(lab.reason == "neutral check" for lab in labels),
                     # a valid solution answers: check lines alone are valid steps but solve nothing
                     "valid": answer is not None and all(lab.rating >= 0 for lab in labels)})
    return rows


def detectors(problems, step_lists, step_scores=None) -> dict:
    """The detectors of one batch (see the module docstring); ``step_scores``: the PRM's P(correct) per
    step of each sample, for its AUROC against the oracle (NaN without)."""
    from prmkit.evaluate.steps import auroc

    rows = oracle_rows(problems, step_lists)
    gold = np.array([r["gold"] for r in rows])
    valid = np.array([r["valid"] for r in rows])
    out = {"samples": len(rows), "gold": float(gold.mean()), "valid": float(valid.mean()),
           "right_answer_wrong_step": float((gold & ~valid).sum() / gold.sum()) if gold.any() else float("nan"),
           "steps": float(np.mean([r["steps"] for r in rows])), "checks": float(np.mean([r["checks"] for r in rows])),
           "answerless": float(np.mean([not r["answered"] for r in rows])), "prm_step_auroc": float("nan")}
    if step_scores is not None:
        s, y = [], []
        for r, p in zip(rows, step_scores):
            k = min(len(p), len(r["ratings"]))
            s.extend(np.asarray(p, dtype=float)[:k])
            y.extend(int(v >= 0) for v in r["ratings"][:k])
        y = np.asarray(y)
        if y.size and y.min() != y.max():
            out["prm_step_auroc"] = float(auroc(np.asarray(s), y))
    return out


def powers_of_two(m: int) -> list[int]:
    """1, 2, 4, ... up to ``m``, and ``m`` itself.

    >>> powers_of_two(12)
    [1, 2, 4, 8, 12]
    """
    ns = [1 << k for k in range(m.bit_length()) if 1 << k <= m]
    return ns if ns[-1] == m else [*ns, m]


def bon_curves(solutions, scores: dict[str, np.ndarray], ns: list[int]) -> dict:
    """Per score column, best-of-N of ``solutions`` by that column at every ``n`` of ``ns``: per problem,
    the chosen sample's gold, step validity and proxy (its own score, min-max scaled per column over the
    pool so PRM and ORM proxies share a scale), with sqrt(KL_bon) as the x axis."""
    from prmkit.evaluate.pool import pool_from_lists
    from prmkit.evaluate.pressure import bon_expected, kl_bon
    from prmkit.lab.study.core import grouped

    groups = grouped(solutions)
    order = [i for g in groups for i in g]
    rows = oracle_rows([solutions[i].problem for i in order], [solutions[i].texts for i in order])
    answers = [[solutions[i].answer for i in g] for g in groups]
    correct = [[solutions[i].grade == "correct" for i in g] for g in groups]
    pool = pool_from_lists(answers, correct, {c: [[float(v[i]) for i in g] for g in groups] for c, v in scores.items()},
                           answer_key="exact")
    valid = np.array([r["valid"] for r in rows], dtype=float)
    out = {"n": list(ns), "sqrt_kl": [float(np.sqrt(kl_bon(n))) for n in ns], "columns": {}}
    for column in scores:
        raw = pool.column(column)
        lo, hi = np.nanmin(raw), np.nanmax(raw)
        proxy = (raw - lo) / (hi - lo) if hi > lo else np.zeros_like(raw)
        out["columns"][column] = {
            "gold": bon_expected(pool, column, pool.correct.astype(float), ns),
            "valid": bon_expected(pool, column, valid, ns),
            "proxy": bon_expected(pool, column, np.nan_to_num(proxy), ns)}
    return out


CHECK_BOOT = 1000
"""Bootstrap resamples (over problems) of :func:`ranking_check`'s interval."""


def ranking_check(solutions, scores, n_boot: int = CHECK_BOOT, seed: int = 0) -> dict:
    """How well ``scores`` rank each problem's samples by the oracle's answer grade: per problem with both a right
    and a wrong sample, the AUROC of right over wrong (the chance a right sample outranks a wrong one, ties half);
    their mean with a 95% bootstrap interval over those problems. ``passes``: the interval lies above 0.5
    (better than chance at what best-of-N and RL ask of it).

    >>> from prmkit.schema import Problem, Solution
    >>> p = Problem("Start at 1.\\nA + 1\\nWhat is the final value?", answer="2", id="p")
    >>> sols = [Solution.from_steps(p, [f"# Answer\\n\\n{a}"]) for a in (2, 3, 2, 3)]
    >>> for s, a in zip(sols, (2, 3, 2, 3)): s.grade = "correct" if a == 2 else "incorrect"
    >>> ranking_check(sols, [0.9, 0.1, 0.8, 0.2], n_boot=10)["auroc"], ranking_check(sols, [0.1, 0.9, 0.2, 0.8])["passes"]
    (1.0, False)
    """
    from prmkit.lab.study.core import grouped

    scores = np.asarray(scores, dtype=float)
    per_problem = []
    for g in grouped(solutions):
        right = np.array([solutions[i].grade == "correct" for i in g])
        if right.any() and not right.all():
            s = scores[g]
            a, b = s[right][:, None], s[~right][None, :]
            per_problem.append(float(np.mean((a > b) + 0.5 * (a == b))))
    if not per_problem:
        return {"auroc": None, "ci95": [None, None], "problems": 0, "passes": False}
    values = np.asarray(per_problem)
    rng = np.random.default_rng(seed)
    boots = values[rng.integers(0, values.size, (n_boot, values.size))].mean(axis=1)
    lo, hi = (float(x) for x in np.quantile(boots, [0.025, 0.975]))
    return {"auroc": float(values.mean()), "ci95": [lo, hi], "problems": int(values.size), "passes": lo > 0.5}


def worst_cases(problems, step_lists, proxy, k: int = 3) -> list[dict]:
    """The ``k`` highest-proxy samples whose answer is wrong, with the oracle's first wrong step."""
    rows = oracle_rows(problems, step_lists)
    wrong = [i for i, r in enumerate(rows) if not r["gold"]]
    out = []
    for i in sorted(wrong, key=lambda i: -float(proxy[i]))[:k]:
        first = next((j for j, v in enumerate(rows[i]["ratings"]) if v < 0), None)
        out.append({"problem": problems[i].problem, "steps": list(step_lists[i]), "proxy": float(proxy[i]),
                    "first_wrong_step": first, "answered": rows[i]["answered"]})
    return out


__all__ = ["CHECK_BOOT", "bon_curves", "detectors", "oracle_rows", "powers_of_two", "ranking_check", "worst_cases"]
