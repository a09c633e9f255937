#!/usr/bin/env python
"""Apply docs/search.md's rules for a search-study PRM that passes the floor (each written before its runs).

On the development seeds, ``prmkit lab study search`` is run with label budgets in the rule's order, its searches
with the oracle alone at N = 64 (the PRM is read only through its step AUROC on the pool). The first budget whose
PRM reaches the floor (``targets.FLOOR``) on every development seed is the recipe; the later budgets are not run.
``--protocol study`` (the first rule, 2026-12-06) trains the PRM by the studies' recipe at 2,000, 4,000, 8,000
labelled solutions (``search.train_problems`` 500, 1000, 2000, four samples each); ``--protocol lab`` (the second
rule) by the lab run's protocol (:func:`prmkit.lab.config.lab_rm`: its learning rates, early stopping, 600 steps
at most) at 2,000 and 8,000; ``--protocol lab-passes`` (the third rule, 2026-12-07) by the lab run's protocol with its step
cap scaled to the labels, so that the PRM makes as many passes over them as the lab run's (2,400 steps at 8,000).
Each budget is its own run folder under ``--runs``; a rerun finds its stages cached and only reads them.

    python scripts/search_prm_recipe.py --runs /tmp/s35 --out docs/results/search-prm-recipe.json
    python scripts/search_prm_recipe.py --protocol lab --runs /tmp/s35 --out docs/results/search-prm-recipe-lab.json
    python scripts/search_prm_recipe.py --protocol lab-passes --runs /tmp/s35 --out docs/results/search-prm-recipe-passes.json
    python scripts/docs_tables.py            # then render the docs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from prmkit.lab.config import REPORT_SEEDS, SEED_SETS, LabConfig, lab_rm
from prmkit.lab.study.config import study_preset
from prmkit.lab.study.core import with_restarts
from prmkit.lab.targets import FLOOR, auroc_spread
from prmkit.stack import run_record

TRAIN_PROBLEMS = {"study": (500, 1000, 2000), "lab": (500, 2000), "lab-passes": (2000,)}
"""Each rule's order of ``search.train_problems`` (each problem's 4 samples labelled)."""
RULES = {"study": "docs/search.md, 'A PRM that passes the floor' (2026-12-06)",
         "lab": "docs/search.md, 'A PRM by the lab run's protocol' (2026-12-06, second)",
         "lab-passes": "docs/search.md, 'Training to convergence at 8,000 labels' (2026-12-07, third)"}
LAB_FIELDS = ("lr", "new_lr", "eval_fraction", "eval_every", "early_stop_patience", "early_stop_min_steps")
SAMPLES = 4
LAB_LABELS = LabConfig().train_problems * LabConfig().train_samples
"""The labelled solutions the lab run's step cap was set for (its default label budget, 2,000)."""
DEV_SETTINGS = ("search.strategies=beam", "search.scorers=oracle", "search.budgets=64")
"""What the development runs change besides the budget: one search per seed, the oracle's."""


def protocol_settings(protocol: str, labels: int = LAB_LABELS) -> list[str]:
    """The ``--set`` overrides that train the study's PRM by ``protocol``: none for the studies' own recipe; for
    the lab run's, every field of :func:`lab_rm` that the study's recipe sets otherwise, and its step cap (for
    ``lab-passes`` scaled to ``labels``: the lab run's passes over its data).

    >>> protocol_settings("study"), protocol_settings("lab")[:2], protocol_settings("lab")[-1]
    ([], ['rm.lr=0.0005', 'rm.new_lr=0.003'], 'search.rm_steps=600')
    >>> protocol_settings("lab-passes", 8000)[-1]
    'search.rm_steps=2400'
    """
    if protocol == "study":
        return []
    cap = lab_rm().max_steps
    if protocol == "lab-passes":  # as many passes as the lab run's: its cap scaled to the labels, never below it
        cap = max(cap, math.ceil(cap * labels / LAB_LABELS))
    lab, study = lab_rm(max_steps=cap), study_preset("search")
    sets = [*(f"rm.{f}={getattr(lab, f)}" for f in LAB_FIELDS if getattr(lab, f) != getattr(study.rm, f)),
            f"search.rm_steps={cap}"]
    made = with_restarts(study.replace(dict(s.split("=", 1) for s in sets)), cap, study.search.restarts).rm
    if made != lab:  # a field the two recipes came to differ in, which LAB_FIELDS does not name
        changed = [f.name for f in dataclasses.fields(lab) if getattr(made, f.name) != getattr(lab, f.name)]
        raise ValueError(f"the lab protocol's overrides leave the search PRM's recipe unlike lab_rm in {changed}")
    return sets


def command(problems: int, run: Path, seeds: str, protocol: str = "study") -> list[str]:
    sets = [f"search.train_problems={problems}", f"search.samples_per_problem={SAMPLES}", *DEV_SETTINGS,
            *protocol_settings(protocol, problems * SAMPLES)]
    return ["prmkit", "lab", "study", "search", "--seeds", seeds, *[a for s in sets for a in ("--set", s)],
            "--out-dir", str(run), "--no-progress"]


def run_budget(problems: int, runs: Path, seeds: str, protocol: str) -> dict:
    """One budget's run (or its cached stages read again): its PRM's step AUROC per seed."""
    run = runs / f"{'' if protocol == 'study' else protocol + '-'}dev-{problems * SAMPLES}"
    cmd = command(problems, run, seeds, protocol)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "prmkit", *cmd[1:]], check=True)
    summary = json.loads((run / "study-search" / "summary.json").read_text())
    aurocs = summary["prm_step_auroc"]
    return {"labels": problems * SAMPLES, "train_problems": problems, "seeds": summary["seeds"],
            "prm_step_auroc": aurocs, "passes": auroc_spread(aurocs)["above_floor"], "command": " ".join(cmd),
            "run_commit": summary.get("commit"), "seconds": round(time.perf_counter() - start, 1)}


def chosen(tried: list[dict]) -> int | None:
    """The rule's pick: the first budget, in the rule's order, whose PRM passes on every development seed.

    >>> chosen([{"labels": 2000, "passes": False}, {"labels": 4000, "passes": True}]), chosen([])
    (4000, None)
    """
    return next((t["labels"] for t in tried if t["passes"]), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, required=True, help="folder of the budgets' run folders")
    parser.add_argument("--protocol", choices=sorted(TRAIN_PROBLEMS), default="study",
                        help="how the PRM trains: the studies' recipe (the first rule), the lab run's (the second), or the "
                             "lab run's with its step cap scaled to the labels (the third)")
    parser.add_argument("--seeds", default="dev", help="the development seeds (default: dev, 0-2)")
    parser.add_argument("--out", type=Path, required=True, help="the summary written")
    args = parser.parse_args(argv)
    seeds = SEED_SETS.get(args.seeds) or [int(x) for x in args.seeds.split(",")]
    if set(seeds) & set(REPORT_SEEDS):
        parser.error(f"--seeds {args.seeds}: the rule chooses on development seeds, never on report seeds {REPORT_SEEDS}")
    tried = []
    for problems in TRAIN_PROBLEMS[args.protocol]:
        tried.append(run_budget(problems, args.runs, args.seeds, args.protocol))
        print(json.dumps(tried[-1]), flush=True)
        if chosen(tried):
            break
    pick = chosen(tried)
    record = {"rule": RULES[args.protocol], "protocol": args.protocol, "floor": FLOOR, "tried": tried,
              "chosen_labels": pick, "command": " ".join(["python", "scripts/search_prm_recipe.py", *sys.argv[1:]]),
              **run_record()}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"chosen: {pick} labels" if pick else f"none of {[t['labels'] for t in tried]} reaches {FLOOR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
