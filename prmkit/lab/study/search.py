"""``prmkit lab study search``: which search strategy wins at which budget and difficulty, against exact step truth.

The policy is the lab's language model (``policy=sft`` by default: the base fine-tuned by
:mod:`prmkit.lab.policy`), searched through ``prmkit search``'s own code (:mod:`prmkit.search`: the
``lab-lm`` backend behind :class:`~prmkit.search.adapters.BackendExpander`, the lab PRM behind
:class:`~prmkit.search.adapters.PRMScorer`). Per seed (:class:`~prmkit.lab.study.config.SearchStudyConfig`):

1. **data**: ``train_problems x samples_per_problem`` of the policy's solutions, rated by the simulated
   labellers (phase 2), and the held-out problems (a job of their own: their count keys no reward model);
2. **rm**: the PRM, by the lab's recipe, ``restarts`` runs with the best kept on a held-out tenth of its labels;
3. **pool**: ``max(budgets)`` whole samples of every held-out problem, each scored by the PRM, with the tokens
   it took to generate and to score: best-of-N and weighted best-of-N are read from it
   (:mod:`prmkit.lab.study.search_summary`); and ``difficulty_samples`` more of each, from a seed stream of their
   own, whose pass@1 is the problem's difficulty (not the pool's: a problem binned hard by its own pool would
   have few right answers there by construction);
4. **search**: every tree strategy (beam, DVTS, particles) at every budget, with the PRM and with the oracle
   (:class:`OracleScorer`: exact step truth, 1 for a valid step and 0 for a wrong one) as the prefix scorer.

Outputs in ``RUN_DIR/study-search/``: ``seed-S/{data,problems,prm,pool,difficulty,<strategy>-<scorer>-<n>}``,
``summary.json``, ``section.html``, ``report.html``, ``figures/``. Every job is resumable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prmkit.lab.study.core import AGGREGATION, labelled_pool, with_restarts
from prmkit.lab.study.protocol import Base, Job, Seeded, Study, TrainScore, sampler
from prmkit.lab.study.search_pages import write_outputs
from prmkit.lab.study.search_summary import read_problems, summarise, tree_name

NAME = "search"
VERSION = 1
"""Bumped when a job's output format changes, so stale folders are recomputed."""
DIFFICULTY_STREAM = 1_000_003
"""Added to the seed of the difficulty samples: a stream of their own, apart from the pool's and the searches'."""
STEP_TOKENS = 64
"""Most tokens one step may take when a tree strategy asks for one step: a bound on a runaway step (one cut
short is kept as written), far above a lab step's length."""


# --- the world a search sees --------------------------------------------------------------------------------

def expander(cfg, policy_dir: str, seed: int, device: str, one_step: bool):
    """The policy behind :class:`~prmkit.search.adapters.BackendExpander`, as ``prmkit search --backend lab-lm``
    makes it: one step a call (the step marker as its stop string) for the tree strategies, whole samples for
    the pool."""
    from prmkit.generate.config import GenerateConfig
    from prmkit.lab.backend import lab_lm_backend
    from prmkit.lab.config import lab_format
    from prmkit.lab.pools import LM_SAMPLING
    from prmkit.search.adapters import BackendExpander

    sampling = dict(LM_SAMPLING, max_new_tokens=STEP_TOKENS) if one_step else LM_SAMPLING
    gen = GenerateConfig(backend="lab-lm", seed=seed, device=device,
                         stop=[lab_format().marker] if one_step else [], **sampling)
    return BackendExpander(lab_lm_backend(gen, log=lambda _: None, lab=cfg, folder=policy_dir))


class OracleScorer:
    """Exact step truth as a prefix scorer: P(correct) 1 for a step the lab's oracle rates valid (a neutral step
    included), 0 for a wrong one. The tokens it reports are the ones ``prm`` (a
    :class:`~prmkit.search.adapters.PRMScorer`) would read for the same prefix, so the oracle's searches are
    charged as the PRM's are."""

    def __init__(self, prm=None):
        self.prm = prm

    def score(self, items):
        from prmkit.lab.domains import oracle_labels
        from prmkit.schema import Completion, Solution, Step

        tokens = ([len(e.input_ids) for e in self.prm.scorer.encodings([p.problem for p, _ in items],
                                                                        [list(s) for _, s in items])]
                  if self.prm is not None else [0] * len(items))
        out = []
        for (problem, steps), n in zip(items, tokens):
            labels = oracle_labels(Solution(problem, [Step([Completion(t)]) for t in steps]))
            out.append((np.array([1.0 if lab.rating >= 0 else 0.0 for lab in labels]), n))
        return out


def prm_scorer(prm_dir: str, device: str):
    from prmkit.device import torch_device
    from prmkit.search.adapters import PRMScorer

    return PRMScorer(prm_dir, device=str(torch_device(device)), batch_size=64)


# --- jobs ------------------------------------------------------------------------------------------------------

def job_data(out: Path, cfg, seed: int, device: str = "auto") -> dict:
    """The PRM's training set: the policy's samples of train-split problems, rated by the simulated labellers."""
    from prmkit.io import write_records
    from prmkit.lab.jobs import init_worker

    init_worker()
    sc = cfg.search
    return {"labelled": write_records(out / "train.jsonl.gz", labelled_pool(cfg, seed, sc.train_problems,
                                                                          sc.samples_per_problem, 35, device))}


def job_problems(out: Path, cfg, seed: int) -> dict:
    """The held-out problems searched: the eval split's first ``search.problems``."""
    from prmkit.io import write_records

    return {"problems": write_records(out / "problems.jsonl", cfg.lab_domain.make_problems(
        cfg.family("eval"), cfg.search.problems, seed, "eval"))}


def job_pool(out: Path, cfg, seed: int, policy_dir: str, problems_file: str, prm_dir: str, device: str = "auto") -> dict:
    """``max(budgets)`` whole samples of every problem: steps, the PRM's step scores, generated and scored tokens."""
    from prmkit.io import write_records
    from prmkit.lab.jobs import init_worker

    init_worker()
    problems = read_problems(problems_file)
    n = max(cfg.search.budgets)
    exp = expander(cfg, policy_dir, seed, device, one_step=False)
    try:
        samples = exp.rollout([(p, [], n) for p in problems])
    finally:
        exp.backend.close()
    flat = [(p, ext) for p, exts in zip(problems, samples) for ext in exts]
    scored = prm_scorer(prm_dir, device).score([(p, ext.steps) for p, ext in flat])
    rows = [{"problem": i // n, "steps": ext.steps, "scores": [float(x) for x in probs], "tokens": ext.tokens,
             "prm_tokens": read} for i, ((_, ext), (probs, read)) in enumerate(zip(flat, scored))]
    return {"samples": write_records(out / "pool.jsonl.gz", rows)}


def job_tree(out: Path, cfg, seed: int, strategy: str, n: int, scorer: str, policy_dir: str, problems_file: str,
             prm_dir: str, device: str = "auto") -> dict:
    """One tree strategy at budget ``n`` with ``scorer`` (``prm`` or ``oracle``) over every problem: its records
    (:meth:`~prmkit.search.core.SearchResult.record`, the trace left out)."""
    from prmkit.io import write_records
    from prmkit.lab.jobs import init_worker
    from prmkit.search.strategies import SearchConfig, search

    init_worker()
    sc = cfg.search
    problems = read_problems(problems_file)
    prm = prm_scorer(prm_dir, device)
    exp = expander(cfg, policy_dir, seed, device, one_step=True)
    search_cfg = SearchConfig(strategy=strategy, n=n, m=sc.m, max_depth=sc.max_depth, seed=seed,
                              aggregation=AGGREGATION)
    try:
        results = search(problems, exp, prm if scorer == "prm" else OracleScorer(prm), search_cfg)
    finally:
        exp.backend.close()
    rows = [{k: v for k, v in r.record().items() if k != "trace"} | {"candidates": len(r.trace)} for r in results]
    return {"problems": write_records(out / "results.jsonl.gz", rows)}


@dataclass(frozen=True)
class Data(Seeded):
    """:func:`job_data`, sampled by ``policy``."""

    policy: Base = None
    reads = ("domain", "policy", "labellers", "search.train_problems", "search.samples_per_problem")
    version = VERSION

    @property
    def work(self) -> float:
        return self.cfg.search.train_problems * self.cfg.search.samples_per_problem

    def run(self, out: Path) -> dict:
        return job_data(out, self.cfg, self.seed, self.device)


@dataclass(frozen=True)
class Problems(Seeded):
    """:func:`job_problems`."""

    reads = ("domain", "search.problems")
    version = VERSION

    def run(self, out: Path) -> dict:
        return job_problems(out, self.cfg, self.seed)


@dataclass(frozen=True)
class Pool(Seeded):
    """:func:`job_pool`."""

    policy: Base = None
    problems: Problems = None
    prm: TrainScore = None
    reads = ("search.budgets",)
    version = VERSION

    @property
    def work(self) -> float:
        return self.cfg.search.problems * max(self.cfg.search.budgets)

    def run(self, out: Path) -> dict:
        return job_pool(out, self.cfg, self.seed, self.policy.model_dir, str(self.problems.output("problems.jsonl").path),
                        self.prm.model_dir, self.device)


def job_difficulty(out: Path, cfg, seed: int, policy_dir: str, problems_file: str, device: str = "auto") -> dict:
    """Each problem's pass@1 in ``search.difficulty_samples`` samples of its own (seed stream
    ``seed + DIFFICULTY_STREAM``)."""
    from prmkit.io import write_records
    from prmkit.lab.jobs import init_worker
    from prmkit.lab.pools import sample_lm

    init_worker()
    problems, k = read_problems(problems_file), cfg.search.difficulty_samples
    pool = sample_lm(cfg, problems, k, seed + DIFFICULTY_STREAM, device=device, folder=policy_dir)
    right = np.array([s.grade == "correct" for s in pool], float).reshape(len(problems), k)
    write_records(out / "difficulty.jsonl", [{"samples": k, "pass1": right.mean(axis=1).tolist()}])
    return {"problems": len(problems), "pass1": float(right.mean())}


@dataclass(frozen=True)
class Difficulty(Seeded):
    """:func:`job_difficulty`."""

    policy: Base = None
    problems: Problems = None
    reads = ("search.difficulty_samples",)
    version = VERSION

    @property
    def work(self) -> float:
        return self.cfg.search.problems * self.cfg.search.difficulty_samples

    def run(self, out: Path) -> dict:
        return job_difficulty(out, self.cfg, self.seed, self.policy.model_dir,
                              str(self.problems.output("problems.jsonl").path), self.device)


@dataclass(frozen=True)
class Tree(Seeded):
    """:func:`job_tree`."""

    strategy: str = "beam"
    n: int = 16
    scorer: str = "prm"
    policy: Base = None
    problems: Problems = None
    prm: TrainScore = None
    reads = ("search.m", "search.max_depth")
    version = VERSION

    @property
    def plan_kind(self) -> str:  # the oracle's searches run no PRM: they cost less per unit
        return f"Tree/{self.scorer}"

    @property
    def work(self) -> float:
        return self.n * self.cfg.search.problems

    def run(self, out: Path) -> dict:
        return job_tree(out, self.cfg, self.seed, self.strategy, self.n, self.scorer, self.policy.model_dir,
                        str(self.problems.output("problems.jsonl").path), self.prm.model_dir, self.device)


def prepare(cfg, seeds: list[int]):
    if cfg.policy not in ("lm", "sft"):
        raise ValueError("the search study searches a lab language model: run it with policy=sft (the default: the "
                         "base fine-tuned into a policy) or policy=lm (the base)")
    return with_restarts(cfg, cfg.search.rm_steps, cfg.search.restarts)


def stages(cfg, ctx) -> list[tuple[str, list[Job]]]:
    """The base and the policy, data and problems, the PRM, the pool, the searches (largest budgets first: the
    longest jobs start while the others queue)."""
    sc = cfg.search
    base = ctx.base(cfg)
    policy = sampler(cfg, base)
    data = {s: Data(str(ctx.seed_dir(s) / "data"), cfg, s, policy, **ctx.how) for s in ctx.seeds}
    problems = {s: Problems(str(ctx.seed_dir(s) / "problems"), cfg, s, **ctx.how) for s in ctx.seeds}
    prm = {s: TrainScore(str(ctx.seed_dir(s) / "prm"), "prm", data[s].output("train.jsonl.gz"), cfg.rm, s, base, {},
                         **ctx.how) for s in ctx.seeds}
    pools = [Pool(str(ctx.seed_dir(s) / "pool"), cfg, s, policy, problems[s], prm[s], **ctx.how) for s in ctx.seeds]
    pools += [Difficulty(str(ctx.seed_dir(s) / "difficulty"), cfg, s, policy, problems[s], **ctx.how) for s in ctx.seeds]
    trees = [Tree(str(ctx.seed_dir(s) / tree_name(strategy, scorer, n)), cfg, s, strategy, n, scorer, policy,
                  problems[s], prm[s], **ctx.how)
             for n in sorted(sc.budgets, reverse=True) for s in ctx.seeds for strategy in sc.strategies
             for scorer in sc.scorers]
    policies = [("policy", [policy])] if policy is not base else []  # after its base: it fine-tunes that model
    return [("base", [base]), *policies, ("data", [*data.values(), *problems.values()]), ("rm", list(prm.values())),
            ("pool", pools), ("search", trees)]


STUDY = Study(NAME, stages, summarise, write_outputs, prepare)


__all__ = ["DIFFICULTY_STREAM", "STUDY", "Data", "Difficulty", "OracleScorer", "Pool", "Problems", "Tree", "expander",
           "job_data", "job_difficulty", "job_pool", "job_problems", "job_tree"]
