"""``prmkit lab study budget``: the label-budget curve of process against outcome supervision.

Per seed: ``max(budgets)`` solutions of the train split, shuffled, rated by the simulated labellers
(phase 2); a held-out pool of ``eval_problems x eval_samples``. For every budget ``B`` a PRM learns
from the first ``B`` phase-2 records and an ORM from the final-answer grades of the same ``B``
solutions (nested prefixes: the 250 labels are the first 250 of the 1,000), both with the same
``rm_steps`` optimiser steps (or a cap raised to ``rm_epochs`` passes over the budget's labels), and both
score the held-out pool. Best-of-N per problem at
``budget.n`` (PRM by its ``min`` step score, ORM by P(correct) at the last step, as
:mod:`prmkit.lab.scoring` scores them), majority voting at the same N as a flat reference.

Then the paper's method: accuracy against ``ln(labels)`` per kind, a least-squares line, and the
data-efficiency factor ``slope(PRM) / slope(ORM)`` with a bootstrap CI over seeds and problems
(:func:`prmkit.lab.study.core.slope_ratio`). The ratio of slopes answers "which curve climbs faster";
it is not "how many times fewer labels": when the PRM starts high and the ORM catches up, the ORM's
slope is the larger one although the PRM needs fewer labels everywhere. So the study also reports the
horizontal reading, :func:`equivalent_labels`: how many labels the ORM's fitted line needs to reach
the PRM's fitted accuracy at each budget, and that number over the budget.

Stages (jobs of :class:`prmkit.lab.run.Runner`, resumable): data, base (the cached lab base model),
rm (one job per seed x budget x kind: ``prmkit train``, then ``prmkit score`` of the held-out pool); then the statistics, figure and pages in this
process. Outputs: ``RUN_DIR/study-budget/`` (``summary.json``, ``section.html``, ``report.html``,
``figures/budget.png``, ``seed-S/`` job folders).
"""

from __future__ import annotations

import dataclasses
import functools
import html
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prmkit.lab.config import LabConfig
from prmkit.lab.numbers import interval, points, ratio, ratio_interval
from prmkit.lab.run import RM_VERSION
from prmkit.lab.study.core import (
    bon_per_problem,
    ceilings_per_problem,
    expected_steps,
    grouped,
    labels_recipe,
    log_fit,
    mean_ci,
    slope_ratio,
    with_passes,
    with_rm_steps,
    write_study_outputs,
)
from prmkit.lab.study.protocol import Base, Seeded, Study, sampler

KINDS = ("prm", "orm")
NAME = "budget"


# --- the statistics (pure) -----------------------------------------------------------------------------

def equivalent_labels(labels, prm_curve, orm_curve) -> list[float]:
    """Labels the ORM's fitted line needs to reach the PRM's fitted accuracy at each budget of ``labels``.

    Both curves are fitted as ``accuracy = c + s ln(labels)``; the answer at budget ``B`` is
    ``exp((c_prm + s_prm ln B - c_orm) / s_orm)``, an extrapolation where it falls outside ``labels``.
    An ORM slope at or below zero never gets there: infinity.

    >>> [round(x) for x in equivalent_labels([100, 1000], [0.5, 0.7], [0.3, 0.5])]
    [1000, 10000]
    """
    s_p, c_p = log_fit(labels, prm_curve)
    s_o, c_o = log_fit(labels, orm_curve)
    if s_o <= 1e-12:  # a flat curve fits a slope of ~1e-17, not 0
        return [math.inf] * len(labels)
    return [float(math.exp(min((c_p + s_p * math.log(b) - c_o) / s_o, 700.0))) for b in labels]


def resampled_factors(labels, prm: np.ndarray, orm: np.ndarray, reading, n_boot: int, seed: int):
    """``reading(labels, prm_curve, orm_curve)`` over each budget, of the seed- and problem-mean curves (the point),
    of ``n_boot`` bootstrap resamples (seeds, then problems within each seed: the resampling of ``slope_ratio``) and
    of each seed's curves: ``(point, boots [n_boot, budgets], per_seed)``, ``labels`` as floats."""
    prm, orm = np.asarray(prm, float), np.asarray(orm, float)

    def factors(p, o):
        return np.array(reading(labels, p, o)) / labels

    point = factors(prm.mean(axis=(0, 2)), orm.mean(axis=(0, 2)))
    rng = np.random.default_rng(seed)
    n_seeds, _, n_problems = prm.shape
    boots = np.empty((n_boot, len(labels)))
    for b in range(n_boot):
        seeds = rng.integers(0, n_seeds, n_seeds)
        picks = rng.integers(0, n_problems, (n_seeds, n_problems))
        boots[b] = factors(np.mean([prm[s][:, i] for s, i in zip(seeds, picks)], axis=(0, 2)),
                           np.mean([orm[s][:, i] for s, i in zip(seeds, picks)], axis=(0, 2)))
    return point, boots, [factors(prm[s].mean(axis=1), orm[s].mean(axis=1)) for s in range(n_seeds)]


def equivalence(labels, prm: np.ndarray, orm: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict:
    """:func:`equivalent_labels` of the seed- and problem-mean curves, each over its budget, with 95%
    bootstrap intervals (:func:`resampled_factors`).

    ``prm`` and ``orm`` are ``[seeds, budgets, problems]`` per-problem accuracies.
    """
    labels = [float(b) for b in labels]
    point, boots, per_seed = resampled_factors(labels, prm, orm, equivalent_labels, n_boot, seed)
    lo, hi = np.quantile(boots, [0.025, 0.975], axis=0, method="inverted_cdf")
    return {str(int(b)): {"orm_labels": float(point[j] * b), "factor": float(point[j]),
                          "ci95": [float(lo[j]), float(hi[j])], "per_seed": [float(x[j]) for x in per_seed],
                          "extrapolated": not min(labels) * (1 - 1e-9) <= point[j] * b <= max(labels) * (1 + 1e-9)}
            for j, b in enumerate(labels)}


def matched_labels(labels, prm_curve, orm_curve) -> list[float]:
    """Labels at which the ORM's *measured* curve first reaches the PRM's measured accuracy at each budget of
    ``labels``: the curves read between budgets by straight lines in ``ln(labels)``, no fitted line. Where the ORM
    is already there at the smallest budget the answer is that budget (an upper bound); where it never gets
    there within the budgets, infinity (more labels than were tried).

    >>> [round(x, 6) for x in matched_labels([100, 1000, 10000], [0.5, 0.6, 0.7], [0.4, 0.5, 0.6])]
    [1000.0, 10000.0, inf]
    >>> matched_labels([100, 1000], [0.5, 0.6], [0.55, 0.58])
    [100.0, inf]
    """
    x = np.log(np.asarray(labels, float))
    orm = np.asarray(orm_curve, float)
    out = []
    for target in np.asarray(prm_curve, float):
        if orm[0] >= target:
            out.append(float(labels[0]))
            continue
        reached = math.inf
        for j in range(1, len(orm)):
            if orm[j] >= target:  # orm[j - 1] < target: the crossing lies on this segment
                share = (target - orm[j - 1]) / (orm[j] - orm[j - 1])
                reached = float(math.exp(x[j - 1] + share * (x[j] - x[j - 1])))
                break
        out.append(reached)
    return out


def matched(labels, prm: np.ndarray, orm: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict:
    """:func:`matched_labels` of the seed- and problem-mean curves, over each budget (the factor: how many times
    the PRM's labels the ORM needs for its accuracy), with 95% bootstrap intervals (seeds, then problems within
    each seed: :func:`resampled_factors`). ``censored``: ``below`` where the ORM matched at the smallest budget
    already (the factor is at most that), ``above`` where it never matched (more than the largest over the budget).
    """
    prm = np.asarray(prm, float)
    labels = [float(b) for b in labels]
    point, boots, per_seed = resampled_factors(labels, prm, orm, matched_labels, n_boot, seed)
    lo, hi = np.quantile(boots, [0.025, 0.975], axis=0, method="inverted_cdf")
    floor = np.array([labels[0] / b for b in labels]) * (1 + 1e-9)  # a factor at it: matched at the smallest budget
    below, above = (boots <= floor).mean(axis=0), (~np.isfinite(boots)).mean(axis=0)

    def censor(x: float, j: int) -> str:
        return "above" if not math.isfinite(x) else "below" if x <= floor[j] else ""

    return {str(int(b)): {"prm_accuracy": float(prm[:, j].mean()), "orm_labels": float(point[j] * b),
                          "factor": float(point[j]), "ci95": [float(lo[j]), float(hi[j])],
                          "per_seed": [float(x[j]) for x in per_seed], "censored": censor(point[j], j),
                          "per_seed_censored": [censor(x[j], j) for x in per_seed],
                          "censored_share": {"below": float(below[j]), "above": float(above[j])}}
            for j, b in enumerate(labels)}


def curve_stats(labels, acc: dict[str, np.ndarray], n_boot: int, seed: int = 0) -> dict:
    """Every number of the study from ``acc`` (``prm``, ``orm``, ``majority``: ``[seeds, budgets, problems]``).

    Accuracy per kind and budget with CIs, the PRM - ORM gap per budget (paired: the same problems),
    the fitted lines (pooled and per seed), the slope ratio and the equivalent labels.
    """
    out = {"accuracy": {k: {str(b): mean_ci(a[:, j], n_boot, seed) for j, b in enumerate(labels)}
                        for k, a in acc.items()},
           "gap_prm_orm": {str(b): mean_ci(acc["prm"][:, j] - acc["orm"][:, j], n_boot, seed)
                           for j, b in enumerate(labels)},
           "fit": {}}
    for k in KINDS:
        slope, intercept = log_fit(labels, acc[k].mean(axis=(0, 2)))
        per_seed = [log_fit(labels, acc[k][s].mean(axis=1))[0] for s in range(acc[k].shape[0])]
        out["fit"][k] = {"slope": slope, "intercept": intercept, "points_per_doubling": 100 * slope * math.log(2),
                         "per_seed_slope": per_seed}
    # the curve's ends, as the rule for the spanning curve reads them (docs/study-budget.md): each kind's lead over
    # majority voting at every budget (the bottom: a kind not above it), and its gain over the last step (the top)
    out["over_majority"] = {k: {str(b): mean_ci(acc[k][:, j] - acc["majority"][:, j], n_boot, seed)
                                for j, b in enumerate(labels)} for k in KINDS}
    out["top_gain"] = {k: mean_ci(acc[k][:, -1] - acc[k][:, -2], n_boot, seed) for k in KINDS}
    out["efficiency"] = slope_ratio(labels, acc["prm"], acc["orm"], n_boot, seed)
    out["equivalent_labels"] = equivalence(labels, acc["prm"], acc["orm"], n_boot, seed)
    out["matched_labels"] = matched(labels, acc["prm"], acc["orm"], n_boot, seed)
    prm_means = [out["accuracy"]["prm"][str(b)]["mean"] for b in labels]
    out["direction"] = {"prm_rises": prm_means[-1] > prm_means[0],
                        "prm_ge_orm_at_smallest": out["gap_prm_orm"][str(labels[0])]["mean"] >= 0,
                        "prm_ge_orm_every_budget": all(out["gap_prm_orm"][str(b)]["mean"] >= 0 for b in labels)}
    return out


# --- jobs ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Data(Seeded):
    """The shuffled train pool of ``max(budgets)`` solutions, its phase-2 labels, and the held-out pool
    (sampled by ``base`` under the ``lm`` policy, its pools being its base's samples)."""

    base: Base | None = None
    reads = ("domain", "generator", "policy", "labellers", "budget.budgets", "budget.samples_per_problem",
             "budget.eval_problems", "budget.eval_samples")

    def run(self, out: Path) -> dict:
        from prmkit.io import write_records
        from prmkit.lab.labellers import label
        from prmkit.lab.pools import generate_pool

        cfg, seed, b, device = self.cfg, self.seed, self.cfg.budget, self.device
        size = max(b.budgets)
        pool = generate_pool(cfg, seed, "train", math.ceil(size / b.samples_per_problem), b.samples_per_problem,
                             device=device)
        order = np.random.default_rng([seed, 7]).permutation(len(pool))[:size]  # spread small budgets over problems
        train = [pool[i] for i in order]
        write_records(out / "train.jsonl.gz", train)
        labelled = label(train, cfg.labellers, seed)
        write_records(out / "labelled.jsonl.gz", labelled)
        held_out = generate_pool(cfg, seed, "eval", b.eval_problems, b.eval_samples, device=device)
        write_records(out / "eval.jsonl.gz", held_out)
        return {"labelled": len(labelled), "train_problems": len({s.problem.id for s in train}), "eval": len(held_out)}


@dataclass(frozen=True)
class RewardModel(Seeded):
    """A PRM or ORM of the first ``budget`` labels (:func:`prmkit.lab.run.job_rm`), scoring the held-out pool."""

    kind: str = "prm"
    budget: int = 0
    base: Base = None
    data: Data = None
    reads = ("rm", "labelled")

    version = RM_VERSION

    @property
    def work(self) -> float:
        """The optimiser steps ``--plan`` expects it to train (:func:`~prmkit.lab.study.core.expected_steps`; its
        config's cap is already raised by passes over its labels)."""
        return expected_steps(labels_recipe(self.cfg, 0, self.budget))

    def run(self, out: Path) -> dict:
        from prmkit.lab.run import job_rm

        return job_rm(out, self.kind, self.budget, self.cfg, self.seed, self.base.model_dir, self.data.folder,
                      self.progress, ("eval",), self.device)


def study_config(cfg: LabConfig) -> LabConfig:
    """``cfg`` with ``rm.max_steps`` set to ``budget.rm_steps`` (when not 0): what every reward model trains with."""
    return with_rm_steps(cfg, cfg.budget.rm_steps)


# --- evaluation --------------------------------------------------------------------------------------------

def majority_per_problem(solutions, n: int, target_se: float, seed: int) -> np.ndarray:
    """Majority voting accuracy at ``n`` of every problem (in :func:`grouped` order), Monte Carlo."""
    from prmkit.evaluate.pool import pool_from_lists
    from prmkit.evaluate.vote import vote_curve

    groups = grouped(solutions)
    pool = pool_from_lists([[solutions[i].answer for i in g] for g in groups],
                           [[solutions[i].grade == "correct" for i in g] for g in groups], answer_key="exact")
    return vote_curve(pool, [n], target_se=target_se, seed=seed).per_problem[:, 0]


def seed_accuracy(cfg: LabConfig, seed_dir: Path, seed: int) -> dict[str, np.ndarray]:
    """``{"prm": [budgets, problems], "orm": ..., "majority": ...}`` best-of-N accuracies of one seed, and the pool's
    ceilings at that N (``pass``, ``step_judge``: :func:`~prmkit.lab.study.core.ceilings_per_problem`), the same at
    every budget."""
    from prmkit.io import read_solutions
    from prmkit.lab.rm import solution_column
    from prmkit.lab.run import solution_score_name

    sols = list(read_solutions(seed_dir / "data" / "eval.jsonl.gz"))
    n, budgets = cfg.budget.n, cfg.budget.budgets

    def scores(k: str, b: int) -> np.ndarray:
        return solution_column(seed_dir / f"rm-{k}-{b}" / "scored-eval.jsonl.gz", solution_score_name(k, b, cfg))

    acc = {k: np.stack([bon_per_problem(sols, scores(k, b), n) for b in budgets]) for k in KINDS}
    maj = majority_per_problem(sols, n, cfg.vote_target_se, seed)
    acc["majority"] = np.tile(maj, (len(budgets), 1))
    acc.update({k: np.tile(v, (len(budgets), 1)) for k, v in ceilings_per_problem(sols, n).items()})
    return acc


def model_aurocs(cfg: LabConfig, seed_dir: Path) -> dict[str, list[float]]:
    """Each reward model's AUROC on the held-out pool, per kind in budget order: a PRM's over every scored step
    against the oracle (:func:`prmkit.lab.scoring.step_auroc`, what the lab's 0.9 floor reads); an ORM writes no
    step scores, so its AUROC is its solution score against the final answer's grade, what it learns to tell."""
    from prmkit.evaluate.steps import auroc
    from prmkit.io import read_solutions
    from prmkit.lab.rm import solution_column
    from prmkit.lab.run import score_name, solution_score_name
    from prmkit.lab.scoring import step_auroc

    right = np.array([s.grade == "correct" for s in read_solutions(seed_dir / "data" / "eval.jsonl.gz")], int)
    out = {}
    for k in KINDS:
        out[k] = []
        for b in cfg.budget.budgets:
            scored = seed_dir / f"rm-{k}-{b}" / "scored-eval.jsonl.gz"
            if k == "prm":
                name = score_name(k, b, cfg)
                out[k].append(float(step_auroc(scored, "p_correct" if name == "prm" else f"{name}_p_correct")["auroc"]))
            else:
                scores = solution_column(scored, solution_score_name(k, b, cfg))
                out[k].append(float(auroc(scores, right)) if 0 < right.sum() < right.size else float("nan"))
    return out


# --- the pipeline ------------------------------------------------------------------------------------------

def stages(cfg: LabConfig, ctx):
    """The base (first: under the ``lm`` policy it samples the pools), data, then every reward model."""
    base = ctx.base(cfg)
    data = {s: Data(str(ctx.seed_dir(s) / "data"), cfg, s, sampler(cfg, base), device=ctx.device) for s in ctx.seeds}
    rms = [RewardModel(str(ctx.seed_dir(s) / f"rm-{k}-{budget}"), with_passes(cfg, cfg.budget.rm_epochs, budget), s, k,
                       budget, base, data[s], **ctx.how)
           for s in ctx.seeds for budget in cfg.budget.budgets[::-1] for k in KINDS]
    return [("base", [base]), ("data", list(data.values())), ("rm", rms)]


def summarise(cfg: LabConfig, seeds: list[int], root: Path) -> dict:
    """Every number of the study from the held-out scores: curves, fits, the efficiency factor, per seed."""
    b = cfg.budget
    sd = {s: root / f"seed-{s}" for s in seeds}
    per_seed = {s: seed_accuracy(cfg, sd[s], s) for s in seeds}
    acc = {k: np.stack([per_seed[s][k] for s in seeds]) for k in (*KINDS, "majority")}
    summary = {"study": NAME, "preset": cfg.name, "seeds": list(seeds), "n": b.n,
               "budgets": list(b.budgets), "settings": dataclasses.asdict(b), "rm_steps": cfg.rm.max_steps,
               "rm_steps_per_budget": {str(n): labels_recipe(cfg, b.rm_epochs, n).max_steps
                                       for n in b.budgets},
               "rm_batch_size": cfg.rm.batch_size, "eval": f"{b.eval_problems} problems x {b.eval_samples} samples per seed",
               **curve_stats(list(b.budgets), acc, cfg.bootstrap, 0)}
    summary["per_seed"] = {str(s): {k: [float(x) for x in per_seed[s][k].mean(axis=1)] for k in per_seed[s]}
                           for s in seeds}
    summary["ceilings"] = {k: mean_ci(np.stack([per_seed[s][k][0] for s in seeds]), cfg.bootstrap)
                           for k in ("pass", "step_judge")}
    aurocs = {s: model_aurocs(cfg, sd[s]) for s in seeds}
    summary["auroc"] = {k: {str(n): [aurocs[s][k][j] for s in seeds] for j, n in enumerate(b.budgets)} for k in KINDS}
    summary["job_seconds"] = _job_seconds(sd)
    return summary


def _job_seconds(seed_dirs: dict) -> dict:
    """Compute seconds of every job (from ``done.json``), keyed ``seed/job``: what a default run costs."""
    out = {}
    for s, d in seed_dirs.items():
        for done in sorted(Path(d).glob("*/done.json")):
            info = json.loads(done.read_text())
            out[f"{s}/{done.parent.name}"] = {k: info[k] for k in ("seconds", "train_seconds", "score_seconds")
                                              if k in info}
    return out


# --- figure and pages ----------------------------------------------------------------------------------------

STYLE = {"prm": ("C0", "PRM (min)"), "orm": ("C1", "ORM"), "majority": ("0.4", "majority vote")}


def plot_curve(summary: dict, path: Path) -> str:
    """Accuracy against labels (log x): per-seed points, the mean with 95% CI bars, the fitted lines."""
    from prmkit.evaluate.plots import plt, save_figure  # the Agg backend: set where plots is imported

    labels = summary["budgets"]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for j, kind in enumerate(KINDS):
        color, name = STYLE[kind]
        acc = summary["accuracy"][kind]
        mean = np.array([acc[str(b)]["mean"] for b in labels])
        ci = np.array([acc[str(b)]["ci95"] for b in labels])
        shift = np.exp((j - 0.5) * 0.04)  # side by side, so bars and points do not hide each other
        for b in labels:
            ax.scatter([b * shift] * len(acc[str(b)]["per_seed"]), [100 * v for v in acc[str(b)]["per_seed"]],
                       s=12, color=color, alpha=0.35, zorder=2)
        ax.errorbar(np.array(labels) * shift, 100 * mean, yerr=100 * np.abs(ci.T - mean), fmt="o", color=color,
                    capsize=3, zorder=3, label=f"{name}, mean over seeds (95% CI)")
        fit = summary["fit"][kind]
        xs = np.geomspace(labels[0], labels[-1], 50)
        ax.plot(xs, 100 * (fit["intercept"] + fit["slope"] * np.log(xs)), color=color, linestyle="--", zorder=1,
                label=f"{name} fit: {fit['points_per_doubling']:+.1f} pts per doubling")
    maj = np.mean([summary["accuracy"]["majority"][str(b)]["mean"] for b in labels])
    ax.axhline(100 * maj, color=STYLE["majority"][0], linestyle=":", label=f"majority@{summary['n']} (no labels)")
    ax.set_xscale("log")
    ax.set_xticks(labels)
    ax.set_xticklabels([f"{b:,}" for b in labels])
    ax.minorticks_off()
    ax.set_xlabel("labelled solutions (log scale)")
    ax.set_ylabel(f"best-of-{summary['n']} accuracy (%)")
    ax.set_title(f"Label budget: process vs outcome supervision (seeds {', '.join(map(str, summary['seeds']))})",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path)


def _steps_text(summary: dict) -> str:
    """How many optimiser steps the reward models took, the same at every budget or raised by passes.

    >>> _steps_text({"rm_steps": 300, "rm_steps_per_budget": {"250": 300, "4000": 300}})
    'each with 300 optimiser steps of 32 at every budget'
    >>> _steps_text({"rm_steps": 300, "rm_steps_per_budget": {"250": 300, "4000": 1250}, "settings": {"rm_epochs": 10}})
    'each with at most 10 passes over its labels in steps of 32 (the cap per budget: 250: 300, 4,000: 1,250)'
    >>> _steps_text({"rm_steps_per_budget": {"125": 600, "8000": 2400}, "rm": {"early_stop_patience": 4, "restarts": 3}})
    'each stopped early on held-out labels (a tenth of its problems), the best of 3 restarts kept, in steps of 32 (the cap per budget: 125: 600, 8,000: 2,400)'
    """
    per = summary.get("rm_steps_per_budget") or {}
    batch = summary.get("rm_batch_size", 32)
    rm = summary.get("rm") or {}
    if rm.get("early_stop_patience", 0) > 0:
        caps = ", ".join(f"{int(n):,}: {s:,}" for n, s in per.items())
        return (f"each stopped early on held-out labels (a tenth of its problems), the best of {rm['restarts']} "
                f"restarts kept, in steps of {batch} (the cap per budget: {caps})")
    if len(set(per.values())) > 1:
        caps = ", ".join(f"{int(n):,}: {s:,}" for n, s in per.items())
        return (f"each with at most {summary['settings']['rm_epochs']:g} passes over its labels in steps of {batch} "
                f"(the cap per budget: {caps})")
    return f"each with {summary['rm_steps']} optimiser steps of {batch} at every budget"


def budget_tables(summary: dict) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The study's tables as (header, rows) of text: ``accuracy`` per budget, the ``fit`` of each reward
    model, the ``equivalent`` labels; the page and ``docs/study-budget.md`` (generated) both show them."""
    n, labels, acc = summary["n"], summary["budgets"], summary["accuracy"]
    rows = [[f"{b:,}", interval(acc["prm"][str(b)]), interval(acc["orm"][str(b)]),
             interval(summary["gap_prm_orm"][str(b)]), interval(acc["majority"][str(b)]),
             " / ".join(f"{100 * v:.1f}" for v in acc["prm"][str(b)]["per_seed"]),
             " / ".join(f"{100 * v:.1f}" for v in acc["orm"][str(b)]["per_seed"])] for b in labels]
    fit = [[STYLE[k][1], f"{100 * f['slope']:.2f}", f"{f['points_per_doubling']:+.2f}", f"{100 * f['intercept']:.1f}",
            " / ".join(f"{100 * v:.2f}" for v in f["per_seed_slope"])] for k, f in summary["fit"].items()]
    eq = [[f"{int(b):,}", f"{v['orm_labels']:,.0f}" + (" (extrapolated)" if v["extrapolated"] else ""),
           ratio_interval(v),
           " / ".join(ratio(x) for x in v["per_seed"])] for b, v in summary["equivalent_labels"].items()]
    out = {"accuracy": (["labelled solutions", f"PRM min@{n}", f"ORM@{n}", "PRM - ORM", f"majority@{n}",
                         "PRM per seed", "ORM per seed"], rows),
           "fit": (["reward model", "slope (pts per ln label)", "pts per doubling", "intercept (pts at 1 label)",
                    "slope per seed"], fit),
           "equivalent": (["PRM labels", "ORM labels to match (fitted lines)", "factor (95% CI)", "per seed"], eq)}
    if "matched_labels" in summary:  # summaries from before 2026-12-07 read the fitted lines only
        out["matched"] = (["PRM labels", f"PRM min@{n}", "ORM labels to match (measured curve)", "factor (95% CI)",
                           "per seed"], [_matched_row(b, v) for b, v in summary["matched_labels"].items()])
    if "auroc" in summary:
        out["auroc"] = (["labelled solutions", "PRM step AUROC per seed", "ORM AUROC per seed (final answer)"],
                        [[f"{int(b):,}", " / ".join(f"{x:.3f}" for x in summary["auroc"]["prm"][b]),
                          " / ".join(f"{x:.3f}" for x in summary["auroc"]["orm"][b])] for b in summary["auroc"]["prm"]])
    return out


def _matched_row(budget: str, v: dict) -> list[str]:
    """One row of the ``matched`` table: a censored reading says which way (more than tried, or at most the
    smallest budget), and so does a CI end or per-seed value that is one (a value at the smallest budget is a
    bound, ``<=``; one never matched is ``inf``).

    >>> _matched_row("500", {"prm_accuracy": 0.5, "orm_labels": 125.0, "factor": 0.25, "ci95": [0.25, 2.0],
    ...                      "censored": "below", "per_seed": [0.25, 1.5], "per_seed_censored": ["below", ""],
    ...                      "censored_share": {"below": 0.4, "above": 0.0}})
    ['500', '50.0', 'at most the smallest budget', '<=0.25 [<=0.25, 2.00]', '<=0.25 / 1.50']
    """
    labels = {"above": "more than tried", "below": "at most the smallest budget"}.get(v["censored"], f"{v['orm_labels']:,.0f}")
    flags = v.get("per_seed_censored") or [""] * len(v["per_seed"])

    def bound(x: float, flag: str) -> str:
        return f"<={ratio(x)}" if flag == "below" else ratio(x)

    low_censored = (v.get("censored_share") or {}).get("below", 0.0) > 0.025  # the CI's lower end is a bound
    factor = (f"{bound(v['factor'], v['censored'])} [{bound(v['ci95'][0], 'below' if low_censored else '')}, "
              f"{ratio(v['ci95'][1])}]")
    return [f"{int(budget):,}", points(v["prm_accuracy"]), labels, factor,
            " / ".join(bound(x, f) for x, f in zip(v["per_seed"], flags))]


def efficiency_text(summary: dict) -> str:
    """The data-efficiency factor (slope ratio) with its interval and per-seed values, as one sentence."""
    e = summary["efficiency"]
    return (f"slope(PRM) / slope(ORM) = {ratio(e['factor'])}, 95% CI [{ratio(e['ci95'][0])}, "
            f"{ratio(e['ci95'][1])}], per seed {' / '.join(ratio(x) for x in e['per_seed'])}")


def section_html(summary: dict, figure_path: Path) -> str:
    """The study's HTML fragment (from ``<h2>``): what was run, the tables, the figure, what it shows."""
    from prmkit.evaluate.html import figure, table

    n = summary["n"]
    tables = budget_tables(summary)
    acc_table, fit_table, eq_table = (table(*tables[k]) for k in ("accuracy", "fit", "equivalent"))
    e = summary["efficiency"]
    return "\n".join([
        "<h2>Study: the label-budget curve (process vs outcome supervision)</h2>",
        (f"<p>PRM and ORM from the same base model, trained on the first B of one shuffled pool of labelled "
        f"solutions (the PRM on the simulated labellers' phase-2 step ratings, the ORM on the final-answer "
        f"grades of the same solutions), {_steps_text(summary)}; "
        f"best-of-{n} per held-out problem ({html.escape(summary['eval'])}); means over seeds "
        f"{', '.join(map(str, summary['seeds']))} with 95% bootstrap intervals over seeds and problems.</p>"),
        acc_table, figure(figure_path),
        "<h3>Best-fit lines: accuracy against ln(labels)</h3>", fit_table,
        (f"<p><b>Data-efficiency factor (the paper's method, slope of PRM / slope of ORM): "
        f"{ratio(e['factor'])}</b>, 95% CI [{ratio(e['ci95'][0])}, {ratio(e['ci95'][1])}], per seed "
        f"{' / '.join(ratio(x) for x in e['per_seed'])} (resamples with an ORM slope at or below zero: "
        f"{100 * e['non_positive_baseline_share']:.1f}%). A factor above 1 means the PRM's accuracy climbs faster "
        f"per label; below 1, the ORM's does, which happens when the PRM starts high and the ORM catches up.</p>"),
        "<h3>Labels the ORM needs to match the PRM</h3>",
        ("<p class='note'>The horizontal reading of the same lines: at each PRM budget, the number of labels at "
        "which the ORM's fitted line reaches the PRM's fitted accuracy, and that number over the budget "
        "(a factor of 4 means the ORM needs four times the labels).</p>"), eq_table,
        *([("<p class='note'>Read off the measured curves instead (straight lines in ln(labels) between budgets, "
            "no fitted line): the labels at which the ORM's curve first reaches the PRM's accuracy at each budget.</p>"),
           table(*tables["matched"])] if "matched" in tables else []),
        *(["<h3>How well each reward model ranks</h3>", table(*tables["auroc"])] if "auroc" in tables else []),
        f"<p>{html.escape(findings(summary))}</p>", _compute_note(summary)])


def _compute_note(summary: dict) -> str:
    """Compute seconds of the jobs by stage, when the summary has them (from ``done.json``)."""
    stages = {k: v["job_seconds"] for k, v in summary.get("timings", {}).items() if "job_seconds" in v}
    if not stages:
        return ""
    text = ", ".join(f"{k} {v:,.0f} s" for k, v in stages.items())
    return (f"<p class='note'>Compute (sum over jobs, one core each, when they ran): {text}; "
            f"{sum(stages.values()) / 60:.1f} core-minutes in all.</p>")


def findings(summary: dict) -> str:
    """The directions, stated from the numbers (never pre-written)."""
    d, labels = summary["direction"], summary["budgets"]
    gaps = summary["gap_prm_orm"]
    below = [f"{b:,}" for b in labels if gaps[str(b)]["ci95"][0] <= 0]
    parts = [f"PRM accuracy {'rises' if d['prm_rises'] else 'does not rise'} from {labels[0]:,} to {labels[-1]:,} labels",
             "the PRM is ahead of the ORM at every budget" if d["prm_ge_orm_every_budget"]
             else "the PRM is not ahead of the ORM at every budget"]
    parts.append("the gap's CI includes zero at " + ", ".join(below) + " labels" if below
                 else "the gap's CI excludes zero at every budget")
    parts += _ends(summary) + _weak_models(summary) + _ceilings(summary)
    return "As measured: " + "; ".join(parts) + "."


def _ceilings(summary: dict) -> list[str]:
    """The held-out pool's ceilings at best-of-N beside the best model's accuracy, where the summary has them."""
    if "ceilings" not in summary:
        return []
    c, n = summary["ceilings"], summary["n"]
    best = max(summary["accuracy"][k][str(b)]["mean"] for k in KINDS for b in summary["budgets"])
    return [(f"the most any scorer could reach at best-of-{n}: pass@{n} {interval(c['pass'])}, the step-judge limit "
             f"{interval(c['step_judge'])} (the best model's mean: {100 * best:.1f})")]


def _ends(summary: dict) -> list[str]:
    """The curve's bottom (each kind's lead over majority at the smallest budget) and top (its gain over the last
    step: saturated where the CI covers 0), where the summary has them."""
    if "over_majority" not in summary:
        return []
    first, (before, last) = summary["budgets"][0], summary["budgets"][-2:]
    lead = {k: summary["over_majority"][k][str(first)] for k in KINDS}
    bottom = "at least one kind is not above majority voting" if any(v["ci95"][0] <= 0 for v in lead.values()) \
        else "both kinds are above majority voting"
    out = [(f"at {first:,} labels {bottom} (leads over it: PRM {interval(lead['prm'], True)}, "
            f"ORM {interval(lead['orm'], True)} points)")]
    for k in KINDS:
        g = summary["top_gain"][k]
        state = ("saturated: its CI covers 0" if g["ci95"][0] <= 0 <= g["ci95"][1]
                 else "it falls: its CI is below 0" if g["ci95"][1] < 0 else "not saturated")
        out.append(f"from {before:,} to {last:,} labels the {STYLE[k][1].split()[0]} gains {interval(g, True)} points "
                   f"({state})")
    return out


def _weak_models(summary: dict) -> list[str]:
    """Every PRM below the lab's step-AUROC floor (:data:`prmkit.lab.targets.FLOOR`), with its number, where the
    summary has AUROCs."""
    from prmkit.lab.targets import FLOOR

    if "auroc" not in summary:
        return []
    weak = [f"{int(b):,} labels, seed {s} ({x:.3f})" for b, xs in summary["auroc"]["prm"].items()
            for s, x in zip(summary["seeds"], xs) if not x >= FLOOR]
    return [f"PRMs below {FLOOR} step AUROC: {', '.join(weak)}" if weak else f"every PRM at or above {FLOOR} step AUROC"]


write_pages = functools.partial(write_study_outputs, name=NAME, plot=plot_curve, section_html=section_html)
"""``figures/budget.png``, ``section.html`` and the standalone ``report.html`` of the study."""
STUDY = Study(NAME, stages, summarise, write_pages, lambda cfg, seeds: study_config(cfg))


__all__ = [
    "STUDY",
    "Data",
    "RewardModel",
    "budget_tables",
    "curve_stats",
    "efficiency_text",
    "equivalence",
    "equivalent_labels",
    "majority_per_problem",
    "matched",
    "matched_labels",
    "model_aurocs",
    "plot_curve",
    "resampled_factors",
    "section_html",
    "seed_accuracy",
    "study_config",
    "write_pages",
]
