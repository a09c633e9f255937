"""``prmkit lab study autolabel``: automatic step labels measured against the oracle, and PRMs trained on them.

Per seed (:class:`~prmkit.lab.study.config.AutolabelConfig`):

1. **data**: ``train_problems x samples_per_problem`` solutions of the train split (shuffled), rated by the
   simulated labellers (phase 2: the human baseline); the held-out pool; and the judge's training set,
   ``judge_labels`` simulated human labels of other problems (drawn with ``judge_seed + seed``).
2. **judge**: a PRM trained on that set (the lab's recipe, ``rm_steps`` steps). Served by ``prmkit serve
   --critic``, it answers ProcessBench's critique prompt with the first step whose P(correct) is below
   ``judge_threshold``: the lab's stand-in for an LLM judge, reached through the openai client as one would be.
3. **label**: ``prmkit label auto`` (:func:`prmkit.label.auto.run.label_solutions`) labels the pool with
   ``mc``, ``omegaprm``, ``judge`` and ``consensus``; rollouts come from the lab's rule-based generator (the
   policy that wrote the solutions) and are graded by the oracle's answer check. Each label set is measured
   against the oracle (:mod:`prmkit.lab.study.autolabel_quality`), with its cost.
4. **rm**: a PRM per arm (:data:`ARMS`): every label set on the whole pool (equal solutions), mc's soft
   values beside its hard labels, and mc and consensus cut to omegaprm's rollout budget (equal cost: a
   prefix of the pool whose rollouts, a judge call counted as one, fit omegaprm's total). Each scores the
   held-out pool: step AUROC against the oracle and best-of-``n`` (the ``min`` score), paired against the
   human arm over seeds and problems.

Outputs in ``RUN_DIR/study-autolabel/``: ``seed-S/{data,judge,label,rm-<arm>}``, ``summary.json``,
``section.html``, ``report.html``, ``figures/``. Every job is resumable (:func:`prmkit.lab.run.run_job`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prmkit.lab.jobs import init_worker
from prmkit.lab.study.core import (
    bon_per_problem,
    mean_ci,
    solution_scores,
    step_auroc,
    step_probabilities,
    with_restarts,
)
from prmkit.lab.study.protocol import Seeded, Study, TrainScore

NAME = "autolabel"
METHODS = ("mc", "omegaprm", "judge", "consensus")
"""The automatic labellers, as ``prmkit label auto --method`` names them."""
ARMS = {"human": ("human", "rating", "all"), "mc": ("mc", "rating", "all"), "mc-soft": ("mc", "value", "all"),
        "omegaprm": ("omegaprm", "rating", "all"), "judge": ("judge", "rating", "all"),
        "consensus": ("consensus", "rating", "all"), "mc@cost": ("mc", "rating", "cost"),
        "consensus@cost": ("consensus", "rating", "cost")}
"""PRM arms: (label set, the training label source, which solutions: all of the pool or omegaprm's cost)."""
DIFFERENCES = (("consensus", "mc"), ("consensus@cost", "mc@cost"), ("mc-soft", "mc"), ("omegaprm", "mc"),
               ("mc@cost", "omegaprm"), ("judge", "mc"))
"""Paired best-of-N differences the summary reports besides every arm's against the human one."""
VERSION = 1
"""Bumped when a job's output format changes, so stale folders are recomputed."""


# --- pure helpers --------------------------------------------------------------------------------------------

def record_cost(record) -> int:
    """A labelled record's cost in model calls: its rollouts, and one per judge call."""
    cost = record.meta["autolabel"]["cost"]
    return int(cost.get("rollouts", 0)) + int(cost.get("judge_calls", 0))


def within_budget(records, budget: int) -> list:
    """The longest prefix of ``records`` whose summed :func:`record_cost` is at most ``budget``.

    >>> from types import SimpleNamespace as N
    >>> recs = [N(meta={"autolabel": {"cost": {"rollouts": c}}}) for c in (5, 5, 5)]
    >>> len(within_budget(recs, 10)), len(within_budget(recs, 9))
    (2, 1)
    """
    total, out = 0, []
    for r in records:
        total += record_cost(r)
        if total > budget:
            break
        out.append(r)
    return out


def has_labels(record) -> bool:
    return any(r is not None for r in record.ratings)


# --- jobs ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Data(Seeded):
    """The pool (shuffled), its simulated human labels, the held-out pool and the judge's labelled set."""

    reads = ("domain", "generator", "policy", "labellers", "autolabel.train_problems", "autolabel.samples_per_problem",
             "autolabel.eval_problems", "autolabel.eval_samples", "autolabel.judge_labels", "autolabel.judge_seed")
    version = VERSION

    def run(self, out: Path) -> dict:
        from prmkit.io import write_records
        from prmkit.lab.labellers import label
        from prmkit.lab.pools import generate_pool

        cfg, seed, ac = self.cfg, self.seed, self.cfg.autolabel
        pool = generate_pool(cfg, seed, "train", ac.train_problems, ac.samples_per_problem)
        pool = [pool[i] for i in np.random.default_rng([seed, 17]).permutation(len(pool))]
        write_records(out / "pool.jsonl.gz", pool)
        write_records(out / "human.jsonl.gz", label(pool, cfg.labellers, seed))
        write_records(out / "eval.jsonl.gz", generate_pool(cfg, seed, "eval", ac.eval_problems, ac.eval_samples))
        judge_seed = ac.judge_seed + seed
        per = ac.samples_per_problem
        judge_pool = generate_pool(cfg, judge_seed, "train", -(-ac.judge_labels // per), per)[:ac.judge_labels]
        shared = {s.problem.problem for s in judge_pool} & {s.problem.problem for s in pool}
        if shared:
            raise ValueError(f"{len(shared)} of the judge's problems are also the pool's (seed {seed})")
        write_records(out / "judge-train.jsonl.gz", label(judge_pool, cfg.labellers, judge_seed))
        return {"pool": len(pool), "judge_labels": len(judge_pool)}


@dataclass(frozen=True)
class Label(Seeded):
    """Label the pool with every method of :data:`METHODS` (the judge served by ``prmkit serve --critic``),
    and write every arm's training file."""

    data: Data = None
    judge: TrainScore = None
    reads = ("generator", "autolabel.k", "autolabel.judge_threshold")
    version = VERSION

    def run(self, out: Path) -> dict:
        from prmkit.generate.config import GenerateConfig
        from prmkit.io import read_solutions, write_records
        from prmkit.lab.backend import LabBackend
        from prmkit.lab.oracle import grade_answer
        from prmkit.label.auto.config import AutoLabelConfig
        from prmkit.label.auto.run import label_solutions
        from prmkit.serve import background
        from prmkit.serve.app import ServeConfig, Service

        init_worker()
        cfg, seed, ac = self.cfg, self.seed, self.cfg.autolabel
        pool = list(read_solutions(self.data.output("pool.jsonl.gz").path))
        backend = LabBackend(GenerateConfig(backend="lab", model="default", seed=seed), generator=cfg.generator)
        service = Service(ServeConfig(critic=self.judge.model_dir, critic_threshold=ac.judge_threshold,
                                      name="lab-judge", device="cpu"))
        sets, stats = {}, {}
        try:
            with background(service) as url:
                for method in METHODS:
                    label_cfg = AutoLabelConfig(method=method, k=ac.k, judge_model="lab-judge", judge_base_url=url,
                                                judge_concurrency=4, progress=False, flush_every=64)
                    sets[method], stats[method] = label_solutions(pool, label_cfg, backend=backend, grade=grade_answer,
                                                                  cache=out / "rollouts.jsonl")
                    write_records(out / f"{method}.jsonl.gz", sets[method])
        finally:
            service.close()
        sets["human"] = list(read_solutions(self.data.output("human.jsonl.gz").path))
        budget = sum(record_cost(r) for r in sets["omegaprm"])
        arms = {}
        for arm, (method, _, which) in ARMS.items():
            chosen = sets[method] if which == "all" else within_budget(sets[method], budget)
            train = [r for r in chosen if has_labels(r)]
            write_records(out / f"arm-{arm}.jsonl.gz", train)
            arms[arm] = {"solutions": len(chosen), "labelled_solutions": len(train),
                         "wrong_steps": sum(r.ratings.count(-1) for r in train),
                         "cost": sum(record_cost(r) for r in chosen) if method != "human" else None}
        info = {"cost": stats, "arms": arms, "budget": budget}
        (out / "stats.json").write_text(json.dumps(info, indent=2, default=float) + "\n")
        return {"budget": budget, "arms": arms}


def trainable_arms(cfg, seeds: list[int], seed_dirs: dict) -> list[str]:
    """The arms with at least one optimiser step's worth of labelled solutions in every seed (a tiny
    consensus set at the quick size may have fewer: it is reported, not trained)."""
    least = math.ceil(cfg.rm.batch_size * cfg.rm.grad_accum / (1 - cfg.rm.eval_fraction))  # what trains is the rest
    counts = {s: json.loads((seed_dirs[s] / "label" / "stats.json").read_text())["arms"] for s in seeds}
    return [arm for arm in ARMS if all(counts[s][arm]["labelled_solutions"] >= least for s in seeds)]


def arm_config(cfg, arm: str):
    """``cfg`` whose PRM learns from the arm's label source (mc's soft values for ``mc-soft``). A label set
    with no wrong step (a small consensus set may have none) still trains: the study reports the arm's
    negatives, and its PRM learns the base rate, which is the finding."""
    return cfg.replace({"rm.label_source": ARMS[arm][1], "rm.allow_one_class": True})


# --- the pipeline ----------------------------------------------------------------------------------------

def study_rm(cfg):
    """``cfg`` whose PRMs (the judge's too) train ``rm_steps`` steps, ``restarts`` times with the best kept on a
    held-out tenth of their own labels: the same guard for every arm, chosen without the oracle."""
    return with_restarts(cfg, cfg.autolabel.rm_steps, cfg.autolabel.restarts)


def prepare(cfg, seeds: list[int]):
    """The study's checks (rule-based rollouts, a judge whose problems no seed shares) and its reward models."""
    ac = cfg.autolabel
    if cfg.policy != "rules":
        raise ValueError("the autolabel study rolls out with the rule-based generator (the policy that wrote its "
                         "pools): run it with policy=rules")
    if any(ac.judge_seed + s in seeds for s in seeds):
        raise ValueError(f"autolabel.judge_seed {ac.judge_seed} + a seed is also a run seed: pick another judge_seed")
    return study_rm(cfg)


def stages(cfg, ctx):
    """Data, the base, each seed's judge, the labels of every method, then a PRM per arm with enough labels."""
    data = {s: Data(str(ctx.seed_dir(s) / "data"), cfg, s) for s in ctx.seeds}
    yield "data", list(data.values())
    base = ctx.base(cfg)
    yield "base", [base]
    judge = {s: TrainScore(str(ctx.seed_dir(s) / "judge"), "prm", data[s].output("judge-train.jsonl.gz"), cfg.rm, s,
                           base, {}, **ctx.how) for s in ctx.seeds}
    yield "judge", list(judge.values())
    labels = {s: Label(str(ctx.seed_dir(s) / "label"), cfg, s, data[s], judge[s]) for s in ctx.seeds}
    yield "label", list(labels.values())
    seed_dirs = {s: ctx.seed_dir(s) for s in ctx.seeds}
    yield "rm", [TrainScore(str(ctx.seed_dir(s) / f"rm-{arm}"), "prm", labels[s].output(f"arm-{arm}.jsonl.gz"),
                            arm_config(cfg, arm).rm, s, base, {"eval": data[s].output("eval.jsonl.gz")}, **ctx.how)
                 for arm in trainable_arms(cfg, list(ctx.seeds), seed_dirs) for s in ctx.seeds]


def summarise(cfg, seeds: list[int], root: Path) -> dict:
    """Every number of the study from its jobs: label quality and cost per method, PRM results per arm."""
    from prmkit.io import read_solutions

    ac = cfg.autolabel
    cfg = study_rm(cfg)
    stats = {s: json.loads((root / f"seed-{s}" / "label" / "stats.json").read_text()) for s in seeds}
    trained = trainable_arms(cfg, seeds, {s: root / f"seed-{s}" for s in seeds})
    bon, auroc = {arm: [] for arm in trained}, {arm: [] for arm in trained}
    for s in seeds:
        sols = list(read_solutions(root / f"seed-{s}" / "data" / "eval.jsonl.gz"))
        for arm in trained:
            probs = step_probabilities(root / f"seed-{s}" / f"rm-{arm}" / "scored-eval.jsonl.gz")
            bon[arm].append(bon_per_problem(sols, solution_scores(probs), ac.n))
            auroc[arm].append(step_auroc(sols, probs))
    methods = ("human", *METHODS)
    measured = {s: measure_labels(root / f"seed-{s}") for s in seeds}
    quality = {m: pooled_quality([measured[s]["quality"][m] for s in seeds]) for m in methods}
    cost = {m: {k: [stats[s]["cost"][m].get(k) for s in seeds]
                for k in ("rollouts", "rollouts_sampled", "rollout_tokens_sampled", "judge_calls", "judge_unparseable",
                          "consensus_kept", "seconds")} for m in METHODS}
    prm = {arm: {"trained": arm in trained,
                 "solutions": [stats[s]["arms"][arm]["labelled_solutions"] for s in seeds],
                 "wrong_steps": [stats[s]["arms"][arm]["wrong_steps"] for s in seeds],
                 "cost": [stats[s]["arms"][arm]["cost"] for s in seeds]} for arm in ARMS}
    for arm in trained:
        prm[arm].update({f"bon@{ac.n}": mean_ci(np.stack(bon[arm])), "step_auroc": auroc[arm],
                         "step_auroc_mean": float(np.nanmean(auroc[arm])),
                         "minus_human": mean_ci(np.stack(bon[arm]) - np.stack(bon["human"]))})
    differences = {f"{a} - {b}": mean_ci(np.stack(bon[a]) - np.stack(bon[b]))
                   for a, b in DIFFERENCES if a in trained and b in trained}
    return {"study": NAME, "preset": cfg.name, "seeds": list(seeds), "n": ac.n, "config": dataclasses.asdict(ac),
            "rm_steps": cfg.rm.max_steps, "restarts": cfg.rm.restarts, "pool": ac.train_problems * ac.samples_per_problem,
            "eval": f"{ac.eval_problems} problems x {ac.eval_samples} samples per seed",
            "quality": quality, "cost": cost, "prm": prm, "differences": differences, "budget": [stats[s]["budget"] for s in seeds],
            "examples": measured[seeds[0]]["examples"], "judge_examples": measured[seeds[0]]["judge_examples"],
            "value_not_correctness": value_claim(quality["mc"])}


def measure_labels(seed_dir: Path) -> dict:
    """Every label set of one seed against the oracle (:func:`~prmkit.lab.study.autolabel_quality.label_quality`),
    and example disagreements of mc and the judge: measured from the labelled files when the summary is
    written, so a rerun of the summary measures with the current code."""
    from prmkit.io import read_solutions
    from prmkit.lab.study.autolabel_quality import examples, label_quality

    pool = list(read_solutions(seed_dir / "data" / "pool.jsonl.gz"))
    files = {"human": seed_dir / "data" / "human.jsonl.gz",
             **{m: seed_dir / "label" / f"{m}.jsonl.gz" for m in METHODS}}
    sets = {m: list(read_solutions(f)) for m, f in files.items()}
    return {"quality": {m: label_quality(pool, recs) for m, recs in sets.items()},
            "examples": examples(pool, sets["mc"]), "judge_examples": examples(pool, sets["judge"])}


def pooled_quality(per_seed: list[dict]) -> dict:
    """A method's label quality over seeds: each share's per-seed values and mean; reasons summed."""
    shares = ("wrong_precision", "wrong_recall", "first_error_accuracy", "agreement_correctness", "agreement_value")
    out = {k: {"per_seed": [q[k] for q in per_seed], "mean": float(np.nanmean([q[k] for q in per_seed]))}
           for k in shares}
    out["labelled_solutions"] = [q["labelled_solutions"] for q in per_seed]
    out["labelled_steps"] = [q["labelled_steps"] for q in per_seed]
    out["reasons"] = {r: sum(q["reasons"][r] for q in per_seed) for r in per_seed[0]["reasons"]}
    for k in ("solve_rate", "solve_rate_on_track_alarms"):
        out[k] = [q.get(k, float("nan")) for q in per_seed]
    return out


def value_claim(mc_quality: dict) -> dict:
    """Does "MC labels estimate value, not correctness" hold? Their agreement with the off-track indicator
    against their agreement with the oracle's ratings, in every seed."""
    value, correct = mc_quality["agreement_value"]["per_seed"], mc_quality["agreement_correctness"]["per_seed"]
    return {"agreement_value": value, "agreement_correctness": correct,
            "holds_every_seed": all(v > c for v, c in zip(value, correct))}


def write_pages(root: Path, cfg, summary: dict, command: str) -> None:
    from prmkit.lab.study.autolabel_pages import write_outputs  # the pages read this module's names

    write_outputs(root, cfg, summary, command)


STUDY = Study(NAME, stages, summarise, write_pages, prepare)

__all__ = ["ARMS", "METHODS", "STUDY", "Data", "Label", "arm_config", "measure_labels", "pooled_quality",
           "record_cost", "summarise", "value_claim", "within_budget"]
