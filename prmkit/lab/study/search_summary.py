"""The search study's numbers, read back from its jobs' outputs (:mod:`prmkit.lab.study.search`).

Every pick is graded by the lab's oracle: *answer accuracy* (the picked solution's final answer is right) and
*valid-solution accuracy* (it answers and every step is valid). A pick's cost is the tokens generated for it plus
the tokens the PRM read (the oracle's arm is charged what the PRM would have read).

- **At equal N**: best-of-N and weighted best-of-N are read from the pool of ``max(budgets)`` samples per problem,
  cut into ``max / N`` disjoint subsets of N samples (each N independent samples); the final pick
  (:func:`prmkit.search.strategies.pick`, the one ``prmkit search`` makes) is made in each, and the problem's
  value is their mean.
- **At equal compute** (the headline): each tree search against best-of-N at N* = its mean tokens per problem over
  best-of-N's mean tokens per sample (per seed), best-of-N's accuracy per problem by the exact estimator
  (:func:`prmkit.evaluate.pressure.bon_expected`: ties split, answerless samples never picked), interpolated
  linearly in log N; *capped* where N* exceeds the pool.

Intervals: 95%, bootstrap over seeds then problems (:func:`~prmkit.lab.study.core.mean_ci`); differences are
paired by problem. Within a difficulty bin (a problem's pass@1 in samples of its own, not the pool's) and for
exploitation, the bootstrap resamples the seeds' problems pooled.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple

import numpy as np

POOLED = ("best_of_n", "weighted")
"""Strategies read from the pool (whole samples)."""
BINS = ("hard", "medium", "easy")
COLUMNS = ("gold", "valid", "generated", "prm")
"""What each pick records, per problem: right answer, valid solution, tokens generated, tokens the PRM read."""


def tree_name(strategy: str, scorer: str, n: int) -> str:
    """A tree search's job folder."""
    return f"{strategy}-{scorer}-{n}"


def read_rows(path) -> list[dict]:
    from prmkit.io import read_records

    return list(read_records(path, lambda value, _: value))


def read_problems(path) -> list:
    from prmkit.io import read_problems as read

    return list(read(path))


class Graded(NamedTuple):
    """The oracle's reading of solutions: answer right, valid, and each one's 0/1 step truth as a whole solution
    (a last 0 for one that never answers: it is no valid solution, whatever its steps)."""

    gold: np.ndarray
    valid: np.ndarray
    truth: list[list[float]]


def graded(problems, step_lists) -> Graded:
    from prmkit.lab.study.pressure_measure import oracle_rows

    rows = oracle_rows(problems, step_lists)
    truth = [[1.0 if x >= 0 else 0.0 for x in r["ratings"]] + ([] if r["answered"] else [0.0]) for r in rows]
    return Graded(np.array([r["gold"] for r in rows], bool), np.array([r["valid"] for r in rows], bool), truth)


def candidates(samples: list[dict], truth: list[list[float]], scorer: str, ids) -> list:
    """The pool's samples ``ids`` as a search's finished candidates, scored by the PRM or by the oracle; a sample
    the PRM scored fewer steps of than it has is marked truncated, as a search marks it (it ranks last)."""
    from prmkit.search.core import Candidate

    out = []
    for i in ids:
        s = samples[i]
        scores = s["scores"] if scorer == "prm" else truth[i]
        out.append(Candidate(s["steps"], scores, True, id=i, truncated=scorer == "prm" and len(scores) < len(s["steps"])))
    return out


def block_picks(samples: list[dict], g: Graded, n: int, strategy: str, scorer: str) -> tuple[float, ...]:
    """One problem's pool: the mean over its disjoint subsets of ``n`` of the pick's gold and validity, and of a
    subset's generated and PRM tokens (:data:`COLUMNS`)."""
    from prmkit.lab.study.core import AGGREGATION
    from prmkit.search.strategies import SearchConfig, pick

    cfg = SearchConfig(strategy=strategy, n=n, aggregation=AGGREGATION)
    picks = []
    for start in range(0, len(samples) - n + 1, n):
        block = range(start, start + n)
        chosen = pick(candidates(samples, g.truth, scorer, block), cfg)
        picks.append((g.gold[chosen.id], g.valid[chosen.id], sum(samples[i]["tokens"] for i in block),
                      sum(samples[i]["prm_tokens"] for i in block)))
    return tuple(float(x) for x in np.array(picks, float).mean(axis=0))


def bon_curves(groups: list[list[dict]], graded_pool: list[Graded], scorer: str) -> dict[str, np.ndarray]:
    """Exact best-of-N of every problem at every N from 1 to the pool's size, picking by the PRM's (min) or the
    oracle's solution score: ``{"gold", "valid"}`` of shape (problems, pool size)."""
    from prmkit.evaluate.pool import pool_from_lists
    from prmkit.evaluate.pressure import bon_expected
    from prmkit.lab.oracle import extract_answer
    from prmkit.lab.study.core import AGGREGATION
    from prmkit.search.strategies import value_of

    scores = [[max(value_of(c, AGGREGATION), -1.0) for c in candidates(s, g.truth, scorer, range(len(s)))]
              for s, g in zip(groups, graded_pool)]  # -1: below any probability, where the PRM truncated
    answers = [[extract_answer(x["steps"]) for x in s] for s in groups]
    pool = pool_from_lists(answers, [list(g.gold) for g in graded_pool], {"s": scores}, answer_key="exact")
    ns = list(range(1, max(len(s) for s in groups) + 1))
    return {k: bon_expected(pool, "s", np.concatenate([getattr(g, k) for g in graded_pool]).astype(float), ns)
            for k in ("gold", "valid")}


def at_compute(curve: np.ndarray, n_star: float) -> np.ndarray:
    """Per problem, a best-of-N ``curve`` (problems, N = 1..M) read at ``n_star``: linear in log N between the whole
    N around it, N = 1 below, N = M above (capped).

    >>> at_compute(np.array([[0.0, 1.0, 1.0, 1.0]]), 1.5).round(3).tolist(), at_compute(np.array([[0.2, 0.4]]), 9.0).tolist()
    ([0.585], [0.4])
    """
    m = curve.shape[1]
    x = float(np.clip(n_star, 1, m))
    lo, hi = int(np.floor(x)), int(np.ceil(x))
    if lo == hi:
        return curve[:, lo - 1]
    w = (np.log(x) - np.log(lo)) / (np.log(hi) - np.log(lo))
    return (1 - w) * curve[:, lo - 1] + w * curve[:, hi - 1]


class Seed(NamedTuple):
    """One seed's numbers: per ``(strategy, scorer, n)`` a (problems, :data:`COLUMNS`) array; per scorer the exact
    best-of-N curves; best-of-N's tokens per sample per problem; difficulty (pass@1 in its own samples); the pool's
    pass@N and step-judge limit per N and problem; the PRM's step AUROC on the pool."""

    cells: dict
    curves: dict
    sample_cost: np.ndarray
    difficulty: np.ndarray
    ceilings: dict
    prm_step_auroc: float


def pool_groups(root: Path, problems: list, n: int) -> list[list[dict]]:
    """The pool's samples, per problem in the problems file's order (checked: ``n`` each, the problem's own)."""
    rows = read_rows(root / "pool" / "pool.jsonl.gz")
    if len(rows) != len(problems) * n:
        raise ValueError(f"{root / 'pool'}: {len(rows)} samples, expected {len(problems)} problems x {n}")
    groups = [rows[p * n:(p + 1) * n] for p in range(len(problems))]
    if any(r["problem"] != p for p, g in enumerate(groups) for r in g):
        raise ValueError(f"{root / 'pool'}: samples out of problem order")
    return groups


def pool_auroc(groups: list[list[dict]], graded_pool: list[Graded]) -> float:
    """The PRM's step AUROC against the oracle over every scored step of the pool."""
    from prmkit.evaluate.steps import auroc

    scores, truth = [], []
    for samples, g in zip(groups, graded_pool):
        for s, t in zip(samples, g.truth):
            k = min(len(s["scores"]), len(s["steps"]))
            scores.extend(s["scores"][:k])
            truth.extend(t[:k])
    y = np.asarray(truth)
    return float(auroc(np.asarray(scores), y)) if y.size and y.min() != y.max() else float("nan")


def tree_cells(cfg, root: Path, problems: list) -> dict:
    """Every tree search's picks, graded, with their cost (aligned with ``problems``: checked)."""
    sc, cells = cfg.search, {}
    for strategy in sc.strategies:
        for scorer in sc.scorers:
            for n in sc.budgets:
                folder = root / tree_name(strategy, scorer, n)
                results = read_rows(folder / "results.jsonl.gz")
                if [r["problem"] for r in results] != [p.problem for p in problems]:
                    raise ValueError(f"{folder}: its results are not the problems file's, in order")
                g = graded(problems, [(r["chosen"] or {}).get("steps") or [] for r in results])
                cells[strategy, scorer, n] = np.array(
                    [(gold, valid, r["cost"]["generated_tokens"], r["cost"]["prm_tokens"])
                     for gold, valid, r in zip(g.gold, g.valid, results)], float)
    return cells


def seed_numbers(cfg, root: Path) -> Seed:
    from prmkit.evaluate.bon import exact_pass_one

    sc = cfg.search
    problems = read_problems(root / "problems" / "problems.jsonl")
    groups = pool_groups(root, problems, max(sc.budgets))
    graded_pool = [graded([p] * len(s), [x["steps"] for x in s]) for p, s in zip(problems, groups)]
    cells = {(strategy, scorer, n): np.array([block_picks(s, g, n, strategy, scorer)
                                              for s, g in zip(groups, graded_pool)])
             for n in sc.budgets for strategy in POOLED for scorer in sc.scorers}
    cells |= tree_cells(cfg, root, problems)
    ceilings = {n: {"pass": [exact_pass_one(list(g.gold), n) for g in graded_pool],
                    "judge": [exact_pass_one(list(g.valid), n) for g in graded_pool]} for n in sc.budgets}
    difficulty = np.array(read_rows(root / "difficulty" / "difficulty.jsonl")[0]["pass1"], float)
    if difficulty.shape != (len(problems),):
        raise ValueError(f"{root / 'difficulty'}: {difficulty.size} problems, expected {len(problems)}")
    return Seed(cells, {scorer: bon_curves(groups, graded_pool, scorer) for scorer in sc.scorers},
                np.array([np.mean([x["tokens"] + x["prm_tokens"] for x in s]) for s in groups]), difficulty,
                ceilings, pool_auroc(groups, graded_pool))


def bin_of(difficulty: np.ndarray, edges) -> np.ndarray:
    """Each problem's difficulty bin (0 hard, 1 medium, 2 easy) by its pass@1 against the two ``edges``.

    >>> bin_of(np.array([0.0, 0.2, 0.5, 0.9]), (0.2, 0.6)).tolist()
    [0, 1, 1, 2]
    """
    return np.searchsorted(np.asarray(edges, float), difficulty, side="right")


def pooled_ci(values: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict:
    """Mean of ``values`` (pooled over seeds and problems) with a 95% bootstrap interval over them."""
    x = np.asarray(values, float)
    if not x.size:
        return {"mean": float("nan"), "ci95": [float("nan"), float("nan")], "count": 0}
    rng = np.random.default_rng(seed)
    boots = x[rng.integers(0, x.size, (n_boot, x.size))].mean(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"mean": float(x.mean()), "ci95": [float(lo), float(hi)], "count": int(x.size)}


def exploitation(gold: np.ndarray, valid: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict:
    """Of the right answers picked, the share reached through a wrong step (a valid pick is always right), with a
    95% bootstrap interval over the picks (problems of every seed, pooled).

    >>> exploitation(np.array([1.0, 1.0, 0.0, 0.5]), np.array([1.0, 0.0, 0.0, 0.5]))["mean"]
    0.4
    """
    g, v = np.asarray(gold, float).ravel(), np.asarray(valid, float).ravel()
    if not g.sum():
        return {"mean": float("nan"), "ci95": [float("nan"), float("nan")]}
    idx = np.random.default_rng(seed).integers(0, g.size, (n_boot, g.size))
    num, den = (g - v)[idx].sum(axis=1), g[idx].sum(axis=1)
    boots = num[den > 0] / den[den > 0]
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"mean": float((g - v).sum() / g.sum()), "ci95": [float(lo), float(hi)]}


def matched(key, seeds: list[Seed]) -> dict:
    """A tree search against best-of-N at its own tokens per problem, per seed: N*, whether it was capped, and the
    per-problem best-of-N gold and validity there, (seeds, problems, 2)."""
    scorer = key[1]
    n_star, at = [], []
    for s in seeds:
        curves = s.curves[scorer]
        n_star.append(float(s.cells[key][:, 2:].sum(axis=1).mean() / s.sample_cost.mean()))
        at.append(np.stack([at_compute(curves["gold"], n_star[-1]), at_compute(curves["valid"], n_star[-1])], -1))
    pool = seeds[0].curves[scorer]["gold"].shape[1]
    return {"n_star": n_star, "capped": any(x > pool for x in n_star), "values": np.stack(at)}


def differences(x: np.ndarray, base: np.ndarray, which: np.ndarray) -> dict:
    """Paired differences of gold and validity from ``base`` (seeds, problems, 2+), overall and per difficulty bin."""
    from prmkit.lab.study.core import mean_ci

    d = x[..., :2] - base[..., :2]
    return {"gold": mean_ci(d[..., 0]), "valid": mean_ci(d[..., 1]),
            "bins": {name: {"gold": pooled_ci(d[..., 0][which == k]), "valid": pooled_ci(d[..., 1][which == k])}
                     for k, name in enumerate(BINS)}}


def cell_summary(key, seeds: list[Seed], which: np.ndarray) -> dict:
    """A strategy's numbers over seeds: answer and valid-solution accuracy, cost, exploitation, its differences from
    best-of-N with the same scorer at the same N and (tree searches) at the same compute, each per difficulty bin."""
    from prmkit.lab.study.core import mean_ci

    strategy, scorer, n = key
    x = np.stack([s.cells[key] for s in seeds])  # (seeds, problems, COLUMNS)
    out = {"strategy": strategy, "scorer": scorer, "n": n, "gold": mean_ci(x[..., 0]), "valid": mean_ci(x[..., 1]),
           "cost": float(x[..., 2:].sum(axis=-1).mean()), "generated_tokens": float(x[..., 2].mean()),
           "prm_tokens": float(x[..., 3].mean()), "exploitation": exploitation(x[..., 0], x[..., 1]),
           "bins": {name: {"problems": int((which == k).sum()), "gold": pooled_ci(x[..., 0][which == k]),
                           "valid": pooled_ci(x[..., 1][which == k])} for k, name in enumerate(BINS)},
           "vs_best_of_n": differences(x, np.stack([s.cells["best_of_n", scorer, n] for s in seeds]), which)}
    if strategy not in POOLED:
        m = matched(key, seeds)
        out["vs_best_of_n_compute"] = {"n_star": m["n_star"], "capped": m["capped"],
                                       **differences(x, m["values"], which)}
    return out


def summarise(cfg, seeds: list[int], root) -> dict:
    """Every number of the study (see the module docstring)."""
    from prmkit.lab.study.core import mean_ci
    from prmkit.lab.study.protocol import job_seconds

    sc, root = cfg.search, Path(root)
    per_seed = [seed_numbers(cfg, root / f"seed-{s}") for s in seeds]
    which = np.stack([bin_of(s.difficulty, sc.difficulty) for s in per_seed])
    cells = [cell_summary(key, per_seed, which) for key in per_seed[0].cells]
    ceilings = [{"n": n, "pass": mean_ci(np.array([s.ceilings[n]["pass"] for s in per_seed])),
                 "judge": mean_ci(np.array([s.ceilings[n]["judge"] for s in per_seed]))} for n in sc.budgets]
    counts = np.bincount(which.ravel(), minlength=len(BINS))
    return {"seeds": list(seeds), "problems": sc.problems, "budgets": list(sc.budgets), "m": sc.m,
            "scorers": list(sc.scorers), "strategies": [*POOLED, *sc.strategies], "policy": cfg.policy,
            "pool": max(sc.budgets), "difficulty": {"edges": list(sc.difficulty), "samples": sc.difficulty_samples,
                                                    "bins": dict(zip(BINS, (int(c) for c in counts)))},
            "policy_pass1": mean_ci(np.stack([s.difficulty for s in per_seed])),
            "prm_step_auroc": [s.prm_step_auroc for s in per_seed], "cells": cells, "ceilings": ceilings,
            "job_seconds": job_seconds(root), "config": dataclasses.asdict(sc)}


__all__ = ["BINS", "COLUMNS", "POOLED", "Graded", "Seed", "at_compute", "bin_of", "block_picks", "bon_curves",
           "candidates", "cell_summary", "differences", "exploitation", "graded", "matched", "pool_auroc",
           "pool_groups", "pooled_ci", "read_problems", "read_rows", "seed_numbers", "summarise", "tree_cells",
           "tree_name"]
