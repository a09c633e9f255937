"""What each reward model of a lab run trains and is validated on: the equal-data pair, the paper's two
data arms, and the one validation split that every arm of a seed shares.

- **Equal data** (``prm``, ``orm``): both on the same uniform samples of the training problems, the
  PRM on the simulated labellers' step ratings, the ORM on the samples' final-answer grades.
- **The paper's arms** (``prm_paper``, ``orm_paper``; ``LabConfig.paper_arms``): the PRM on as many
  labelled solutions, *chosen* as PRM800K's were (``../shared/docs/method.md``, "Active learning"): a
  fixed selector, the seed's equal-data PRM, scores ``orm_ratio`` x as many uniform candidates per
  problem, and :func:`prmkit.select.convincing_wrong_answer` keeps :data:`WRONG_SHARE` of them as the
  most convincing wrong-answer samples and the rest as the most convincing of what remains; the
  labellers then rate the chosen. The ORM on all those candidates, graded by final answer (labels that
  cost nothing: the paper's ORM had about 10x PRM800K's solutions), trained to convergence like
  every arm (early stopping on the shared validation split).
- **The validation split** (:func:`held_problems`): a seeded tenth of the training problems, never
  trained on by any arm. Its uniform samples validate every arm (restarts, early stopping): a PRM
  reads their step labels, an ORM their grades (the whole solutions), so the arms are chosen on the
  same solutions.

>>> arm_of("prm_paper"), arm_of("orm"), kind_of("orm_paper")
('paper', 'equal', 'orm')
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

PAPER = {"prm": "prm_paper", "orm": "orm_paper"}
"""Score (and job) names of the paper's arms by kind."""
WRONG_SHARE = 0.8
"""The share of each selected set that is the most convincing wrong answers (the paper's 80/20 mix)."""
VALID_FRACTION = 0.1
"""The share of the training problems held out as every arm's validation split."""


def arm_of(name: str) -> str:
    return "paper" if name in PAPER.values() else "equal"


def kind_of(name: str) -> str:
    return name.split("_")[0].rstrip("0123456789")


def held_problems(data_dir: str | Path, seed: int) -> set[str]:
    """The training problems of the validation split (by problem id), the same for every arm of ``seed``."""
    from prmkit.io import read_solutions
    from prmkit.train.data import split_by_problem

    _, held = split_by_problem(list(read_solutions(Path(data_dir) / "train.jsonl.gz")), VALID_FRACTION, seed)
    return {s.problem.id or s.problem.problem for s in held}


def _key(solution) -> str:
    return solution.problem.id or solution.problem.problem


def training_set(name: str, count: int, data_dir: str | Path, select_dir: str | Path, held: set[str]) -> list:
    """The first ``count`` solutions of arm ``name``'s data, less the validation problems."""
    from prmkit.io import read_solutions

    data_dir = Path(data_dir)
    source = {("prm", "equal"): data_dir / "labelled.jsonl.gz", ("orm", "equal"): data_dir / "train.jsonl.gz",
              ("orm", "paper"): data_dir / "orm.jsonl.gz"}.get((kind_of(name), arm_of(name)))
    if source is None:  # the paper's PRM: the selected and labelled set
        source = Path(select_dir) / "selected.jsonl.gz"
    return [s for s in list(read_solutions(source))[:count] if _key(s) not in held]


def validation_set(kind: str, budget: int, data_dir: str | Path, held: set[str]) -> list:
    """The shared validation solutions among the first ``budget`` uniform samples (so a smaller label budget
    validates on its own labels only): labelled for a PRM, whole and graded for an ORM. The same
    solutions for every arm at one budget."""
    from prmkit.io import read_solutions

    name = "labelled" if kind == "prm" else "train"
    return [s for s in list(read_solutions(Path(data_dir) / f"{name}.jsonl.gz"))[:budget] if _key(s) in held]


def count_of(name: str, budget: int, cfg) -> int:
    """Solutions read for arm ``name`` at ``budget`` labels: ``orm_ratio`` x as many for the paper's ORM."""
    return budget * cfg.orm_ratio if name == PAPER["orm"] else budget


MAX_PASSES = 2
"""The most passes over its training set a reward model of the lab run may take (the step cap rises to it)."""


def recipe_for(rm, count: int):
    """The recipe arm data of ``count`` solutions trains by: ``rm``, its step cap raised to :data:`MAX_PASSES`
    passes over the data and its early-stopping floor to one pass, where those are more. Steps are counted
    in batches, so one cap cannot mean "to convergence" for 2,000 solutions and for 20,000: at 600 steps the
    10x ORM saw its data about once and the cap stopped it (development seed 0, ``docs/lab.md``). Arms of
    the run's label budget are unchanged (a pass is 63 steps); a recipe without early stopping (the studies') is
    never changed."""
    if rm.early_stop_patience <= 0:
        return rm
    per_pass = math.ceil(count / (rm.batch_size * rm.grad_accum))
    if MAX_PASSES * per_pass <= rm.max_steps and per_pass <= rm.early_stop_min_steps:
        return rm
    return dataclasses.replace(rm, max_steps=max(rm.max_steps, MAX_PASSES * per_pass),
                               early_stop_min_steps=max(rm.early_stop_min_steps, per_pass))


def select_convincing(out: Path, cfg, seed: int, data_dir: str, selector: str, device: str = "auto") -> dict:
    """The paper's PRM set: the selector scores the candidates (the paper ORM's uniform pool, less the
    validation problems and the samples the selector trained on), ``train_samples`` per problem are chosen, and the labellers rate them
    (``out/selected.jsonl.gz``); what was chosen, summarised."""
    from random import Random

    from prmkit.device import torch_device
    from prmkit.io import read_solutions, write_records
    from prmkit.lab.labellers import label
    from prmkit.lab.rm import lab_score_config
    from prmkit.score import Scorer, score_file
    from prmkit.select import convincing_wrong_answer, summarise

    held = held_problems(data_dir, seed)
    # the ORM pool's first samples of a problem are the uniform set's: the selector learned from those
    learned = {s.id for s in read_solutions(Path(data_dir) / "train.jsonl.gz")}
    candidates = [s for s in read_solutions(Path(data_dir) / "orm.jsonl.gz")
                  if _key(s) not in held and s.id not in learned]
    write_records(out / "candidates.jsonl.gz", candidates)
    score_file(selector, out / "candidates.jsonl.gz", out / "scored.jsonl.gz",
               lab_score_config("selector", device=device),
               Scorer(selector, device=torch_device(device)))
    scored = list(read_solutions(out / "scored.jsonl.gz"))
    chosen = convincing_wrong_answer(scored, cfg.train_samples, Random(seed), score="selector_min",
                                     wrong_share=WRONG_SHARE, per_problem=True)
    write_records(out / "selected.jsonl.gz", label([_unscored(s) for s in chosen], cfg.labellers, seed))
    for name in ("candidates.jsonl.gz", "scored.jsonl.gz"):
        (out / name).unlink()
    summary = summarise(chosen)
    return {"candidates": len(candidates), "selected": len(chosen), "problems": summary["problems"],
            "wrong_share": summary["wrong_share"],
            "candidates_wrong_share": sum(s.grade != "correct" for s in candidates) / max(len(candidates), 1)}


def _unscored(solution):
    """A chosen candidate without the selector's scores (the PRM trained on it must not read them)."""
    import dataclasses

    steps = [dataclasses.replace(s, scores={}) for s in solution.steps]
    return dataclasses.replace(solution, scores={}, steps=steps)


__all__ = ["PAPER", "VALID_FRACTION", "WRONG_SHARE", "arm_of", "count_of", "held_problems", "kind_of",
           "select_convincing", "training_set", "validation_set"]
