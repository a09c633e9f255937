"""What the lab's studies share: jobs that train and score reward models, best-of-N per problem, slope fits.

The maths is pure and property-tested (``tests/test_lab_study_core.py``):

- :func:`bon_per_problem`: exact best-of-N expectation of each problem from step probabilities, the
  estimator of :mod:`prmkit.evaluate.bon` (ties split, answerless samples never right);
- :func:`log_fit`: least squares of accuracy against ``log(labels)``, the paper's best-fit line;
- :func:`slope_ratio`: the paper's data-efficiency factor, the ratio of two such slopes, with a 95%
  bootstrap interval that resamples seeds and, within each seed, held-out problems (the same problems
  for every budget and both arms, so the comparison stays paired).

The jobs and the driver that runs every study: :mod:`prmkit.lab.study.protocol`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from prmkit.lab.rm import solution_column, step_probabilities

AGGREGATION = "min"
"""The solution score every study ranks by: the lab's PRM score chosen before any run (``docs/lab.md``)."""


def solution_scores(probs: list[np.ndarray], how: str = AGGREGATION) -> np.ndarray:
    """One score per solution from ``[steps, 2]`` (positive, negative) probabilities; -inf for no steps.

    >>> solution_scores([np.array([[0.9, 0.1], [0.6, 0.4]]), np.zeros((0, 2))]).tolist()
    [0.6, -inf]
    """
    from prmkit.evaluate.aggregate import aggregate

    return np.array([aggregate(p[:, 0], how) if len(p) else -np.inf for p in probs], dtype=float)


def with_rm_steps(cfg, steps: int):
    """``cfg`` whose reward models train ``steps`` optimiser steps; 0 keeps ``cfg.rm.max_steps`` (a study's override)."""
    return cfg.replace({"rm.max_steps": steps}) if steps else cfg


def with_passes(cfg, passes: float, labels: int):
    """``cfg`` whose reward model of ``labels`` solutions may train ``passes`` passes over them: its
    ``rm.max_steps`` raised to ``ceil(passes x labels / rm.batch_size)`` where that is more (0: as it is). It
    raises a cap: with early stopping a model may end sooner; without it, it trains the raised number. Passes are
    counted over all ``labels``, a held-out share included. A study whose budgets span a wide range keeps the
    largest from being cut short by a cap set for the smallest (the lab run's 600 steps of 32 are 9.6 passes over
    its 2,000 labels, 2.4 over 8,000, where the search study's PRM was still improving: docs/search.md).

    >>> from prmkit.lab.config import preset
    >>> cfg = preset("default")
    >>> [with_passes(cfg, p, n).rm.max_steps for p, n in ((0, 8000), (10, 500), (10, 8000))]
    [600, 600, 2500]
    """
    return with_rm_steps(cfg, max(cfg.rm.max_steps, math.ceil(passes * labels / cfg.rm.batch_size)))


def labels_recipe(cfg, passes: float, labels: int):
    """The recipe a study's reward model of ``labels`` solutions trains by: ``cfg.rm``, its cap raised to ``passes``
    passes over them (:func:`with_passes`), then raised as the lab run raises an early-stopped recipe
    (:func:`prmkit.lab.arms.recipe_for`: a floor of one pass; a recipe without early stopping is left as it is).

    >>> from prmkit.lab.study.config import study_preset
    >>> [labels_recipe(study_preset("active", rm_protocol=p), 8, 8000).max_steps for p in ("study", "lab")]
    [2000, 2000]
    """
    from prmkit.lab.arms import recipe_for

    return recipe_for(with_passes(cfg, passes, labels).rm, labels)


def expected_steps(rm) -> float:
    """The optimiser steps ``--plan`` expects a recipe to train: its cap, or under early stopping the first step it
    may stop at (the floor, then ``patience`` evaluations without a better one), where that comes first: the budget
    study's development models of 8,000 labels stopped near their floor, far below the cap that passes raised."""
    if rm.early_stop_patience <= 0:
        return float(rm.max_steps)
    return float(min(rm.max_steps, rm.early_stop_min_steps + rm.early_stop_patience * rm.eval_every))


RM_PROTOCOL_FIELDS = ("max_steps", "batch_size", "lr", "new_lr", "restarts", "eval_fraction", "eval_every",
                      "early_stop_patience", "early_stop_min_steps")
"""What a study's summary records of how its reward models train (``summary["rm"]``: the recipe, not the data)."""


def rm_protocol(rm) -> dict:
    """The fields of a reward-model recipe (``cfg.rm``) that say how it trains: its steps, learning rates,
    restarts and early stopping (:data:`RM_PROTOCOL_FIELDS`), for a summary and the pages that describe it."""
    return {name: getattr(rm, name) for name in RM_PROTOCOL_FIELDS}


def with_restarts(cfg, steps: int, restarts: int):
    """``cfg`` whose reward models train ``steps`` optimiser steps (:func:`with_rm_steps`), ``restarts`` times with
    the best kept on a held-out tenth of their own labels (:mod:`prmkit.train.restarts`): a study's guard
    against a run stalled at the class prior, chosen without the oracle."""
    cfg = with_rm_steps(cfg, steps)
    held_out = restarts > 1 or cfg.rm.early_stop_patience > 0  # early stopping watches the held-out split too
    return cfg.replace({"rm.restarts": restarts, "rm.eval_fraction": 0.1 if held_out else 0.0})


def labelled_pool(cfg, seed: int, problems: int, samples: int, salt: int, device: str = "auto") -> list:
    """``problems x samples`` of the policy's solutions of train-split problems, shuffled (by ``[seed, salt]``: a
    study's own order) and rated by the simulated labellers: what a study's reward models learn from."""
    from prmkit.lab.labellers import label
    from prmkit.lab.pools import generate_pool

    pool = generate_pool(cfg, seed, "train", problems, samples, device=device)
    pool = [pool[i] for i in np.random.default_rng([seed, salt]).permutation(len(pool))]
    return label(pool, cfg.labellers, seed)


def grouped(solutions) -> list[list[int]]:
    """Indices of ``solutions`` grouped by problem id, in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(solutions):
        groups.setdefault(s.problem.id or s.problem.problem, []).append(i)
    return list(groups.values())


def bon_per_problem(solutions, scores: np.ndarray, n: int) -> np.ndarray:
    """Exact best-of-``n`` accuracy of every problem (in :func:`grouped` order), ranking by ``scores``.

    As everywhere in :mod:`prmkit.evaluate`, problems are padded with empty slots to the largest
    problem's pool (the released protocol); the lab's pools have equal sizes, so this only matters for
    a pool with missing samples. ``n`` is capped at that size.
    """
    from prmkit.evaluate.bon import exact_bon
    from prmkit.evaluate.pool import pool_from_lists

    groups = grouped(solutions)
    answers = [[solutions[i].answer for i in g] for g in groups]
    correct = [[solutions[i].grade == "correct" for i in g] for g in groups]
    score = [[float(scores[i]) for i in g] for g in groups]
    pool = pool_from_lists(answers, correct, {"s": score}, answer_key="exact")
    m = int(pool.sizes.max())
    return exact_bon(pool, "s", [min(n, m)])[:, 0]  # (problems, ns): the column of this n, one value per problem


def ceilings_per_problem(solutions, n: int) -> dict[str, np.ndarray]:
    """The most any scorer could reach at best-of-``n`` on each problem (in :func:`grouped` order), exactly:
    ``pass`` (pass@n: an outcome judge picks a right answer if the subset has one) and ``step_judge`` (the step-judge
    limit: a perfect step judge picks an answered sample whose every step the oracle finds valid, if there is one).
    ``n`` is capped at the largest problem's pool, as in :func:`bon_per_problem`."""
    from prmkit.evaluate.bon import exact_pass
    from prmkit.evaluate.pool import pool_from_lists
    from prmkit.lab.domains import oracle_labels

    groups = grouped(solutions)
    pool = pool_from_lists([[solutions[i].answer for i in g] for g in groups],
                           [[solutions[i].grade == "correct" for i in g] for g in groups], answer_key="exact",
                           valid=[[all(x.rating != -1 for x in oracle_labels(solutions[i])) for i in g] for g in groups])
    n = min(n, int(pool.sizes.max()))
    return {"pass": exact_pass(pool, [n])[:, 0], "step_judge": exact_pass(pool, [n], good=pool.valid)[:, 0]}


def log_fit(labels, accuracy) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line ``accuracy = intercept + slope * ln(labels)``.

    >>> s, c = log_fit([10, 100, 1000], [0.2, 0.4, 0.6])
    >>> round(float(s * np.log(10)), 6), round(float(c + s * np.log(10)), 6)
    (0.2, 0.2)
    """
    x = np.log(np.asarray(labels, dtype=float))
    y = np.asarray(accuracy, dtype=float)
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError("a slope needs at least two distinct label counts")
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def slope_ratio(labels, arm: np.ndarray, baseline: np.ndarray, n_boot: int = 2000, seed: int = 0,
                baseline_labels=None) -> dict:
    """The data-efficiency factor ``slope(arm) / slope(baseline)`` of accuracy against ``ln(labels)``.

    ``arm`` and ``baseline`` are ``[seeds, budgets, problems]`` per-problem accuracies (problems paired
    across budgets and arms within a seed); ``baseline_labels`` are the baseline's label counts when they
    differ from the arm's ``labels`` (an arm charged for extra labels sits elsewhere on the x axis). The
    point estimate fits the seed- and problem-mean curves; the 95% interval comes from ``n_boot``
    resamples of seeds and, within each, of problems (the same for both arms). A baseline slope at or
    below zero has no meaningful ratio: such resamples count as infinite (their share is reported).
    """
    arm, baseline = np.asarray(arm, float), np.asarray(baseline, float)
    baseline_labels = labels if baseline_labels is None else baseline_labels
    if (arm.ndim != 3 or baseline.ndim != 3 or arm.shape[0] != baseline.shape[0] or arm.shape[2] != baseline.shape[2]
            or arm.shape[1] != len(labels) or baseline.shape[1] != len(baseline_labels)):
        raise ValueError(f"arm and baseline must both be [seeds, budgets, problems] with {len(labels)} and "
                         f"{len(baseline_labels)} budgets, got {arm.shape} and {baseline.shape}")

    def ratio(a_curve, b_curve) -> float:
        sa, sb = log_fit(labels, a_curve)[0], log_fit(baseline_labels, b_curve)[0]
        return sa / sb if sb > 1e-12 else np.inf  # a flat baseline fits a slope of ~1e-17, not 0

    point = ratio(arm.mean(axis=(0, 2)), baseline.mean(axis=(0, 2)))
    rng = np.random.default_rng(seed)
    n_seeds, _, n_problems = arm.shape
    boots = np.empty(n_boot)
    for b in range(n_boot):
        seeds = rng.integers(0, n_seeds, n_seeds)
        probs = rng.integers(0, n_problems, (n_seeds, n_problems))
        a = np.mean([arm[s][:, p] for s, p in zip(seeds, probs)], axis=(0, 2))
        c = np.mean([baseline[s][:, p] for s, p in zip(seeds, probs)], axis=(0, 2))
        boots[b] = ratio(a, c)
    lo, hi = np.quantile(boots, [0.025, 0.975], method="inverted_cdf")  # no interpolation: inf may be a bound
    per_seed = [ratio(arm[s].mean(axis=1), baseline[s].mean(axis=1)) for s in range(n_seeds)]
    return {"factor": point, "ci95": [float(lo), float(hi)], "per_seed": [float(x) for x in per_seed],
            "slope_arm": log_fit(labels, arm.mean(axis=(0, 2)))[0],
            "slope_baseline": log_fit(baseline_labels, baseline.mean(axis=(0, 2)))[0],
            "non_positive_baseline_share": float(np.mean(~np.isfinite(boots))), "n_boot": n_boot}


def mean_ci(per_seed_problem, n_boot: int = 2000, seed: int = 0) -> dict:
    """Mean accuracy over ``[seeds, problems]`` with a 95% interval resampling seeds, then problems."""
    x = np.asarray(per_seed_problem, float)
    rng = np.random.default_rng(seed)
    n_seeds, n_problems = x.shape
    boots = np.empty(n_boot)
    for b in range(n_boot):
        seeds = rng.integers(0, n_seeds, n_seeds)
        boots[b] = np.mean([x[s, rng.integers(0, n_problems, n_problems)].mean() for s in seeds])
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"mean": float(x.mean()), "ci95": [float(lo), float(hi)], "per_seed": [float(v) for v in x.mean(axis=1)]}


def step_auroc(solutions, probs: list[np.ndarray]) -> float:
    """AUROC of P(step correct) against the oracle (+1 and 0 correct, -1 wrong), over every scored step."""
    from prmkit.evaluate.steps import auroc
    from prmkit.lab.domains import oracle_labels

    scores, truth = [], []
    for sol, p in zip(solutions, probs):
        for row, lab in zip(p, oracle_labels(sol)):
            scores.append(row[0])
            truth.append(int(lab.rating >= 0))
    y = np.asarray(truth)
    return float(auroc(np.asarray(scores), y)) if y.size and y.min() != y.max() else float("nan")


# --- pages -----------------------------------------------------------------------------------------------

def write_study_pages(out: Path, title: str, section: str, cfg, timings: dict, command: str) -> None:
    """``out/section.html`` (the fragment the lab report includes) and the standalone ``out/report.html``:
    the section, the command that reproduces it, wall time per stage and the configuration."""
    import dataclasses

    from markupsafe import Markup

    from prmkit.evaluate.html import page
    from prmkit.io import atomic_output
    from prmkit.lab.report import timings_table

    with atomic_output(out / "section.html") as f:
        f.write(section + "\n")
    text = page(title, [Markup(section), Markup("<h2>Wall time per stage</h2>"), timings_table(timings)],
                command=command or "", config=json.dumps(dataclasses.asdict(cfg), indent=2, default=str))
    with atomic_output(out / "report.html") as f:
        f.write(text + "\n")


def write_study_outputs(root: Path, cfg, summary: dict, command: str, *, name: str, plot, section_html) -> None:
    """``figures/<name>.png`` (``plot(summary, path)``), ``section.html`` and the standalone ``report.html``: a
    study's ``write_pages`` with its three keywords bound (``functools.partial``)."""
    fig = plot(summary, root / "figures" / f"{name}.png")
    write_study_pages(root, f"prmkit lab study {name}: preset {cfg.name}", section_html(summary, Path(fig)), cfg,
                      summary["timings"], command)


__all__ = [
    "AGGREGATION",
    "bon_per_problem",
    "ceilings_per_problem",
    "expected_steps",
    "grouped",
    "labelled_pool",
    "labels_recipe",
    "log_fit",
    "mean_ci",
    "rm_protocol",
    "slope_ratio",
    "solution_column",
    "solution_scores",
    "step_auroc",
    "step_probabilities",
    "with_restarts",
    "with_rm_steps",
    "write_study_outputs",
    "write_study_pages",
]
