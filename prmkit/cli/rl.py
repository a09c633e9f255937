"""``prmkit rl``: train a policy by GRPO (TRL) against a trained PRM or ORM (:mod:`prmkit.rl.run`)."""

from __future__ import annotations

import json
import sys

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit rl problems.jsonl --policy runs/policy --reward runs/prm --out-dir runs/rl
  prmkit rl problems.jsonl --policy runs/policy --reward runs/prm --credit sum --kl 0.1 --out-dir runs/rl-sum
  prmkit rl problems.jsonl --policy runs/policy --reward runs/orm --answer-weight 1 --out-dir runs/rl-orm
  prmkit rl problems.jsonl --policy runs/policy --reward runs/prm --out-dir runs/rl --steps 200   (extends a run)

PROBLEMS is a prmkit problem file (problem, answer; `prmkit data convert` writes one). The last --eval-problems
are held out: before the first step, every --eval-every steps and after the last, the live policy samples them
and metrics.jsonl gets the proxy (the reward), gold (where answers are given), KL to the initial policy and what
hacking looks like (steps, tokens, answerless samples, repeated steps). Checkpoints every --save-every steps:
the same command resumes a stopped run, and a larger --steps extends a finished one; another policy, reward,
problem file or setting is refused, naming what differs. OUT gets policy/, summary.json, metrics.jsonl, rl.png
and report.html. docs/rl.md has the recipe and the lab's over-optimisation study.
"""


def register(subparsers) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.rl.run import RunConfig

    p = subparsers.add_parser("rl", help="train a policy by GRPO against a PRM or ORM reward",
                              formatter_class=HelpFormatter, epilog=EPILOG,
                              description="Train a causal LM by GRPO (TRL) against a prmkit PRM or ORM, on a "
                                          "problem file; resumable, with held-out evaluations.")
    p.add_argument("problems", metavar="PROBLEMS", help="prmkit problem file (JSONL, .gz ok)")
    p.add_argument("--out-dir", required=True, help="the run folder (created; a rerun resumes it)")
    p.add_argument("--progress", action="store_true", default=None, help="show a progress bar (default: on a terminal)")
    add_settings(p)
    add_config_arguments(p, RunConfig)
    p.set_defaults(func=run)


def run(args) -> int:
    from prmkit.config import from_args
    from prmkit.io import require_records
    from prmkit.rl.run import RunConfig, run_rl

    require_records(args.problems)
    cfg = from_args(RunConfig, args)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    summary = run_rl(cfg, args.problems, args.out_dir, command=" ".join(["prmkit", *sys.argv[1:]]),
                     progress=progress)
    last = summary["records"][-1]
    print(json.dumps({"out_dir": args.out_dir, "steps": cfg.steps, "seconds": summary["seconds"],
                      "proxy": last["proxy"], "gold": last["gold"], "kl": last["kl"]}))
    return 0
