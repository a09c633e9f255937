"""The search study's numbers, read back from its jobs' outputs (:mod:`prmkit.lab.study.search`).

Every pick is graded by the lab's oracle: *answer accuracy* (the picked solution's final answer is right) and
*valid-solution accuracy* (it answers and every step is valid). Best-of-N and weighted best-of-N at budget N
are read from the pool of ``max(budgets)`` samples per problem: the pool is cut into ``max / N`` disjoint
subsets of N samples (each N independent samples), the final pick (:func:`prmkit.search.strategies.pick`, the
one ``prmkit search`` makes) is made in each, and the problem's value is their mean. A pick's cost is the
tokens generated for its samples plus the tokens the PRM read (the oracle's arm is charged what the PRM would
have read). Intervals: 95%, bootstrap over seeds then problems (:func:`~prmkit.lab.study.core.mean_ci`);
differences are paired by problem.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

POOLED = ("best_of_n", "weighted")
"""Strategies read from the pool (whole samples)."""
BINS = ("hard", "medium", "easy")


def tree_name(strategy: str, scorer: str, n: int) -> str:
    """A tree search's job folder."""
    return f"{strategy}-{scorer}-{n}"


def read_rows(path) -> list[dict]:
    from prmkit.io import read_records

    return list(read_records(path, lambda value, _: value))


def graded(problems, step_lists) -> tuple[np.ndarray, np.ndarray, list[list[float]]]:
    """The oracle's answer grade, validity and 0/1 step truth of each solution."""
    from prmkit.lab.study.pressure_measure import oracle_rows

    rows = oracle_rows(problems, step_lists)
    return (np.array([r["gold"] for r in rows], bool), np.array([r["valid"] for r in rows], bool),
            [[1.0 if x >= 0 else 0.0 for x in r["ratings"]] for r in rows])


def block_picks(samples: list[dict], truth: list[list[float]], gold, valid, n: int, strategy: str,
                scorer: str) -> tuple[float, float, float, float]:
    """One problem's pool (``samples`` with their oracle ``truth``, ``gold`` and ``valid``): the mean over its
    disjoint subsets of ``n`` of the pick's gold and validity, and of a subset's generated and PRM tokens."""
    from prmkit.search.core import Candidate
    from prmkit.search.strategies import SearchConfig, pick

    cfg = SearchConfig(strategy=strategy, n=n)
    picks = []
    for start in range(0, len(samples) - n + 1, n):
        block = range(start, start + n)
        cands = [Candidate(samples[i]["steps"], samples[i]["scores"] if scorer == "prm" else truth[i], True, id=i)
                 for i in block]
        chosen = pick(cands, cfg)
        picks.append((gold[chosen.id], valid[chosen.id], sum(samples[i]["tokens"] for i in block),
                      sum(samples[i]["prm_tokens"] for i in block)))
    return tuple(float(x) for x in np.array(picks, float).mean(axis=0))


def seed_cells(cfg, root: Path) -> tuple[dict, np.ndarray, dict, dict]:
    """One seed: per ``(strategy, scorer, n)`` the per-problem gold, validity and cost; each problem's pass@1 in
    the pool; per n the pool's pass@N and step-judge limit per problem (exact); the PRM's step AUROC on the pool."""
    from prmkit.evaluate.bon import exact_pass_one
    from prmkit.evaluate.steps import auroc
    from prmkit.lab.study.search import read_problems_file

    sc = cfg.search
    problems = read_problems_file(root / "problems" / "problems.jsonl")
    rows = read_rows(root / "pool" / "pool.jsonl.gz")
    by_problem = [[r for r in rows if r["problem"] == p] for p in range(len(problems))]
    cells: dict = {}
    difficulty, ceilings = np.zeros(len(problems)), {n: {"pass": [], "judge": []} for n in sc.budgets}
    step_scores, step_truth = [], []
    for p, (problem, samples) in enumerate(zip(problems, by_problem)):
        gold, valid, truth = graded([problem] * len(samples), [s["steps"] for s in samples])
        difficulty[p] = gold.mean()
        for s, t in zip(samples, truth):
            k = min(len(s["scores"]), len(t))
            step_scores.extend(s["scores"][:k])
            step_truth.extend(t[:k])
        for n in sc.budgets:
            ceilings[n]["pass"].append(exact_pass_one(list(gold), n))
            ceilings[n]["judge"].append(exact_pass_one(list(valid), n))
            for strategy in POOLED:
                for scorer in sc.scorers:
                    cells.setdefault((strategy, scorer, n), []).append(
                        block_picks(samples, truth, gold, valid, n, strategy, scorer))
    for strategy in sc.strategies:
        for scorer in sc.scorers:
            for n in sc.budgets:
                results = read_rows(root / tree_name(strategy, scorer, n) / "results.jsonl.gz")
                steps = [(r["chosen"] or {}).get("steps") or [] for r in results]
                gold, valid, _ = graded(problems, steps)
                cells[strategy, scorer, n] = [(g, v, r["cost"]["generated_tokens"], r["cost"]["prm_tokens"])
                                              for g, v, r in zip(gold.astype(float), valid.astype(float), results)]
    y = np.asarray(step_truth)
    prm_auroc = float(auroc(np.asarray(step_scores), y)) if y.size and y.min() != y.max() else float("nan")
    arrays = {key: np.array(v, float) for key, v in cells.items()}  # (problems, 4): gold, valid, tokens, PRM tokens
    return arrays, difficulty, ceilings, {"prm_step_auroc": prm_auroc, "pass1": float(difficulty.mean())}


def bin_of(difficulty: np.ndarray, edges) -> np.ndarray:
    """Each problem's difficulty bin (0 hard, 1 medium, 2 easy) by its pass@1 against ``edges``.

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


def exploitation(gold: np.ndarray, valid: np.ndarray) -> float:
    """Of the right answers picked, the share reached through a wrong step (a valid pick is always right).

    >>> exploitation(np.array([1.0, 1.0, 0.0, 0.5]), np.array([1.0, 0.0, 0.0, 0.5]))
    0.4
    """
    return float((gold - valid).sum() / gold.sum()) if gold.sum() else float("nan")


def cell_summary(key, per_seed: list[np.ndarray], bon: list[np.ndarray], bins: list[np.ndarray]) -> dict:
    """A strategy's numbers over seeds: answer and valid-solution accuracy, cost, exploitation, the paired
    difference from best-of-N with the same scorer and budget, and all of it per difficulty bin."""
    from prmkit.lab.study.core import mean_ci

    strategy, scorer, n = key
    x, b, which = np.stack(per_seed), np.stack(bon), np.stack(bins)  # (seeds, problems, 4), (seeds, problems)
    out = {"strategy": strategy, "scorer": scorer, "n": n,
           "gold": mean_ci(x[..., 0]), "valid": mean_ci(x[..., 1]), "cost": float(x[..., 2:].sum(axis=-1).mean()),
           "generated_tokens": float(x[..., 2].mean()), "prm_tokens": float(x[..., 3].mean()),
           "exploitation": exploitation(x[..., 0].ravel(), x[..., 1].ravel()),
           "vs_best_of_n": {"gold": mean_ci(x[..., 0] - b[..., 0]), "valid": mean_ci(x[..., 1] - b[..., 1])},
           "bins": {}}
    for k, name in enumerate(BINS):
        mask = which == k
        out["bins"][name] = {"problems": int(mask.sum()), "gold": pooled_ci(x[..., 0][mask]),
                             "valid": pooled_ci(x[..., 1][mask]),
                             "vs_best_of_n_gold": pooled_ci((x[..., 0] - b[..., 0])[mask]),
                             "vs_best_of_n_valid": pooled_ci((x[..., 1] - b[..., 1])[mask])}
    return out


def summarise(cfg, seeds: list[int], root) -> dict:
    """Every number of the study (see the module docstring)."""
    from prmkit.lab.study.core import mean_ci
    from prmkit.lab.study.protocol import job_seconds

    sc, root = cfg.search, Path(root)
    per_seed = [seed_cells(cfg, root / f"seed-{s}") for s in seeds]
    bins = [bin_of(d, sc.difficulty) for _, d, _, _ in per_seed]
    keys = list(per_seed[0][0])
    cells = [cell_summary(key, [c[key] for c, _, _, _ in per_seed],
                          [c["best_of_n", key[1], key[2]] for c, _, _, _ in per_seed], bins) for key in keys]
    ceilings = [{"n": n, "pass": mean_ci(np.array([c[n]["pass"] for _, _, c, _ in per_seed])),
                 "judge": mean_ci(np.array([c[n]["judge"] for _, _, c, _ in per_seed]))} for n in sc.budgets]
    counts = np.bincount(np.concatenate(bins), minlength=len(BINS))
    return {"seeds": list(seeds), "problems": sc.problems, "budgets": list(sc.budgets), "m": sc.m,
            "scorers": list(sc.scorers), "strategies": [*POOLED, *sc.strategies], "policy": cfg.policy,
            "difficulty": {"edges": list(sc.difficulty), "bins": dict(zip(BINS, (int(c) for c in counts)))},
            "policy_pass1": mean_ci(np.stack([d for _, d, _, _ in per_seed])),
            "prm_step_auroc": [extra["prm_step_auroc"] for _, _, _, extra in per_seed],
            "cells": cells, "ceilings": ceilings,
            "job_seconds": job_seconds(root), "config": dataclasses.asdict(sc)}


__all__ = ["BINS", "POOLED", "bin_of", "block_picks", "cell_summary", "exploitation", "graded", "pooled_ci",
           "seed_cells", "summarise", "tree_name"]
