"""The four automatic labellers, each from solutions to labelled records (a chunk at a time).

- :func:`label_mc` (Math-Shepherd): ``k`` rollouts from every step prefix (or ``max_prefixes`` of them);
  hard ratings (any rollout right) and soft values (the share right), :mod:`prmkit.label.auto.mc`.
- :func:`label_omegaprm`: binary search for the first error with the same rollouts
  (:mod:`prmkit.label.auto.omegaprm`); a right-answer solution is rated +1 throughout at no cost, as
  OmegaPRM searches only solutions with a wrong answer.
- :func:`label_judge`: an LLM judge's first wrong step (:mod:`prmkit.label.auto.judge`); a reply it cannot
  read leaves the solution unlabelled, with the reply kept.
- :func:`label_consensus` (Qwen's "Lessons of developing PRMs"): the mc labels, kept only where the judge
  puts the first error at the same step (or both find none).

Every record is the input solution with the labels in its steps (unlabelled steps stay, rating None),
``label_source`` ``rollout`` or ``judge``, and ``meta["autolabel"]``: the labeller, its settings, what it
cost (rollouts, their tokens, judge calls and tokens) and what it found (the first error; the judge's
reply). The last prefix of an answered solution is not rolled out: the solution's own graded answer
says whether it reaches the right one.
"""

from __future__ import annotations

import dataclasses

from prmkit.label.auto.mc import first_wrong, mc_labels, prefix_steps_to_roll
from prmkit.label.auto.omegaprm import binary_first_error, search_labels
from prmkit.schema import Completion, Solution, Step


def final_verdict(solution: Solution, grade) -> str:
    """The grade of a solution's own final answer (what its last prefix reaches), by the rollouts' grader;
    ``"no answer"`` for a solution cut off before its answer, whose last prefix may still reach one (so
    it is rolled out, not known wrong, though the solution itself grades incorrect)."""
    from prmkit.grade import extract_answer

    answer = extract_answer("\n".join(solution.texts))
    return "no answer" if answer is None else grade(solution.problem, answer)


def labelled(solution: Solution, ratings: list, values: list | None, source: str, found: dict, cost: dict,
             settings: dict) -> Solution:
    """``solution`` with one completion per step carrying ``ratings`` (and ``values``) and the provenance."""
    values = values or [None] * len(ratings)
    steps = [Step([Completion(t, rating=r, value=v)]) for t, r, v in zip(solution.texts, ratings, values)]
    info = {"labeller": settings["method"], "settings": settings, "cost": cost, **found}
    return dataclasses.replace(solution, steps=steps, label_source=source, labeller=f"auto-{settings['method']}",
                               meta={**solution.meta, "autolabel": info})


def settings_of(cfg, rollouts=None) -> dict:
    """The settings a record carries: the method's, and (with rollouts) the generator and the grader."""
    return {**cfg.settings, **(rollouts.describe() if rollouts is not None else {})}


def _rollout_cost(completions: int, tokens: int) -> dict:
    return {"rollouts": completions, "rollout_tokens": tokens}


def mc_counts(solutions: list[Solution], rollouts, cfg) -> list[tuple[list, dict]]:
    """Right-rollout counts per step (None: not rolled out) and the rollout cost, of every solution; the
    prefixes of the whole chunk go to the backend together."""
    plans, requests = [], []
    for sol in solutions:
        n = len(sol.texts)
        verdict = final_verdict(sol, rollouts.grade)
        known_last = verdict in ("correct", "incorrect")
        roll = [i for i in prefix_steps_to_roll(n, cfg.max_prefixes) if not (known_last and i == n - 1)]
        plans.append((n, verdict, known_last, roll, len(requests)))
        requests += [(sol.problem, sol.texts[:i + 1]) for i in roll]
    counts = rollouts.right_counts(requests, cfg.k) if requests else []
    out = []
    for n, verdict, known_last, roll, at in plans:
        per: list = [None] * n
        tokens = 0
        for j, i in enumerate(roll):
            per[i], t = counts[at + j]
            tokens += t
        if known_last:
            per[n - 1] = cfg.k if verdict == "correct" else 0
        out.append((per, _rollout_cost(cfg.k * len(roll), tokens)))
    return out


def label_mc(solutions: list[Solution], rollouts, cfg) -> list[Solution]:
    out = []
    for sol, (counts, cost) in zip(solutions, mc_counts(solutions, rollouts, cfg)):
        ratings, values = mc_labels(counts, cfg.k)
        found = {"first_error": first_wrong(ratings), "right_rollouts": counts}
        out.append(labelled(sol, ratings, values, "rollout", found, cost, settings_of(cfg, rollouts)))
    return out


def label_omegaprm(solutions: list[Solution], rollouts, cfg) -> list[Solution]:
    return [omegaprm_one(sol, rollouts, cfg) for sol in solutions]


def omegaprm_one(sol: Solution, rollouts, cfg) -> Solution:
    """One solution's OmegaPRM labels: its prefixes probed one at a time, as the search goes."""
    n, verdict = len(sol.texts), final_verdict(sol, rollouts.grade)
    probed: dict[int, tuple[int, int]] = {}

    def reachable(i: int) -> bool:
        probed[i] = rollouts.right_counts([(sol.problem, sol.texts[:i + 1])], cfg.k)[0]
        return probed[i][0] > 0

    if verdict == "correct":  # the last prefix reaches the right answer: OmegaPRM has nothing to search
        ratings, values, found = [1] * n, [None] * (n - 1) + [1.0], {"first_error": None, "probes": []}
    else:
        search = binary_first_error(n, reachable, cfg.max_probes, last_known_wrong=verdict == "incorrect")
        ratings = search_labels(search, n)
        values = [probed[i][0] / cfg.k if i in probed else None for i in range(n)]
        if verdict == "incorrect" and ratings[n - 1] is not None:
            values[n - 1] = 0.0
        found = {"first_error": search.first_error, "probes": [i for i, _ in search.probes],
                 "resolved": search.resolved or search.low >= n}
    cost = _rollout_cost(cfg.k * len(probed), sum(t for _, t in probed.values()))
    return labelled(sol, ratings, values, "rollout", found, cost, settings_of(cfg, rollouts))


def judge_found(result) -> tuple[dict, dict]:
    """What a judge's reply says (its first error, or why it is unreadable, and the reply) and its cost."""
    verdict = result.verdict
    found = {"judge": {"index": verdict.index, "reply": result.reply}}
    if verdict.index is None:
        found["judge"]["unparseable"] = verdict.error
    cost = {"judge_calls": 1, "judge_tokens": result.completion_tokens}
    return found, cost


def label_judge(solutions: list[Solution], judge, cfg) -> list[Solution]:
    from prmkit.label.auto.judge import judge_ratings

    out = []
    for sol, result in zip(solutions, judge.judge(solutions)):
        found, cost = judge_found(result)
        n, index = len(sol.texts), result.verdict.index
        ratings = [None] * n if index is None else judge_ratings(index, n)
        found["first_error"] = None if index in (None, -1) else index
        out.append(labelled(sol, ratings, None, "judge", found, cost, cfg.settings))
    return out


def agree(mc_first: int | None, judge_index: int | None) -> bool:
    """Do rollouts and judge put the first error at the same step (both none: -1)? An unreadable judge never agrees.

    >>> agree(2, 2), agree(None, -1), agree(None, 3), agree(1, None)
    (True, True, False, False)
    """
    return judge_index is not None and (-1 if mc_first is None else mc_first) == judge_index


def label_consensus(solutions: list[Solution], rollouts, judge, cfg) -> list[Solution]:
    out = []
    for sol, (counts, cost), result in zip(solutions, mc_counts(solutions, rollouts, cfg), judge.judge(solutions)):
        ratings, values = mc_labels(counts, cfg.k)
        found, judge_cost = judge_found(result)
        first = first_wrong(ratings)
        kept = agree(first, result.verdict.index)
        found.update(first_error=first, right_rollouts=counts, consensus=kept)
        if not kept:  # a solution the two disagree on is not a label
            ratings, values = [None] * len(ratings), None
        out.append(labelled(sol, ratings, values, "rollout", found, {**cost, **judge_cost}, settings_of(cfg, rollouts)))
    return out


def label_chunk(solutions: list[Solution], cfg, rollouts=None, judge=None) -> list[Solution]:
    """Labels of ``solutions`` by ``cfg.method``."""
    if cfg.method == "mc":
        return label_mc(solutions, rollouts, cfg)
    if cfg.method == "omegaprm":
        return label_omegaprm(solutions, rollouts, cfg)
    if cfg.method == "judge":
        return label_judge(solutions, judge, cfg)
    return label_consensus(solutions, rollouts, judge, cfg)
