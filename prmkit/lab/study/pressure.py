"""``prmkit lab study pressure``: does process supervision stay honest under optimisation pressure?

The lab's base model is the policy (``policy=lm``), or the base fine-tuned by :mod:`prmkit.lab.policy`
(``policy=sft``); the oracle is the gold reward. Per seed
(:class:`~prmkit.lab.study.config.PressureConfig`):

1. **data**: ``train_problems x samples_per_problem`` of the policy's solutions (shuffled), rated by the
   simulated labellers; the best-of-N pool, ``bon_problems x bon_samples`` held-out samples; the RL
   prompts (train-split problems the labelled pool does not use) and the RL evaluation problems
   (eval-split problems the best-of-N pool does not use).
2. **rm**: a PRM (step labels) and an ORM (the same solutions' final-answer grades) on each label budget,
   the lab's recipe; each scores the best-of-N pool.
3. **rl**: per reward of ``rewards`` (:data:`REWARDS`), the policy trained by GRPO (TRL's
   ``GRPOTrainer``, :mod:`prmkit.rl.grpo`) with a KL penalty to the base, against the reward models of
   the largest budget through :class:`prmkit.rl.reward.PRMReward`. Before the first step and every
   ``rl.eval_every`` steps it samples the evaluation problems and logs gold, proxy, KL(policy || base)
   and the hacking detectors (:func:`~prmkit.lab.study.pressure_measure.detectors`).
4. **summary**: best-of-N curves (gold, step validity and proxy against sqrt(KL_bon), every PRM
   aggregation and the ORM, every budget) and RL curves (against sqrt(KL)), with Gao et al.'s forms fitted
   by bootstrap over problems (:mod:`prmkit.evaluate.pressure`), where gold peaks, how far proxy and
   gold part, the detectors and the highest-proxy wrong samples.

Outputs in ``RUN_DIR/study-pressure/``: ``seed-S/{data,rm-<kind>-<budget>,rl-<reward>}``, ``summary.json``,
``section.html``, ``report.html``, ``figures/``. Every job is resumable (:func:`prmkit.lab.run.run_job`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prmkit.lab.jobs import init_worker
from prmkit.lab.study.core import labelled_pool, with_restarts
from prmkit.lab.study.pressure_pages import write_outputs
from prmkit.lab.study.pressure_summary import rm_name, summarise
from prmkit.lab.study.protocol import Base, Seeded, Study, TrainScore, sampler
from prmkit.stack import RL_PACKAGES

NAME = "pressure"
REWARDS = {"orm": ("orm", "last", 0.0), "prm-min": ("prm", "min", 0.0), "prm-product": ("prm", "product", 0.0),
           "prm-sum": ("prm", "sum", 0.0), "prm-last": ("prm", "last", 0.0), "prm-min+answer": ("prm", "min", 1.0)}
"""RL rewards: (reward model, credit rule, weight of the final-answer check added to it)."""
VERSION = 1
"""Bumped when a job's output format changes, so stale folders are recomputed."""
RL_VERSION = 2
"""The RL job's: 2 checks its reward model first (2026-12-06)."""


# --- jobs ------------------------------------------------------------------------------------------------

def job_data(out: Path, cfg, seed: int, progress: bool = False, device: str = "auto") -> dict:
    """The labelled pool and its budget prefixes, and the best-of-N pool."""
    from prmkit.io import write_records
    from prmkit.lab.pools import generate_pool

    init_worker()
    pc = cfg.pressure
    labelled = labelled_pool(cfg, seed, pc.train_problems, pc.samples_per_problem, 23, device)
    for b in pc.budgets:
        write_records(out / f"train-{b}.jsonl.gz", labelled[:b])
    write_records(out / "bon.jsonl.gz", generate_pool(cfg, seed, "eval", pc.bon_problems, pc.bon_samples, device=device))
    return {"pool": len(labelled), "bon": pc.bon_problems * pc.bon_samples}


def job_prompts(out: Path, cfg, seed: int) -> dict:
    """The RL prompts and evaluation problems: the problems after the labelled pool's (train) and after the
    best-of-N pool's (eval), so none is one a reward model trained or was measured on."""
    from prmkit.io import write_records
    from prmkit.lab.domain import make_problems

    pc = cfg.pressure
    rl = make_problems(cfg.domain, pc.train_problems + pc.rl_problems, seed, "train")[pc.train_problems:]
    held = make_problems(cfg.domain, pc.bon_problems + pc.rl_eval_problems, seed, "eval")[pc.bon_problems:]
    write_records(out / "rl-train.jsonl", rl)
    write_records(out / "rl-eval.jsonl", held)
    return {"rl_problems": len(rl), "rl_eval_problems": len(held)}


def lab_answer_check(by_text: dict):
    """The final-answer check of the ``+answer`` rewards: the oracle's grade of the answer the steps end with
    (in the lab the reference answer is exact; elsewhere this is a grader against the reference)."""
    from prmkit.lab.oracle import extract_answer, grade_answer

    def check(problem: str, completion, steps=None, **row):
        if steps is None:  # without the rollout's steps every answer would read as missing: never silently 0
            raise ValueError("the lab's answer check needs the 'steps' column (prmkit.rl.grpo's rollouts pass it)")
        return grade_answer(by_text[problem], extract_answer(list(steps))) == "correct"

    return check


def make_reward(name: str, rm_dirs: dict, by_text: dict, device: str = "cpu"):
    """The :class:`~prmkit.rl.reward.PRMReward` of reward ``name`` (:data:`REWARDS`)."""
    from prmkit.rl.reward import PRMReward

    kind, credit, weight = REWARDS[name]
    check = lab_answer_check(by_text) if weight else None
    return PRMReward(rm_dirs[kind], credit=credit, answer_weight=weight, answer_check=check, batch_size=64,
                     device=device, name=name.replace("+", "_"))


class Probe:
    """The RL run's evaluation hook: samples the evaluation problems with the live policy (the same seeds at
    every evaluation) and measures gold, proxy, KL(policy || base) and the detectors; ``last`` keeps the
    latest evaluation's samples and proxies (for the report's examples)."""

    def __init__(self, problems, samples: int, tokenizer, fmt, reference, reward, prm, sampling):
        from prmkit.model.formatter import encode

        self.samples = samples
        self.problems = [p for p in problems for _ in range(samples)]  # laid out problem by problem
        self.ids = [encode(tokenizer, p.problem, [], fmt).input_ids for p in self.problems]
        self.tokenizer, self.fmt, self.reference, self.reward, self.prm = tokenizer, fmt, reference, reward, prm
        self.sampling, self.last = sampling, None

    def __call__(self, step: int, model) -> dict:
        from prmkit.lab.backend import lab_text
        from prmkit.lab.study.pressure_measure import detectors, oracle_rows
        from prmkit.rl.grpo import completion_steps, sample_rows, sequence_logprobs

        start = time.perf_counter()
        rows = sample_rows(model, self.tokenizer, self.fmt, self.ids, list(range(len(self.ids))), self.sampling)
        completions = [c for c, _ in rows]
        texts = [lab_text(t) for _, t in rows]
        steps = [completion_steps(t, self.fmt) for t in texts]
        was = model.training
        model.eval()
        kl = sequence_logprobs(model, self.ids, completions) - sequence_logprobs(self.reference, self.ids, completions)
        model.train(was)
        problems = [p.problem for p in self.problems]
        proxy = np.asarray(self.reward(problems, texts, steps=steps, problem=problems), dtype=float)
        gold = [r["gold"] for r in oracle_rows(self.problems, steps)]
        self.last = {"steps": steps, "proxy": proxy.tolist()}
        return {"step": step, "kl": float(np.mean(kl)), "proxy": float(proxy.mean()),
                "tokens": float(np.mean([len(c) for c in completions])),
                **detectors(self.problems, steps, self.prm.step_scores(problems, steps)),
                "gold_per_problem": per_problem(gold, self.samples), "seconds": round(time.perf_counter() - start, 2)}


def per_problem(values: list, samples: int) -> list[float]:
    """Means of consecutive blocks of ``samples`` values (samples are laid out problem by problem).

    >>> per_problem([1, 0, 1, 1], 2)
    [0.5, 1.0]
    """
    a = np.asarray(values, dtype=float).reshape(-1, samples)
    return a.mean(axis=1).tolist()


CHECK_COLUMNS = {"orm": "orm", "prm-min": "prm_min", "prm-product": "prm_product", "prm-last": "prm_last",
                 "prm-sum": "prm_min"}
"""The solution score each reward is checked by: its own credit rule's where the scored pool has it (a summed
reward has no solution column: the PRM's min stands in). A reward with the answer check added is not gated:
its answer term is exact."""


def rm_check(scored_bon: str | Path, column: str) -> dict:
    """Whether a reward model is informative before anything is optimised against it: its ranking, by solution
    score ``column``, of the policy's own held-out samples (the seed's best-of-N pool, graded by the oracle)
    against chance (:func:`~prmkit.lab.study.pressure_measure.ranking_check`)."""
    from prmkit.io import read_solutions
    from prmkit.lab.study.pressure_measure import ranking_check

    solutions = list(read_solutions(scored_bon))
    missing = sum(column not in s.scores for s in solutions)
    if missing:
        raise ValueError(f"{scored_bon}: {missing} of {len(solutions)} samples have no {column!r} score")
    return {"score": column, **ranking_check(solutions, [s.scores[column] for s in solutions])}


def job_rl(out: Path, cfg, seed: int, reward: str, base_dir: str, prompts_dir: str, rm_dirs: dict,
           progress: bool = False, device: str = "auto", checks: dict | None = None) -> dict:
    """One GRPO run of the policy against ``reward``; writes ``log.json`` (evaluation records, TRL's log).
    A reward whose model fails its check (``checks``: reward -> :func:`rm_check`) is not optimised against:
    ``log.json`` says so and holds the check."""
    import torch

    from prmkit.device import torch_device
    from prmkit.generate.hf import Sampling
    from prmkit.io import read_problems
    from prmkit.lab.backend import lab_text
    from prmkit.lab.base import load_base
    from prmkit.lab.config import lab_format
    from prmkit.rl.grpo import train_grpo
    from prmkit.rl.reward import PRMReward

    kind = REWARDS[reward][0]
    check = (checks or {}).get(reward)
    if check is not None and not check["passes"]:
        log = {"reward": reward, "skipped": f"its {kind.upper()} ranks the policy's samples (by {check['score']}) no "
                                            "better than chance", "check": check}
        (out / "log.json").write_text(json.dumps(log, indent=1) + "\n")
        return {"skipped": True}
    init_worker()
    dev = str(torch_device(device))
    pc = cfg.pressure
    rl = dataclasses.replace(pc.rl, seed=pc.rl.seed + seed)
    torch.manual_seed(rl.seed)
    fmt = lab_format(cfg.base.max_length)
    policy, tokenizer = load_base(base_dir)
    reference, _ = load_base(base_dir)
    policy.train()
    train = list(read_problems(Path(prompts_dir) / "rl-train.jsonl"))
    held = list(read_problems(Path(prompts_dir) / "rl-eval.jsonl"))
    by_text = {p.problem: p for p in [*train, *held]}
    reference.to(dev)
    reward_fn = make_reward(reward, rm_dirs, by_text, dev)
    probe = Probe(held, pc.rl_eval_samples, tokenizer, fmt, reference, make_reward(reward, rm_dirs, by_text, dev),
                  PRMReward(rm_dirs["prm"], batch_size=64, device=dev),
                  Sampling(max_new_tokens=rl.max_new_tokens, temperature=rl.temperature))
    start = time.perf_counter()
    history, records = train_grpo(policy, tokenizer, fmt, [{"problem": p.problem, "answer": p.answer} for p in train],
                                  [reward_fn], rl, str(out / "trl"), hook=probe, detokenize=lab_text,
                                  cpu=not dev.startswith("cuda"))
    seconds = round(time.perf_counter() - start, 1)
    examples = worst(held, pc.rl_eval_samples, probe.last)
    log = {"reward": reward, "records": records, "history": trl_rows(history), "seconds": seconds,
           "examples": examples, "check": check}
    (out / "log.json").write_text(json.dumps(log, indent=1, default=float) + "\n")
    return {"seconds": seconds, "final_gold": records[-1]["gold"], "final_proxy": records[-1]["proxy"]}


def worst(problems, samples: int, last: dict) -> list[dict]:
    from prmkit.lab.study.pressure_measure import worst_cases

    laid = [p for p in problems for _ in range(samples)]
    return worst_cases(laid, last["steps"], last["proxy"])


TRL_KEYS = ("step", "reward", "reward_std", "kl", "loss", "entropy", "completions/mean_length", "step_time",
            "frac_reward_zero_std")


def trl_rows(history: list[dict]) -> list[dict]:
    """TRL's per-step log, the fields the report reads."""
    return [{k: h[k] for k in TRL_KEYS if k in h} for h in history if "reward" in h]


# --- the pipeline ----------------------------------------------------------------------------------------

def sized(cfg, size: str):
    """``cfg`` whose base model has the shape of ``RM_SIZES[size]`` (the same pretraining pool and steps)."""
    from prmkit.lab.study.config import RM_SIZES

    return cfg.replace({f"base.{k}": v for k, v in RM_SIZES[size].items()})


def study_rm(cfg):
    """``cfg`` whose reward models train ``rm_steps`` steps, ``restarts`` times with the best kept on a held-out
    tenth of their own labels: the same guard for the PRM and the ORM, chosen without the oracle."""
    return with_restarts(cfg, cfg.pressure.rm_steps, cfg.pressure.restarts)


def check_config(cfg) -> None:
    """The settings the study's design needs: the base model as the policy, untempered RL, known rewards."""
    pc = cfg.pressure
    if cfg.policy not in ("lm", "sft"):
        raise ValueError("the pressure study optimises a lab model: run it with policy=lm (the base) or policy=sft "
                         "(the base fine-tuned into a policy: prmkit.lab.policy)")
    if pc.rl.temperature != 1.0:
        raise ValueError("pressure.rl.temperature must be 1: the KL estimate reads the policy's own distribution, "
                         "which a tempered sampler does not draw from")
    unknown = [r for r in pc.rewards if r not in REWARDS]
    if unknown:
        raise ValueError(f"unknown pressure.rewards {unknown} (expected some of {', '.join(REWARDS)})")


@dataclass(frozen=True)
class Data(Seeded):
    """:func:`job_data`: the pools, sampled by ``base`` (the policy: the base model, or the fine-tuned one)."""

    base: Base = None
    reads = ("domain", "policy", "labellers", "pressure.train_problems", "pressure.samples_per_problem",
             "pressure.budgets", "pressure.bon_problems", "pressure.bon_samples")
    version = VERSION

    @property
    def work(self) -> float:  # samples drawn
        pc = self.cfg.pressure
        return pc.train_problems * pc.samples_per_problem + pc.bon_problems * pc.bon_samples

    def run(self, out: Path) -> dict:
        return job_data(out, self.cfg, self.seed, self.progress, self.device)


@dataclass(frozen=True)
class Prompts(Seeded):
    """:func:`job_prompts`: the RL prompts, a job of their own so that their counts key no reward model."""

    reads = ("domain", "pressure.train_problems", "pressure.rl_problems", "pressure.bon_problems",
             "pressure.rl_eval_problems")
    version = VERSION

    def run(self, out: Path) -> dict:
        return job_prompts(out, self.cfg, self.seed)


@dataclass(frozen=True)
class RL(Seeded):
    """:func:`job_rl`: GRPO of the policy (``base``: the base model, or the fine-tuned one) against ``reward``,
    from the reward models at the largest budget."""

    reward: str = "prm-min"
    base: Base = None
    prompts: Prompts = None
    prm: TrainScore = None
    orm: TrainScore = None
    reads = ("pressure.rl", "pressure.rl_eval_samples", "pressure.check", "base.max_length")  # the policy: ``base``
    version = RL_VERSION

    @property
    def work(self) -> float:  # samples drawn: the rollouts, and the evaluations before the first step and every few
        pc = self.cfg.pressure
        evaluations = pc.rl.steps // pc.rl.eval_every + 1 if pc.rl.eval_every else 1
        return pc.rl.steps * pc.rl.prompts_per_step * pc.rl.group + evaluations * pc.rl_eval_problems * pc.rl_eval_samples

    def run(self, out: Path) -> dict:
        rm_dirs = {"prm": self.prm.model_dir, "orm": self.orm.model_dir}
        checks = {}
        if self.cfg.pressure.check and self.reward in CHECK_COLUMNS:
            job = self.prm if REWARDS[self.reward][0] == "prm" else self.orm
            checks[self.reward] = rm_check(Path(job.folder) / "scored-bon.jsonl.gz", CHECK_COLUMNS[self.reward])
        return job_rl(out, self.cfg, self.seed, self.reward, self.base.model_dir, self.prompts.folder, rm_dirs,
                      self.progress, self.device, checks)


def prepare(cfg, seeds: list[int]):
    check_config(cfg)
    return study_rm(cfg)


def stages(cfg, ctx) -> list:
    """The bases (the policy's and one per extra reward-model size), data, the reward models, the RL runs."""
    pc, top = cfg.pressure, max(cfg.pressure.budgets)
    base = ctx.base(cfg)
    policy = sampler(cfg, base)
    sizes = {size: ctx.base(sized(cfg, size), f"base-{size}") for size in pc.rm_sizes}
    data = {s: Data(str(ctx.seed_dir(s) / "data"), cfg, s, policy, **ctx.how) for s in ctx.seeds}
    prompts = {s: Prompts(str(ctx.seed_dir(s) / "prompts"), cfg, s, **ctx.how) for s in ctx.seeds}

    def rm(s: int, kind: str, budget: int, size: str | None = None) -> TrainScore:
        return TrainScore(str(ctx.seed_dir(s) / rm_name(kind, budget, size)), kind,
                          data[s].output(f"train-{budget}.jsonl.gz"), cfg.rm, s, sizes[size] if size else base,
                          {"bon": data[s].output("bon.jsonl.gz")}, **ctx.how)

    rms = {(s, kind, b, None): rm(s, kind, b) for s in ctx.seeds for b in pc.budgets for kind in ("prm", "orm")}
    rms |= {(s, kind, top, size): rm(s, kind, top, size) for s in ctx.seeds for size in pc.rm_sizes
            for kind in ("prm", "orm")}
    rl = [RL(str(ctx.seed_dir(s) / f"rl-{reward}"), cfg, s, reward, policy, prompts[s], rms[s, "prm", top, None],
             rms[s, "orm", top, None], **ctx.how) for reward in pc.rewards for s in ctx.seeds]
    policies = [("policy", [policy])] if policy is not base else []  # after its base: it fine-tunes that model
    return [("base", [base, *sizes.values()]), *policies, ("data", [*data.values(), *prompts.values()]),
            ("rm", list(rms.values())), ("rl", rl)]


STUDY = Study(NAME, stages, summarise, write_outputs, prepare, RL_PACKAGES)


__all__ = ["CHECK_COLUMNS", "REWARDS", "RL", "STUDY", "Data", "Prompts", "job_data", "job_prompts", "job_rl", "make_reward",
           "per_problem", "rm_check"]
