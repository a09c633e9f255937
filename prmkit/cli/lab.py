"""``prmkit lab``: the synthetic domains (ledger, plans; ``--domain``): generate pools, label them with simulated people, report rates,
``prmkit lab run``, the project's end-to-end job (PRM against ORM, majority and a label-free baseline), and
``prmkit lab study active|synthetic|budget``, the paper's small-scale studies (:mod:`prmkit.lab.study`).

The commands parse arguments and call :mod:`prmkit.lab`. Configuration: a preset (quick, default,
full), then ``--set key=value`` overrides of any field (``generator.check_rate=0.1``,
``labellers.flip_rate=0``, ``domain.steps=6,10``, ``eval_samples=16``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import time

from prmkit import lab
from prmkit.cli import HelpFormatter
from prmkit.cli.flags import renamed
from prmkit.io import read_solutions, write_records
from prmkit.lab.study.config import RM_PROTOCOLS

GROUP_EPILOG = """\
examples:
  prmkit lab generate --preset default --split eval --seed 0 eval.jsonl.gz
  prmkit lab label --seed 0 train.jsonl.gz labelled.jsonl.gz
  prmkit lab stats --preset default --seed 0
  prmkit lab stats eval.jsonl.gz
  prmkit lab run --preset default --seeds 0,1,2
  prmkit lab study budget --preset default --seeds 0,1,2

`docs/lab.md` describes the domain, the failure modes and the simulated labellers.
"""

GENERATE_EPILOG = """\
examples:
  prmkit lab generate eval.jsonl.gz                       (default preset: 300 problems x 64 samples)
  prmkit lab generate --split train train.jsonl.gz         (500 x 4 = 2,000 solutions to label)
  prmkit lab generate --split ood --seed 1 ood.jsonl.gz    (the held-out family)
  prmkit lab generate --problems 10 --n 8 --set generator.no_answer_rate=0 small.jsonl

The same preset, overrides, split and seed give the same bytes. Records are prmkit solutions, graded,
unlabelled; `prmkit lab label` labels them, `prmkit data convert --to prm800k` exports labelled ones.
"""

LABEL_EPILOG = """\
examples:
  prmkit lab label train.jsonl.gz labelled.jsonl.gz
  prmkit lab label --set labellers.flip_rate=0.1 --set labellers.labellers=4 train.jsonl.gz noisy.jsonl.gz
  prmkit lab label --set labellers.stop_at_first_error=false train.jsonl.gz every_step.jsonl.gz
  prmkit lab label --oracle train.jsonl.gz truth.jsonl.gz   (exact labels of every step, with reasons)
  prmkit data convert --from prmkit --to prm800k labelled.jsonl.gz labelled.prm800k.jsonl

Simulated labellers rate from the oracle's truth with noise (flip rate, neutral confusion, a bias per
labeller), take time per step, and stop at the first step they rate -1 (PRM800K phase 2).
"""

STATS_EPILOG = """\
examples:
  prmkit lab stats                                   (generate the default eval pool in memory)
  prmkit lab stats --preset quick --split ood --seed 2
  prmkit lab stats --set generator.misconception_rate=0 --json
  prmkit lab stats eval.jsonl.gz
  prmkit lab stats --domain plans --preset quick --split ood   (the plans domain: each step a decision)

Rates: pass@N (exact), maj_acc@M (majority of all M samples), no-answer share, right answer with a
wrong step, neutral and wrong step shares, misreadings per trigger (ledger), immediate and delayed
errors (plans), oracle reasons; see docs/lab.md.
"""


RUN_EPILOG = """\
examples:
  prmkit lab run                                   (default preset, seed 0: ~13 min on 2 cores, into runs/lab-default)
  prmkit lab run --preset quick                    (small pools: a few minutes)
  prmkit lab run --preset default --seeds report   (seeds 10-14: the published numbers in docs/lab.md)
  prmkit lab run --preset default --seeds dev      (seeds 0,1,2: for trying a recipe; never publish from them)
  prmkit lab run --preset full --seeds 10          (adds the label-budget sweep 500 / 2,000 / 8,000)
  prmkit lab run --set rm.max_steps=400 --set rm.features= --out-dir runs/no-features

Stages: data (generate, label) -> base (pretrain a tiny LM, cached in $PRMKIT_CACHE or ~/.cache/prmkit)
-> rm (prmkit train PRM and ORM, the base's surprise as features, 3 restarts each) -> score (per pool: the
base's label-free scores and prmkit score with every model) -> evaluate (best-of-N, votes, pass@N, CIs, step
AUROC) -> report (RUN_DIR/report.html). A rerun skips every finished stage whose inputs did not change, so
an interrupted run resumes where it stopped (a reward model from its last checkpoint or finished restart).
"""


STUDY_EPILOG = """\
examples:
  prmkit lab study budget                         (default preset, seeds 0,1,2, into runs/lab-default/study-budget)
  prmkit lab study active --seeds report          (report seeds 10-14; its published run: 10,11,12)
  prmkit lab study active --preset quick --seeds 0  (the test suite's size: a few minutes)
  prmkit lab study synthetic --set synthetic.threshold=0.5
  prmkit lab study autolabel --seeds report --set autolabel.k=16
  prmkit lab study pressure --seeds report --set pressure.rl.steps=100 --set pressure.rewards=orm,prm-min
  prmkit lab study budget --set budget.budgets=250,1000,4000 --set budget.rm_steps=300 --out-dir runs/budget-wide
  prmkit lab study budget --domain plans          (the plans domain: into runs/lab-plans-default/study-budget;
                                                   budget, active and synthetic run on any domain)

Studies (docs/study-budget.md and the lab report):
  budget     PRM and ORM trained at several label budgets; accuracy against log(labels), best-fit lines,
             the data-efficiency factor as the ratio of their slopes, with CIs over seeds
  active     convincing-wrong-answer selection against uniform at equal labels, over generations
  synthetic  a large PRM labels fresh samples; small PRM / ORM / answer-check models at equal budgets
  autolabel  Monte-Carlo rollouts, OmegaPRM, a served judge and consensus against the oracle's truth;
             PRMs trained on each (equal solutions, equal rollouts) against simulated human labels
  pressure   optimisation pressure with the base model as the policy: best-of-N up to N=4096 and GRPO
             against ORM and PRM credit rules; gold (the oracle) and proxy against sqrt(KL), Gao fits,
             hacking detectors
  search     test-time search on the fine-tuned policy: best-of-N, weighted best-of-N, beam search, DVTS and
             particles at each budget, with the lab PRM and with the oracle (the ceiling), by difficulty,
             on answer and valid-solution accuracy, against tokens spent (docs/search.md)

Each study writes RUN_DIR/study-<name>/ (summary.json, report.html, section.html, figures/); a rerun
skips every finished job. When RUN_DIR holds a finished `prmkit lab run`, its report.html is re-rendered
with the study's section.
"""

STUDIES = ("active", "budget", "synthetic", "autolabel", "pressure", "search")


def _config(args: argparse.Namespace, study: str | None = None) -> lab.LabConfig:
    """defaults < the preset's recipe (or ``--recipe``) < ``--set``: one parser (:mod:`prmkit.config`)."""
    from prmkit.config import parse_sets, read_recipe
    from prmkit.lab.study.config import study_preset

    args.domain = args.domain or "ledger"
    try:
        cfg = (lab.preset(args.preset, args.domain) if study is None
               else study_preset(study, args.preset, args.domain, args.rm_protocol))
    except ValueError as e:
        raise SystemExit(f"prmkit lab: {e}") from None
    if getattr(args, "recipe", None):
        cfg = cfg.replace(read_recipe(args.recipe))
    return cfg.replace(parse_sets(args.set))


def _pool(args: argparse.Namespace, cfg: lab.LabConfig) -> tuple[list, float]:
    start = time.perf_counter()
    pool = lab.generate_pool(cfg, args.seed, args.split, args.problems, args.samples)
    return pool, time.perf_counter() - start


def cmd_generate(args: argparse.Namespace) -> int:
    pool, seconds = _pool(args, _config(args))
    n = write_records(args.output, pool)
    problems = len({s.problem.id for s in pool})
    print(f"wrote {n} solutions ({problems} problems, split {args.split}, seed {args.seed}) "
          f"to {args.output}; generated in {seconds:.2f} s")
    return 0


def cmd_label(args: argparse.Namespace) -> int:
    cfg = _config(args)
    solutions = list(read_solutions(args.input))
    if args.oracle:
        out = [lab.oracle_label(s) for s in solutions]
    else:
        out = lab.label(solutions, cfg.labellers, args.seed)
    n = write_records(args.output, out, inputs=[args.input])
    steps = sum(len(s.steps) for s in out)
    who = "the oracle" if args.oracle else f"{cfg.labellers.labellers} simulated labellers"
    print(f"labelled {n} solutions ({steps} steps rated) by {who} -> {args.output}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    if args.input:
        solutions, seconds = list(read_solutions(args.input)), None
        args.domain = _domain_of_file(args.input, solutions, args.domain)
    else:
        solutions, seconds = _pool(args, _config(args))
    d = lab.pool_stats(solutions, args.domain)
    if args.json:
        print(json.dumps({**d, "generation_seconds": None if seconds is None else round(seconds, 3)}, indent=2))
    else:
        print(lab.format_stats(d))
        if seconds is not None:
            print(f"generated in {seconds:.2f} s (domain {args.domain}, preset {args.preset}, split {args.split}, "
                  f"seed {args.seed})")
    return 0


def _domain_of_file(path: str, solutions: list, asked: str | None) -> str:
    """The one lab domain of a pool file's problems (:func:`prmkit.lab.domains.domain_of_pool`), or a user
    error naming the file."""
    from prmkit.lab.domains import domain_of_pool

    try:
        return domain_of_pool(solutions, asked).name
    except ValueError as e:
        raise SystemExit(f"prmkit lab stats: {path}: {e}") from None


def _command(head: str, args: argparse.Namespace) -> str:
    """The command line that reproduces a run or study (recorded in its report)."""
    parts = [head, *([f"--domain {args.domain}"] if getattr(args, "domain", None) not in (None, "ledger") else []),
             f"--preset {args.preset}", f"--seeds {','.join(map(str, args.seeds))}"]
    parts += [f"--rm-protocol {args.rm_protocol}"] if getattr(args, "rm_protocol", "study") != "study" else []
    parts += [f"--recipe {shlex.quote(args.recipe)}"] if args.recipe else []
    parts += [f"--set {shlex.quote(kv)}" for kv in args.set]
    parts.append(f"--out-dir {shlex.quote(str(args.out))}")
    parts += [f"--workers {args.workers}"] if getattr(args, "workers", 2) != 2 else []  # the run's shape, not its numbers
    parts += [f"--threads {args.threads}"] if getattr(args, "threads", 1) != 1 else []
    return " ".join(parts)


def _add_recipe_flag(p) -> None:
    p.add_argument("--recipe", default=None, metavar="FILE",
                   help="a recipe file (YAML/TOML/JSON, the same keys as --set, nested or dotted) applied over "
                        "the preset; --set overrides it (the presets are such files: prmkit/lab/recipes/)")


def _add_worker_flags(p) -> None:
    p.add_argument("--workers", type=int, default=2,
                   help="worker processes for the heavy stages (one torch thread each; lab run: --threads)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                   help="progress bars per stage (--no-progress for logs)")


def _add_device_flag(p) -> None:
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where models train and score: auto (CUDA when visible, else CPU), cpu or cuda; on CUDA "
                        "the heavy jobs run one at a time on the GPU, on a CPU in --workers processes")


def _default_out(args: argparse.Namespace) -> str:
    """A run's folder, where a study of the same domain and preset writes too: ``runs/lab-<preset>`` for the ledger,
    ``runs/lab-<domain>-<preset>`` for another domain."""
    return f"runs/lab-{args.preset}" if args.domain == "ledger" else f"runs/lab-{args.domain}-{args.preset}"


def cmd_run(args: argparse.Namespace) -> int:
    from prmkit.lab.run import run_lab

    cfg = _config(args)
    if args.out is None:
        args.out = _default_out(args)
    if args.fresh and os.path.isdir(args.out):
        shutil.rmtree(args.out)
    summary = run_lab(cfg, args.seeds, args.out, jobs=args.workers, progress=args.progress,
                      command=_command("prmkit lab run", args), device=args.device, threads=args.threads)
    for seed in args.seeds:
        h = summary["results"][str(seed)]["eval"]
        n = h["N"]
        print(f"seed {seed}: PRM(min)@{n} {100 * h[f'prm_min@{n}']:.1f}  ORM@{n} {100 * h[f'orm@{n}']:.1f}  "
              f"majority@{n} {100 * h[f'majority@{n}']:.1f}  label-free@{n} {100 * h[f'label_free@{n}']:.1f}  "
              f"pass@{n} {100 * h[f'pass@{n}']:.1f}  step AUROC {h['prm_step_auroc']:.3f}")
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    import importlib

    from prmkit.lab.report import refresh_lab_report
    from prmkit.lab.study.protocol import run_study

    cfg = _config(args, args.study)
    if cfg.aggregation != "min":
        raise SystemExit(f"prmkit lab study: aggregation={cfg.aggregation}: the studies rank a PRM's solutions by the "
                         "min of its step probabilities only")
    if args.out is None:
        args.out = _default_out(args)
    module = importlib.import_module(f"prmkit.lab.study.{args.study}")  # lazily: each study imports torch
    if args.plan:
        return _print_plan(module.STUDY, cfg, args)
    run_study(module.STUDY, cfg, args.seeds, args.out, jobs=args.workers, progress=args.progress,
              command=_command(f"prmkit lab study {args.study}", args), device=args.device)
    if refresh_lab_report(args.out):  # a finished `prmkit lab run` in the folder: show every study in its page
        print(f"lab report: {os.path.join(args.out, 'report.html')} (with the study sections)")
    print(f"study report: {os.path.join(args.out, f'study-{args.study}', 'report.html')}")
    return 0


def _print_plan(study, cfg, args) -> int:
    """``--plan``: the study's jobs, which are done, and what the rest costs (:mod:`prmkit.lab.study.plan`)."""
    from pathlib import Path

    from prmkit.lab.study.plan import format_plan, plan_study

    published = Path(__file__).resolve().parents[2] / "docs" / "results" / f"study-{args.study}.json"
    summary = json.loads(published.read_text()) if published.is_file() else None
    plan = plan_study(study, cfg, args.seeds, args.out, args.device, summary, args.domain)
    print(format_plan(plan, args.workers))
    return 0


def _seeds(text: str) -> list[int]:
    from prmkit.lab.config import SEED_SETS

    if text in SEED_SETS:
        return list(SEED_SETS[text])
    try:
        seeds = [int(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds expects integers separated by commas, or one of "
                                         f"{', '.join(SEED_SETS)}, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"--seeds expects distinct integers, got {text!r}")
    return seeds


def _add_domain_flag(p: argparse.ArgumentParser, studies: bool = False) -> None:
    from prmkit.lab.domains import DOMAINS

    which = ("budget, active and synthetic run on any domain, autolabel, pressure and search on the ledger only" if studies
             else "a pool file's own domain is read from its problems")
    p.add_argument("--domain", choices=tuple(DOMAINS), default=None,
                   help="the lab domain (prmkit.lab.domains): ledger (each step a calculation; the default) or plans "
                        f"(each step a decision: which tasks on which day; presets default and quick); {which}")


def _preset_names() -> list[str]:
    from prmkit.lab.domains import DOMAINS

    return sorted(set(lab.PRESETS).union(*map(lab.presets, DOMAINS)))


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    _add_domain_flag(p)
    p.add_argument("--preset", choices=_preset_names(), default="default",
                   help="sizes and settings to start from: default (300 x 64 held out, the family chosen by the rule "
                        "of docs/lab.md), easy (the default's sizes on the family before it, at its ceiling), quick "
                        "(seconds; the easy family), full (larger; the easy family), quick-lm (quick, its pools "
                        "sampled from the base model)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, dotted (generator.check_rate=0.1, labellers.flip_rate=0, "
                        "domain.steps=6,10); repeatable")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same records")


def _add_pool_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", choices=lab.SPLITS, default="eval",
                   help="which pool: eval (held out), train (to label), ood (held-out family), pretrain")
    p.add_argument("--problems", type=int, default=None, help="number of problems (default: the preset's size)")
    p.add_argument("--n", dest="samples", type=int, default=None,
                   help="samples per problem (default: the preset's size for the split)")
    renamed(p, "--samples", "--n")


def register(subparsers) -> None:
    group = subparsers.add_parser("lab", help="synthetic domains (ledger, plans) with an exact step oracle",
                                  description="Synthetic domains with an exact step oracle (ledger: calculations; plans: "
                                              "decisions; --domain): generate "
                                              "pools, label them with simulated people, report every rate, run "
                                              "the paper's PRM-vs-ORM comparison end to end (run) and its "
                                              "small-scale studies (study).",
                                  formatter_class=HelpFormatter,
                                  epilog=GROUP_EPILOG)
    sub = group.add_subparsers(dest="lab_command", metavar="COMMAND", required=True, help="what to do")

    p = sub.add_parser("generate", help="sample a pool of graded solutions (JSONL)", formatter_class=HelpFormatter,
                       description="Sample a pool of lab solutions (of --domain), graded, unlabelled.", epilog=GENERATE_EPILOG)
    _add_config_flags(p)
    _add_pool_flags(p)
    p.add_argument("output", metavar="OUT", help="output file (.jsonl, or .jsonl.gz to compress); written atomically")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("label", help="label a pool with simulated labellers (or the exact oracle)",
                       formatter_class=HelpFormatter, epilog=LABEL_EPILOG,
                       description="Label lab solutions: simulated people in the phase-2 flow, or the oracle (of "
                                   "each solution's own domain).")
    _add_config_flags(p)
    p.add_argument("--oracle", action="store_true",
                   help="exact labels of every step (label_source oracle, reasons in step meta) instead of people")
    p.add_argument("input", metavar="IN", help="a pool from `prmkit lab generate` (prmkit records)")
    p.add_argument("output", metavar="OUT", help="output file of labelled records; may not be IN")
    p.set_defaults(func=cmd_label)

    p = sub.add_parser("stats", help="every rate of a pool, as a table", formatter_class=HelpFormatter,
                       description="Every rate of a pool: read from a file, or generated in memory.",
                       epilog=STATS_EPILOG)
    _add_config_flags(p)
    _add_pool_flags(p)
    p.add_argument("--json", action="store_true", help="print the numbers as JSON instead of a table")
    p.add_argument("input", metavar="IN", nargs="?", default=None,
                   help="a pool file; without it the preset's pool is generated (then --preset, --split, ... apply)")
    p.set_defaults(func=cmd_stats)

    _register_run(sub)
    _register_study(sub)


def _register_run(sub) -> None:
    p = sub.add_parser("run", help="end to end: generate, label, pretrain, train PRM and ORM, evaluate, report",
                       formatter_class=HelpFormatter, epilog=RUN_EPILOG,
                       description="Reproduce the paper's PRM-vs-ORM comparison in the lab, end to end on a CPU: "
                                   "best-of-N curves with CIs for the PRM (each aggregation), the ORM, majority and "
                                   "weighted votes, a label-free baseline and pass@N, on held-out problems and an "
                                   "out-of-distribution family; report.html with figures, configuration and wall times.")
    _add_domain_flag(p)
    p.add_argument("--preset", choices=_preset_names(), default="default",
                   help="quick (small pools, a few minutes), default (300 x 64 held out, 2,000 labelled, the paper's arms, ~13 min per "
                        "seed), full (larger pools and a label-budget sweep), quick-lm (quick, its pools sampled "
                        "from the base model)")
    _add_recipe_flag(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, dotted (rm.max_steps=400, base.steps=600, label_budgets=500,2000, "
                        "eval_problems=100); repeatable")
    p.add_argument("--seeds", type=_seeds, default=[0], metavar="S,S,...|dev|report",
                   help="seeds to run (each its own data, labels and reward models; the base model is shared; dev = 0,1,2 for "
                        "choosing recipes, report = 10-14 for published numbers, docs/lab.md \"Seeds\")")
    p.add_argument("--out-dir", dest="out", default=None, metavar="RUN_DIR", help="run folder (default: runs/lab-<preset>)")
    renamed(p, "--out", "--out-dir")
    _add_worker_flags(p)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads per worker process, in every job (training, scoring, the base model); only "
                        "the float kernels change, yet a seed's numbers move with them (docs/lab.md, \"Numbers "
                        "that survive the machine\"); not part of any cache key")
    p.add_argument("--fresh", action="store_true",
                   help="delete RUN_DIR first and rerun every stage (the cached base model is kept)")
    _add_device_flag(p)
    p.set_defaults(func=cmd_run)


def _register_study(sub) -> None:
    p = sub.add_parser("study", help="the paper's small-scale studies: active learning, synthetic supervision, "
                                     "label budget", formatter_class=HelpFormatter, epilog=STUDY_EPILOG,
                       description="Run one of the paper's small-scale studies in the lab, with every seed's data "
                                   "and models kept, numbers with CIs over seeds, figures and a report section.")
    p.add_argument("study", choices=STUDIES, help="which study (see below)")
    _add_domain_flag(p, studies=True)
    p.add_argument("--preset", choices=_preset_names(), default="default",
                   help="quick: the test suite's size, a few minutes; default: the study's full size (at most "
                        "30 min on 2 cores); full: the full preset's pools")
    p.add_argument("--rm-protocol", choices=RM_PROTOCOLS, default="study",
                   help="how the study's reward models train: study, the recipe its published numbers used (300 "
                        "steps at 2e-3 / 1e-2, one run on all its labels, or restarts where the study's section sets "
                        "them); lab, the lab run's reliable protocol (lab_rm: early stopping on held-out labels, three "
                        "restarts, the best kept, docs/lab.md): in the budget study the seed's split, shared by a "
                        "budget's PRM and ORM, elsewhere a tenth of each model's own. A study's own rm_steps and "
                        "restarts still apply (a cap below the lab's 200-step floor never stops early: set "
                        "<study>.rm_steps=0); --set rm.<field> overrides either")
    _add_recipe_flag(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, dotted (budget.budgets=250,1000,4000, budget.rm_steps=300, "
                        "active.candidates=16, synthetic.threshold=0.5); repeatable")
    p.add_argument("--seeds", type=_seeds, default=[0, 1, 2], metavar="S,S,...|dev|report",
                   help="seeds to run (each its own data, labels and reward models; CIs are over seeds and problems; dev = 0,1,2 for "
                        "choosing recipes, report = 10-14 for published numbers, docs/lab.md \"Seeds\")")
    p.add_argument("--out-dir", dest="out", default=None, metavar="RUN_DIR",
                   help="run folder; the study writes RUN_DIR/study-<name>/ (default: runs/lab-<preset>)")
    renamed(p, "--out", "--out-dir")
    p.add_argument("--plan", action="store_true",
                   help="print the study's jobs, which are done, and what the rest will cost on this machine "
                        "(from the done jobs of each kind, else the published run's); run nothing")
    _add_worker_flags(p)
    _add_device_flag(p)
    p.set_defaults(func=cmd_study)
