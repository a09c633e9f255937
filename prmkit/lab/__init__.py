"""The lab: a synthetic reasoning domain with an exact step oracle, where every claim is checked on a CPU.

The domain is a running-total *ledger*: a start value and named transactions (``A + 2``, ``C less 6``,
``D twice``, ``E again``, ``F set to 10``). A solution restates one transaction per line and computes
it (``C - 6 : 14 - 6 = 8``), may insert neutral ``check : 8`` lines, and ends with ``# Answer\\n\\n<n>``,
the paper's format. ``docs/lab.md`` describes the domain, the generator's failure modes and their
measured rates, the oracle's reasons and the simulated labellers.

The public API (everything is deterministic in its seed; same seed, same bytes on disk)::

    from prmkit import lab

    cfg = lab.preset("default")                    # LabConfig: domain, OOD family, generator, labellers, sizes
    pool = lab.generate_pool(cfg, seed=0, split="eval")   # list[Solution], 300 problems x 64 samples,
                                                   # graded ("correct"/"incorrect"), unlabelled
    train = lab.generate_pool(cfg, seed=0, split="train") # 2,000 solutions to label (other problems)
    ood = lab.generate_pool(cfg, seed=0, split="ood")     # held-out family: new operations, longer chains

    lab.oracle_labels(sol)            # list[StepLabel]: .rating (+1/0/-1), .reason, .txn, for every step
    lab.oracle_label(sol)             # a copy rated by the oracle: label_source "oracle", Step.meta["reason"]
    lab.grade_answer(sol.problem, "17")   # "correct" | "incorrect" (also for None: no answer)
    labelled = lab.label(train, cfg.labellers, seed=0)   # simulated labellers: noisy, timed, phase 2
    lab.pool_stats(pool)              # every rate: pass@1, maj_acc@64, pass@64, error shares, ...
    print(lab.format_stats(lab.pool_stats(pool)))

The end-to-end run (``prmkit lab run``; ``docs/lab.md``, "The run")::

    from prmkit.lab.run import run_lab
    summary = run_lab(lab.preset("default"), seeds=[0, 1, 2], run_dir="runs/lab-default")
    # data -> base model (prmkit train lm, once, cached by config hash) -> PRM and ORM (prmkit train,
    # the base's surprise as features) from the same base, data and budget -> prmkit score ->
    # scored pools -> best-of-N with CIs -> report.html

Its parts: :mod:`prmkit.lab.base` (the base model: tokenizer, initial weights, pretraining recipe, cache),
:mod:`prmkit.lab.likelihood` (the label-free baseline), :mod:`prmkit.lab.rm` (the reward models' recipe,
trained and scored by the product), :mod:`prmkit.lab.scoring` (scored records, evaluation),
:mod:`prmkit.lab.report` (the page).

Lower level: :func:`make_problems` (``LedgerConfig`` -> ``list[Problem]``), :func:`generate`
(problems x samples under a :class:`GeneratorConfig`), :func:`parse_problem` (problem text -> :class:`Ledger`).

For a step-level test of a reward model (AUROC), the truth of every step is
``[l.rating for l in lab.oracle_labels(sol)]``: it parses the text only (problem and steps), so it
also labels text written by any model. The rating of a step is local: +1 when the step restates the
next transaction correctly, uses the previous line's result as its left operand and computes right
(so a step that correctly carries an earlier mistake forward is +1); 0 for a true ``check`` line;
-1 otherwise. Every ``Solution`` from the generator carries ``problem.id``, ``problem.answer``, ``id``,
``answer`` (None when the sample never reached ``# Answer``), ``grade`` and ``generator``.

>>> cfg = preset("quick")
>>> pool = generate_pool(cfg, seed=0, split="eval")
>>> len(pool) == cfg.eval_problems * cfg.eval_samples
True
>>> sol = pool[0]
>>> print(sol.problem.problem.splitlines()[0])
Start at 67.
>>> [l.rating for l in oracle_labels(sol)] == [l.rating for l in oracle_labels(generate_pool(cfg, 0, "eval")[0])]
True
"""

from prmkit.lab.base import BaseConfig
from prmkit.lab.config import PRESETS, SPLITS, LabConfig, config_hash, preset, presets
from prmkit.lab.domain import OOD, Ledger, LedgerConfig, Txn, make_problem, make_problems, parse_problem
from prmkit.lab.domains import oracle_label
from prmkit.lab.generator import GeneratorConfig, generate
from prmkit.lab.labellers import LabellerConfig, label
from prmkit.lab.oracle import StepLabel, grade_answer, oracle_labels
from prmkit.lab.pools import generate_pool
from prmkit.lab.stats import format_stats, pool_stats

__all__ = [
    "OOD",
    "PRESETS",
    "SPLITS",
    "BaseConfig",
    "GeneratorConfig",
    "LabConfig",
    "LabellerConfig",
    "Ledger",
    "LedgerConfig",
    "StepLabel",
    "Txn",
    "config_hash",
    "format_stats",
    "generate",
    "generate_pool",
    "grade_answer",
    "label",
    "make_problem",
    "make_problems",
    "oracle_label",
    "oracle_labels",
    "parse_problem",
    "pool_stats",
    "preset",
    "presets",
]
