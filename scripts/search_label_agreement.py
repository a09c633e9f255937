#!/usr/bin/env python
"""How well the search study's training labels agree with the oracle: a reference for its PRM's step AUROC.

The search study's PRM learns from the simulated labellers' step ratings (phase 2: each solution's steps up to the
first one a labeller rates -1). This reads every seed's labelled training solutions (``seed-S/data/train.jsonl.gz``
of a ``prmkit lab study search`` run), rates the same steps by the oracle, and records per seed: the labelled steps,
the oracle's share of wrong ones, the labels' own step AUROC against the oracle (a -1 counts as "wrong"), and
how often a wrong step is labelled -1 and a valid one is. It is no hard ceiling (a model can average out a
labeller's slips, and the PRM's AUROC is read on every step of the pool, the labels' only up to the first -1), but a
PRM far below its labels has more to learn from them.

    python scripts/search_label_agreement.py RUN_DIR --out docs/results/search-label-agreement.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from prmkit.evaluate.steps import auroc
from prmkit.io import read_solutions
from prmkit.lab.oracle import oracle_labels
from prmkit.stack import run_record


def agreement(path: Path) -> dict:
    """The labels of one seed's training solutions against the oracle, on the steps the labellers rated."""
    said, truth = [], []
    for sol in read_solutions(path):
        steps = [s for s in sol.steps if s.taken is not None]
        for step, oracle in zip(steps, oracle_labels(sol)):
            if step.taken.rating is not None:
                said.append(step.taken.rating == -1)
                truth.append(oracle.rating == -1)
    said, truth = np.asarray(said, bool), np.asarray(truth, bool)
    if not said.size or truth.all() or not truth.any():
        raise ValueError(f"{path}: the labelled steps need both valid and wrong ones by the oracle")
    return {"labelled_steps": len(said), "wrong_share": float(truth.mean()),
            "label_auroc": auroc((~said).astype(float), (~truth).astype(int)),
            "wrong_labelled_wrong": float(said[truth].mean()), "valid_labelled_wrong": float(said[~truth].mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="a `prmkit lab study search` run folder (its --out-dir)")
    parser.add_argument("--out", type=Path, required=True, help="the summary written")
    args = parser.parse_args(argv)
    root = args.run_dir / "study-search"
    seeds = sorted(int(p.name.removeprefix("seed-")) for p in root.glob("seed-*") if (p / "data" / "done.json").is_file())
    if not seeds:
        parser.error(f"{root}: no seed's data stage is done")
    summary = json.loads((root / "summary.json").read_text()) if (root / "summary.json").is_file() else {}
    record = {"run_dir": str(args.run_dir), "seeds": seeds,
              "per_seed": [agreement(root / f"seed-{s}" / "data" / "train.jsonl.gz") for s in seeds],
              "prm_step_auroc": [dict(zip(summary.get("seeds", []), summary.get("prm_step_auroc", []))).get(s)
                                 for s in seeds],
              "command": " ".join(["python", "scripts/search_label_agreement.py", *sys.argv[1:]]), **run_record()}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["per_seed"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
