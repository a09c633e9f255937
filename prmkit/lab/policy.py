"""The ``sft`` policy: the lab's base fine-tuned into a policy worth optimising, cached like the base.

The base model is pretrained on the rule-based generator's output, misconceptions and all, and rarely
answers the calibrated family right (``docs/pressure.md``): too weak a policy to optimise (issue 34, "a policy
worth optimising"). Two stages, each fine-tuning on samples that pass ``sft.keep`` (``correct``: a right final
answer; ``valid``: and every step valid by the oracle) by next-token prediction (``prmkit train lm``, the
product's loop), ``sft.epochs`` passes:

1. **the warm start** (``sft.warm_start`` samples, 10,000 by default; 0 skips it): the rule-based generator's
   passing samples (the generator the base was pretrained on, whose right answers play the part of the paper's
   step-format fine-tuning set);
2. **expert iteration** (rejection-sampling SFT), while pass@1 on the measure problems is below ``sft.target``
   and for at most ``sft.rounds`` rounds: sample ``sft.problems x sft.samples`` solutions of fresh problems
   (split ``sft-<round>``) at temperature 1 with the current model (:func:`prmkit.lab.pools.sample_lm`, the
   product's generator), keep the passing ones, fine-tune on them. With the defaults one round follows the warm
   start and ends past the target; from the base alone, one round left pass@1 where it was
   (``docs/pressure.md``).

After each stage, pass@1, valid@1 (every step valid and the answer right) and the share of right answers reached
through a wrong step are measured on ``sft.measure_problems x sft.measure_samples`` samples of another split
(``sft-measure``).

Every measurement (round 0 is the base) is kept in ``policy.json`` beside the weights, with its ``source``
(``base``, ``rules`` for the warm start, ``self`` for a round of expert iteration). The cache folder is
``$PRMKIT_CACHE/lab-policy/<key>``, keyed by the base's key and every ``sft`` setting (:func:`policy_key`);
it is built in a ``.part`` folder whose finished rounds are kept, so a killed fine-tuning resumes at the round
it stopped in.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import time
from pathlib import Path

VERSION = 1
"""Bumped when the fine-tuning changes what it writes, so stale policies are rebuilt."""
MEASURES = ("pass@1", "step_limit@1", "right_answer_wrong_step")
"""What :func:`measure` keeps of :func:`prmkit.lab.stats.pool_stats` (step_limit@1 is valid@1)."""


def policy_key(cfg, device: str = "auto") -> str:
    """The cache key of ``cfg``'s ``sft`` policy: its base's key and every fine-tuning setting."""
    from prmkit.lab.base import base_key
    from prmkit.lab.domain import config_hash

    parts = {"base": base_key(cfg.base, cfg, device), "sft": config_hash(cfg.sft), "version": VERSION}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def policy_path(cfg, device: str = "auto") -> Path:
    from prmkit.lab.base import cache_dir

    return cache_dir() / "lab-policy" / policy_key(cfg, device)


def policy_folder(cfg, progress: bool = False, log=print, device: str = "auto") -> Path:
    """The folder of the model that samples ``cfg``'s pools: the base (``policy=lm``) or the fine-tuned base
    (``policy=sft``), made if not cached."""
    from prmkit.lab.base import ensure_base

    if cfg.policy == "sft":
        return ensure_policy(cfg, progress, log, device)
    return ensure_base(cfg, progress=progress, log=log, device=device)


def job_policy(out: Path, cfg, progress: bool, device: str = "auto") -> dict:
    """The study job of the ``sft`` policy: made (or found) in the cache; its record written into ``out``."""
    folder = ensure_policy(cfg, progress, log=lambda *a: None, device=device)
    info = json.loads((folder / "policy.json").read_text())
    (out / "policy.json").write_text(json.dumps({**info, "path": str(folder)}, indent=2) + "\n")
    return {"path": str(folder), "rounds": sum(r["source"] == "self" for r in info["rounds"]),
            "pass@1": info["rounds"][-1]["pass@1"]}


def ensure_policy(cfg, progress: bool = False, log=print, device: str = "auto") -> Path:
    """The folder of ``cfg``'s fine-tuned policy, made by :func:`expert_iteration` if not cached."""
    from prmkit.lab.base import build_once

    def fine_tune(folder: Path) -> None:
        expert_iteration(cfg, folder, progress, log, device)
        log(f"policy fine-tuned -> {folder}")

    return build_once(policy_path(cfg, device), "policy.json", fine_tune)


def expert_iteration(cfg, folder: Path, progress: bool, log, device: str) -> None:
    """Fine-tune ``cfg``'s base round by round into ``folder`` (see the module docstring)."""
    from prmkit.lab.base import ensure_base

    start = time.perf_counter()
    sft = cfg.sft
    tmp = folder.with_name(f".{folder.name}.part")
    current = ensure_base(cfg, progress=progress, log=log, device=device)
    rounds = [_measured(tmp / "round-0", cfg, current, device, {"source": "base", "kept": 0})]
    if sft.warm_start:
        work = tmp / "warm"
        if not (work / "round.json").is_file():
            kept = _fine_tune(work, cfg, current, 0, progress, device, rules=True)
            _measured(work, cfg, work / "model", device, {"source": "rules", "kept": kept})
        rounds.append(json.loads((work / "round.json").read_text()))
        current = work / "model"
        log(f"warm start: pass@1 {rounds[-1]['pass@1']:.3f} from {rounds[-1]['kept']} of the generator's samples")
    for r in range(1, sft.rounds + 1):
        if rounds[-1]["pass@1"] >= sft.target:
            break
        work = tmp / f"round-{r}"
        if not (work / "round.json").is_file():
            kept = _fine_tune(work, cfg, current, r, progress, device)
            _measured(work, cfg, work / "model", device, {"source": "self", "kept": kept})
        rounds.append(json.loads((work / "round.json").read_text()))
        current = work / "model"
        log(f"expert iteration round {r}: pass@1 {rounds[-1]['pass@1']:.3f} from {rounds[-1]['kept']} kept samples")
    _publish(folder, tmp, current, cfg, rounds, round(time.perf_counter() - start, 1))


def _measured(work: Path, cfg, model: Path, device: str, extra: dict) -> dict:
    """The round's record (``work/round.json``): its measures of ``model``, written once."""
    path = work / "round.json"
    if not path.is_file():
        work.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**extra, **measure(cfg, model, device)}, indent=2) + "\n")
    return json.loads(path.read_text())


def measure(cfg, model: Path, device: str = "auto") -> dict:
    """pass@1, valid@1 (``step_limit@1``) and right-answer-wrong-step of ``model``'s samples of the
    ``sft-measure`` problems (the same problems and seeds for every round)."""
    sft = cfg.sft
    return measures(_sample(cfg, model, "sft-measure", sft.measure_problems, sft.measure_samples, device))


def measures(pool: list) -> dict:
    """:data:`MEASURES` of a graded pool (:func:`prmkit.lab.stats.pool_stats`)."""
    from prmkit.lab.stats import pool_stats

    stats = pool_stats(pool)
    return {k: stats[k] for k in MEASURES}


def measure_pool(cfg, seed: int, problems: int, samples: int, split: str = "eval", device: str = "auto") -> dict:
    """:data:`MEASURES` of ``cfg``'s policy (``lm``: the base; ``sft``: the fine-tuned base) on the first
    ``problems x samples`` of its ``split`` pool for ``seed``: what the lab run and the studies would sample."""
    from prmkit.lab.pools import generate_pool

    return measures(generate_pool(cfg, seed, split, problems, samples, device=device))


def _fine_tune(work: Path, cfg, model: Path, r: int, progress: bool, device: str, rules: bool = False) -> int:
    """Sample round ``r``'s problems with ``model`` (``rules``: the warm start's, from the rule-based generator),
    keep the passing samples, train ``model`` on them into ``work/model``; the number kept."""
    from prmkit.io import write_records
    from prmkit.train.loop import train

    sft = cfg.sft
    data = work / "kept.jsonl.gz"
    if not data.is_file():
        if rules:
            pool = rules_passing(cfg)
        else:
            pool = _sample(cfg, model, f"sft-{r}", sft.problems, sft.samples, device)
        kept = [s for s in pool if passes(s, sft.keep)]
        if not kept:
            stage = "the warm start" if rules else f"expert iteration round {r}"
            raise RuntimeError(f"{stage}: none of {len(pool)} samples passed keep={sft.keep!r}; "
                               "raise sft.problems or sft.samples")
        part = work / "kept.part.jsonl.gz"  # renamed into place: a killed round never leaves a short file
        write_records(part, kept)
        os.replace(part, data)
    from prmkit.lab.base import count_lines

    n = count_lines(data)
    train(sft_config(cfg, data, model, work / "model", n, r, progress, device))  # resumes from its checkpoints
    return n


RULES_CHUNK = 500
"""Problems the warm start samples from the rule-based generator at a time."""


def rules_passing(cfg) -> list:
    """The first ``sft.warm_start`` samples of the rule-based generator (``sft.samples`` per problem of the
    ``sft-rules`` split, ``RULES_CHUNK`` problems at a time) that pass ``sft.keep``."""
    sft, domain, kept, chunk = cfg.sft, cfg.lab_domain, [], 0
    while len(kept) < sft.warm_start:
        if chunk == 1000:
            raise RuntimeError(f"the generator gave only {len(kept)} samples passing keep={sft.keep!r} in "
                               f"{chunk * RULES_CHUNK} problems; lower sft.warm_start")
        problems = domain.make_problems(cfg.domain, RULES_CHUNK, sft.seed, f"sft-rules-{chunk}")
        kept += [s for s in domain.generate(problems, cfg.generator, sft.samples, sft.seed) if passes(s, sft.keep)]
        chunk += 1
    return kept[:sft.warm_start]


def passes(solution, keep: str) -> bool:
    """Whether a graded lab sample is kept: ``correct`` (right answer) or ``valid`` (right answer, every step
    valid by the domain's oracle)."""
    if solution.grade != "correct":
        return False
    if keep == "correct":
        return True
    from prmkit.lab.domains import oracle_labels

    return all(lab.rating >= 0 for lab in oracle_labels(solution))


def _sample(cfg, model: Path, split: str, problems: int, samples: int, device: str) -> list:
    from prmkit.lab.pools import sample_lm

    probs = cfg.lab_domain.make_problems(cfg.domain, problems, cfg.sft.seed, split)
    return sample_lm(cfg, probs, samples, cfg.sft.seed, device=device, folder=model)


def sft_config(cfg, data: Path, model: Path, out: Path, n: int, r: int, progress: bool, device: str):
    """The :class:`~prmkit.train.config.TrainConfig` of round ``r``: the base's pretraining recipe on the ``n``
    kept samples in ``data``, from ``model``, at ``sft.lr`` for ``sft.epochs`` passes (a batch no larger than
    ``n``)."""
    from prmkit.lab.base import pretrain_config

    sft = cfg.sft
    batch = min(sft.batch_size, n)
    steps = max(1, math.ceil(sft.epochs * n / batch))
    recipe = pretrain_config(cfg.base, out.parent, progress, device)
    return dataclasses.replace(recipe, data=str(data), out=str(out), base_model=str(model), max_steps=steps,
                               batch_size=batch, lr=sft.lr, warmup_steps=min(sft.warmup, steps // 2),
                               seed=sft.seed + r)


def _publish(folder: Path, tmp: Path, model: Path, cfg, rounds: list[dict], seconds: float) -> None:
    """Copy the final model into ``folder`` with ``policy.json`` (its rounds' measures), atomically."""
    staging = folder.with_name(f".{folder.name}.publish")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(model, staging, ignore=shutil.ignore_patterns("checkpoints"))
    info = {"key": folder.name, "sft": dataclasses.asdict(cfg.sft), "rounds": rounds, "seconds": seconds}
    (staging / "policy.json").write_text(json.dumps(info, indent=2) + "\n")
    os.replace(staging, folder)
    shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["MEASURES", "ensure_policy", "expert_iteration", "job_policy", "measure", "measure_pool", "measures", "passes",
           "policy_folder", "policy_key", "policy_path", "rules_passing"]
