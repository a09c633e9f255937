"""``prmkit lab study synthetic``: the paper's small-scale synthetic supervision, in the lab.

A *large PRM* stands in for the human labellers (the paper's PRM_large): the lab's PRM trained once
per run on many more simulated labels (``synthetic.large_problems x large_samples``, problems drawn
with ``synthetic.large_seed``, never a run seed) and for more steps than the small models get. For each
run seed, fresh training problems (the train split of that seed) get ``max(per_problem)`` samples; the
first ``k`` samples of every problem are labelled three ways, the same solutions for all three:

- ``process``: the large PRM's process labels: +1 up to its first predicted error (the first step with
  P(negative) > ``synthetic.threshold``, the paper's 0.2), that step -1, the record cut there (phase 2);
- ``outcome``: the large PRM's outcome label: 1 when it flags no step and the solution has an answer, else 0;
- ``answer``: final-answer checking (the grade), what an ORM normally learns from.

A small PRM learns from ``process``, small ORMs from ``outcome`` and ``answer`` (``rm_steps`` optimiser
steps each, the same for every method and budget), and each is evaluated by best-of-``n`` on the seed's
held-out pool (exact expectation, :func:`~prmkit.lab.study.core.bon_per_problem`). Accuracies and the
paired differences (process - outcome, outcome - answer) carry 95% bootstrap intervals over seeds and
problems (:func:`~prmkit.lab.study.core.mean_ci`); the paper's ordering is process > large-PRM outcome >
answer checking at every budget. The large PRM's own step AUROC against the oracle, its best-of-``n``,
and how its labels agree with the oracle's are reported beside them.

Outputs in ``RUN_DIR/study-synthetic/``: ``large/`` (data and the large PRM, shared by all
seeds), ``seed-S/`` (``data``, ``label`` (the large PRM's scores and the
labelled files), ``rm-<method>-<k>``), ``summary.json``, ``section.html``, ``report.html``, ``figures/``.
Every job is resumable (:func:`prmkit.lab.run.run_job`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prmkit.lab.jobs import init_worker
from prmkit.lab.study.config import DIFFERENCES, KIND, METHODS, NAMES  # noqa: F401  (NAMES re-exported)
from prmkit.lab.study.core import (
    bon_per_problem,
    ceilings_per_problem,
    grouped,
    labels_recipe,
    mean_ci,
    solution_column,
    solution_scores,
    step_auroc,
    step_probabilities,
    with_rm_steps,
)
from prmkit.lab.study.protocol import Seeded, Study, TrainScore, job_seconds
from prmkit.lab.study.synthetic_pages import write_outputs

NAME = "synthetic"
SENSITIVITY = (0.1, 0.2, 0.3, 0.5, 0.7)
"""Thresholds at which the large PRM's labels are compared with the oracle's (a diagnostic; training uses
``synthetic.threshold`` only)."""
VERSION = 1
"""Bumped when a job's output format changes, so stale folders are recomputed."""


# --- labels from the large PRM (pure) ------------------------------------------------------------------

def flagged_step(p_neg, threshold: float) -> int | None:
    """Index of the first step whose P(negative) exceeds ``threshold`` (None: no step flagged).

    >>> flagged_step([0.05, 0.1, 0.6, 0.9], 0.2), flagged_step([0.05, 0.2], 0.2)
    (2, None)
    """
    above = np.flatnonzero(np.asarray(p_neg, float) > threshold)
    return int(above[0]) if above.size else None


def process_record(sol, p_neg, threshold: float):
    """``sol`` with the large PRM's process labels, phase-2 style: +1 up to its first flagged step, that step -1,
    the record cut after it. Steps it did not score (past truncation) stay unrated.

    >>> from prmkit.schema import Solution
    >>> s = Solution.from_steps("q", ["a", "b", "c"], answer="1")
    >>> r = process_record(s, [0.1, 0.5, 0.9], 0.2)
    >>> r.ratings, r.finish_reason, r.label_source
    ([1, -1], 'found_error', 'model')
    >>> process_record(s, [0.1, 0.1], 0.2).ratings
    [1, 1, None]
    """
    from prmkit.schema import Step

    stop = flagged_step(p_neg, threshold)
    texts = sol.texts if stop is None else sol.texts[: stop + 1]
    ratings = [(-1 if i == stop else 1) if i < len(p_neg) else None for i in range(len(texts))]
    reason = "found_error" if stop is not None else ("solution" if sol.answer is not None else "give_up")
    return dataclasses.replace(sol, steps=[Step.of(t, rating=r) for t, r in zip(texts, ratings)],
                               finish_reason=reason, **_provenance(sol, "process"))


def outcome_record(sol, p_neg, threshold: float):
    """``sol`` with the large PRM's outcome label: 1.0 when it flags no step and there is an answer, else 0.0.

    >>> from prmkit.schema import Solution
    >>> s = Solution.from_steps("q", ["a", "b"], answer="1", grade="correct")
    >>> outcome_record(s, [0.1, 0.5], 0.2).outcome, outcome_record(s, [0.1, 0.1], 0.2).outcome
    (0.0, 1.0)
    """
    ok = flagged_step(p_neg, threshold) is None and sol.answer is not None
    return dataclasses.replace(sol, outcome=1.0 if ok else 0.0, **_provenance(sol, "outcome"))


def answer_record(sol):
    """``sol`` for an ORM on final-answer checking: no outcome label, so the trainer reads the grade."""
    return dataclasses.replace(sol, outcome=None, meta={**sol.meta, "synthetic": "answer"})


def _provenance(sol, method: str) -> dict:
    return {"label_source": "model", "labeller": "prm-large", "meta": {**sol.meta, "synthetic": method}}


def oracle_probabilities(sol) -> np.ndarray:
    """The exact oracle as a perfect large PRM (``synthetic.teacher=oracle``): P(negative) 1 at its wrong steps, else 0.

    >>> from prmkit.lab.config import preset
    >>> from prmkit.lab.pools import generate_pool
    >>> s = generate_pool(preset("quick"), seed=0, split="train", problems=1, samples=1)[0]
    >>> oracle_probabilities(s).shape == (len(s.texts), 2)
    True
    """
    from prmkit.lab.domains import oracle_labels

    return np.array([[0.0, 1.0] if lab.rating == -1 else [1.0, 0.0] for lab in oracle_labels(sol)]).reshape(-1, 2)


def first_k(solutions: list, k: int) -> list:
    """The first ``k`` samples of every problem, in the original order (budgets are nested).

    >>> from prmkit.schema import Solution
    >>> sols = [Solution.from_steps(q, ["x"], id=f"{q}{j}") for q in "ab" for j in range(3)]
    >>> [s.id for s in first_k(sols, 2)]
    ['a0', 'a1', 'b0', 'b1']
    """
    keep = sorted(i for g in grouped(solutions) for i in g[:k])
    return [solutions[i] for i in keep]


def label_agreement(solutions, probs: list[np.ndarray], threshold: float) -> dict:
    """How the large PRM's labels of ``solutions`` agree with the oracle's truth (shares in [0, 1]).

    ``process_first_error``: its first flagged step is the oracle's first wrong step (or both have none);
    ``flagged`` and ``oracle_wrong``: shares of solutions it flags, and with a wrong step (the oracle);
    ``outcome``: its outcome label equals the oracle's (no wrong step, and an answer); ``answer_check``:
    the grade equals the oracle's outcome (how far answer checking is from it); ``outcome_vs_answer``: the share where
    its outcome label and answer checking disagree (what the second ordering can tell apart);
    ``caught_right_answer_wrong_step``: of right answers reached through a wrong step, the share it flags.
    """
    from prmkit.lab.domains import oracle_labels

    first_ok, outcome_ok, grade_ok, differ, caught, sneaky, flagged, n_wrong = [], [], [], [], 0, 0, 0, 0
    for sol, p in zip(solutions, probs):
        truth = [lab.rating for lab in oracle_labels(sol)]
        wrong = [i for i, r in enumerate(truth) if r == -1]
        stop = flagged_step(p[:, 1], threshold)
        clean = not wrong and sol.answer is not None
        first_ok.append(stop == (wrong[0] if wrong else None))
        outcome_ok.append((stop is None and sol.answer is not None) == clean)
        grade_ok.append((sol.grade == "correct") == clean)
        differ.append((stop is None and sol.answer is not None) != (sol.grade == "correct"))
        flagged += stop is not None
        n_wrong += bool(wrong)
        if sol.grade == "correct" and wrong:
            sneaky += 1
            caught += stop is not None
    return {"solutions": len(first_ok), "flagged": flagged / max(len(first_ok), 1),
            "oracle_wrong": n_wrong / max(len(first_ok), 1),
            "process_first_error": float(np.mean(first_ok)), "outcome": float(np.mean(outcome_ok)),
            "answer_check": float(np.mean(grade_ok)), "outcome_vs_answer": float(np.mean(differ)),
            "right_answer_wrong_step": sneaky,
            "caught_right_answer_wrong_step": caught / sneaky if sneaky else float("nan")}


def ordering(acc: dict, diffs: dict) -> dict:
    """Per budget: does process > outcome > answer hold on the means, and with both intervals above zero?

    ``acc[method][k]`` and ``diffs["a-b"][k]`` are :func:`~prmkit.lab.study.core.mean_ci` results.

    >>> m = lambda v, lo: {"mean": v, "ci95": [lo, v + 1]}
    >>> acc = {"process": {1: m(0.8, 0)}, "outcome": {1: m(0.5, 0)}, "answer": {1: m(0.4, 0)}}
    >>> ordering(acc, {"process-outcome": {1: m(0.3, 0.1)}, "outcome-answer": {1: m(0.1, -0.05)}})[1]
    {'holds': True, 'significant': False, 'process>outcome': True, 'outcome>answer': True}
    """
    out = {}
    for k in acc["process"]:
        po, oa = diffs["process-outcome"][k], diffs["outcome-answer"][k]
        out[k] = {"holds": po["mean"] > 0 and oa["mean"] > 0, "significant": po["ci95"][0] > 0 and oa["ci95"][0] > 0,
                  "process>outcome": po["mean"] > 0, "outcome>answer": oa["mean"] > 0}
    return out


# --- jobs ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LargeData(Seeded):
    """The large PRM's training pool (train split of ``seed``) and its simulated labels."""

    reads = ("domain", "generator", "policy", "labellers", "synthetic.large_problems", "synthetic.large_samples")
    version = VERSION

    def run(self, out: Path) -> dict:
        from prmkit.io import write_records
        from prmkit.lab.labellers import label
        from prmkit.lab.pools import generate_pool

        cfg, sc = self.cfg, self.cfg.synthetic
        pool = generate_pool(cfg, self.seed, "train", problems=sc.large_problems, samples=sc.large_samples)
        write_records(out / "train.jsonl.gz", pool)
        write_records(out / "labelled.jsonl.gz", label(pool, cfg.labellers, self.seed))
        return {"solutions": len(pool)}


@dataclass(frozen=True)
class Pools(Seeded):
    """A run seed's fresh training pool (``problems x max(per_problem)``) and held-out pool; checks that no
    fresh problem is one of the large PRM's."""

    reads = ("domain", "generator", "policy", "synthetic.problems", "synthetic.per_problem",
             "synthetic.eval_problems", "synthetic.eval_samples", "synthetic.large_problems", "synthetic.large_seed")
    version = VERSION

    def run(self, out: Path) -> dict:
        from prmkit.io import write_records
        from prmkit.lab.pools import generate_pool

        cfg, sc, seed = self.cfg, self.cfg.synthetic, self.seed
        fresh = generate_pool(cfg, seed, "train", problems=sc.problems, samples=max(sc.per_problem))
        held = generate_pool(cfg, seed, "eval", problems=sc.eval_problems, samples=sc.eval_samples)
        large = {p.problem for p in cfg.lab_domain.make_problems(cfg.family("train"), sc.large_problems, sc.large_seed, "train")}
        shared = len({s.problem.problem for s in fresh} & large)
        if shared:
            raise ValueError(f"{shared} fresh training problems of seed {seed} are also the large PRM's")
        write_records(out / "fresh.jsonl.gz", fresh)
        write_records(out / "eval.jsonl.gz", held)
        return {"fresh": len(fresh), "eval": len(held)}


@dataclass(frozen=True)
class Label(Seeded):
    """Score the fresh and held-out pools with the large PRM (``prmkit score``); write the three labelled
    sets at every budget."""

    large: TrainScore = None
    pools: Pools = None
    reads = ("synthetic.teacher", "synthetic.threshold", "synthetic.per_problem")
    version = (VERSION, 2)  # 2: its stats.json holds outcome_vs_answer

    def run(self, out: Path) -> dict:
        from prmkit.device import torch_device
        from prmkit.io import read_solutions
        from prmkit.lab.rm import lab_score_config
        from prmkit.score import Scorer, score_file

        init_worker()
        model_dir = Path(self.large.model_dir)
        scorer = Scorer(model_dir, device=torch_device(self.device))
        score_cfg = lab_score_config(progress=self.progress, device=self.device)
        probs, sols = {}, {}
        for pool in ("fresh", "eval"):
            data = self.pools.output(f"{pool}.jsonl.gz").path
            sols[pool] = list(read_solutions(data))
            score_file(model_dir, data, out / f"scored-{pool}.jsonl.gz", score_cfg, scorer)
            probs[pool] = step_probabilities(out / f"scored-{pool}.jsonl.gz")
        self.write_sets(out, sols["fresh"], probs["fresh"])
        threshold = self.cfg.synthetic.threshold
        stats = {"agreement": label_agreement(sols["fresh"], probs["fresh"], threshold),
                 "by_threshold": {str(t): label_agreement(sols["fresh"], probs["fresh"], t) for t in SENSITIVITY},
                 "step_auroc_eval": step_auroc(sols["eval"], probs["eval"])}
        (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
        return stats

    def write_sets(self, out: Path, fresh: list, probs: list) -> None:
        """The three labelled sets of every budget, from the teacher's P(negative) of each fresh solution."""
        from prmkit.io import write_records

        sc = self.cfg.synthetic
        teacher = probs if sc.teacher == "prm" else [oracle_probabilities(s) for s in fresh]
        p_neg = {s.id: p[:, 1] for s, p in zip(fresh, teacher)}
        for k in sc.per_problem:
            chosen = first_k(fresh, k)
            write_records(out / f"process-{k}.jsonl.gz", [process_record(s, p_neg[s.id], sc.threshold) for s in chosen])
            write_records(out / f"outcome-{k}.jsonl.gz", [outcome_record(s, p_neg[s.id], sc.threshold) for s in chosen])
            write_records(out / f"answer-{k}.jsonl.gz", [answer_record(s) for s in chosen])


# --- the pipeline ----------------------------------------------------------------------------------------

def study_configs(cfg):
    """(small, large): ``cfg`` with the small reward models' and the large PRM's optimiser steps."""
    sc = cfg.synthetic
    return with_rm_steps(cfg, sc.rm_steps), with_rm_steps(cfg, sc.large_steps)


def small_recipe(cfg, k: int):
    """The recipe of a small reward model of ``k`` samples per problem: ``rm_steps``, raised to ``rm_epochs`` passes
    over its ``k x problems`` labels (:func:`~prmkit.lab.study.core.labels_recipe`).

    >>> from prmkit.lab.study.config import study_preset
    >>> cfg = study_preset("synthetic").replace({"synthetic.problems": 500})
    >>> [small_recipe(cfg.replace({"synthetic.rm_epochs": e}), 16).max_steps for e in (0, 8)]
    [100, 2000]
    """
    return labels_recipe(study_configs(cfg)[0], cfg.synthetic.rm_epochs, k * cfg.synthetic.problems)


def large_recipe(cfg):
    """The large PRM's recipe: ``large_steps``, raised to ``rm_epochs`` passes over its labels."""
    sc = cfg.synthetic
    return labels_recipe(study_configs(cfg)[1], sc.rm_epochs, sc.large_problems * sc.large_samples)


def prepare(cfg, seeds: list[int]):
    """The study's checks: rule-based pools, and a large PRM whose problems no run seed shares."""
    if cfg.policy != "rules":
        raise ValueError("the synthetic study samples its pools with the rule-based generator: run it with "
                         "policy=rules (the lm policy is for `prmkit lab run`, `lab study budget|active`)")
    if cfg.synthetic.large_seed in seeds:
        raise ValueError(f"synthetic.large_seed {cfg.synthetic.large_seed} is also a run seed: its problems would "
                         "not be fresh")
    return cfg


def stages(cfg, ctx) -> list:
    """Data (the large PRM's and each seed's), the base, the large PRM, its labels, the small reward models."""
    sc = cfg.synthetic
    large_data = LargeData(str(ctx.root / "large" / "data"), cfg, sc.large_seed)
    pools = {s: Pools(str(ctx.seed_dir(s) / "data"), cfg, s) for s in ctx.seeds}
    base = ctx.base(cfg)
    prm = TrainScore(str(ctx.root / "large" / "prm"), "prm", large_data.output("labelled.jsonl.gz"), large_recipe(cfg),
                     sc.large_seed, base, {}, **ctx.how)
    labels = {s: Label(str(ctx.seed_dir(s) / "label"), cfg, s, prm, pools[s], **ctx.how) for s in ctx.seeds}
    rms = [TrainScore(str(ctx.seed_dir(s) / f"rm-{m}-{k}"), KIND[m], labels[s].output(f"{m}-{k}.jsonl.gz"),
                      small_recipe(cfg, k), s, base, {"eval": pools[s].output("eval.jsonl.gz")}, **ctx.how)
           for k in sorted(sc.per_problem, reverse=True)  # the largest sets first: they finish last otherwise
           for s in ctx.seeds for m in METHODS]
    return [("data", [large_data, *pools.values()]), ("base", [base]), ("large PRM", [prm]),
            ("label", list(labels.values())), ("small RMs", rms)]


def summarise(cfg, seeds: list[int], root: Path) -> dict:
    """Every number of the study from the jobs' outputs: per seed, and over seeds with 95% intervals."""
    from prmkit.io import read_solutions

    sc = cfg.synthetic
    per_problem: dict = {m: {k: [] for k in sc.per_problem} for m in METHODS}
    large_acc, first, per_seed, ceilings = [], [], {}, []
    for s in seeds:
        sols = list(read_solutions(root / f"seed-{s}" / "data" / "eval.jsonl.gz"))
        ceilings.append(ceilings_per_problem(sols, sc.n))
        large_probs = step_probabilities(root / f"seed-{s}" / "label" / "scored-eval.jsonl.gz")
        large_acc.append(bon_per_problem(sols, solution_scores(large_probs), sc.n))
        first.append(np.array([np.mean([sols[i].grade == "correct" for i in g]) for g in grouped(sols)]))
        stats = json.loads((root / f"seed-{s}" / "label" / "stats.json").read_text())
        per_seed[str(s)] = {"large_prm": {**stats, f"bon@{sc.n}": float(large_acc[-1].mean())}, "accuracy": {}}
        for m in METHODS:
            for k in sc.per_problem:
                scored = root / f"seed-{s}" / f"rm-{m}-{k}" / "scored-eval.jsonl.gz"
                scores = solution_scores(step_probabilities(scored)) if KIND[m] == "prm" else solution_column(scored,
                                                                                                              "orm")
                acc = bon_per_problem(sols, scores, sc.n)
                per_problem[m][k].append(acc)
                per_seed[str(s)]["accuracy"][f"{m}@{k}"] = float(acc.mean())
    acc = {m: {k: mean_ci(np.stack(per_problem[m][k])) for k in sc.per_problem} for m in METHODS}
    diffs = {f"{a}-{b}": {k: mean_ci(np.stack(per_problem[a][k]) - np.stack(per_problem[b][k])) for k in sc.per_problem}
             for a, b in DIFFERENCES}
    large_stats = json.loads((root / "large" / "prm" / "done.json").read_text())
    return {"study": "synthetic", "preset": cfg.name, "seeds": seeds, "n": sc.n, "config": dataclasses.asdict(sc),
            "rm_steps": study_configs(cfg)[0].rm.max_steps,
            "rm_steps_per_budget": {str(k): small_recipe(cfg, k).max_steps for k in sc.per_problem},
            "large_rm_steps": large_recipe(cfg).max_steps,
            "ceilings": {k: mean_ci(np.stack([c[k] for c in ceilings])) for k in ("pass", "step_judge")},
            "labels": {str(k): sc.problems * k for k in sc.per_problem},
            "accuracy": {m: {str(k): v for k, v in acc[m].items()} for m in METHODS},
            "differences": {d: {str(k): v for k, v in diffs[d].items()} for d in diffs},
            "ordering": {str(k): v for k, v in ordering(acc, diffs).items()},
            "large_prm": {"labels": sc.large_problems * sc.large_samples, "steps": large_recipe(cfg).max_steps,
                          "final_loss": large_stats.get("final_loss"), f"bon@{sc.n}": mean_ci(np.stack(large_acc)),
                          "step_auroc_eval": [per_seed[str(s)]["large_prm"]["step_auroc_eval"] for s in seeds]},
            "first_sample": mean_ci(np.stack(first)), "per_seed": per_seed,
            "over_first_sample": {m: {str(k): mean_ci(np.stack(per_problem[m][k]) - np.stack(first)) for k in sc.per_problem}
                                  for m in METHODS},
            "job_seconds": job_seconds(root)}


STUDY = Study(NAME, stages, summarise, write_outputs, prepare)


__all__ = [
    "METHODS",
    "STUDY",
    "answer_record",
    "first_k",
    "flagged_step",
    "label_agreement",
    "ordering",
    "outcome_record",
    "process_record",
    "summarise",
]
