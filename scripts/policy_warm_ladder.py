#!/usr/bin/env python
"""Apply the rule for the ``sft`` policy's warm start (docs/pressure.md, "A policy worth optimising"): fine-tune the
lab's base on 1,000, 2,000, 5,000 and 10,000 of the rule-based generator's right-answer samples, in that order,
each alone (``sft.rounds=0``), measure pass@1 on the measure problems, and take the smallest size that reaches
``sft.target``; 20,000 if none does. Writes docs/results/lab-policy-sft-ladder.json.

    python scripts/policy_warm_ladder.py
    python scripts/docs_tables.py

Each size is a cached policy of its own (``$PRMKIT_CACHE/lab-policy/``), so a rerun measures nothing again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from prmkit.lab import preset
from prmkit.lab.policy import ensure_policy
from prmkit.stack import run_record

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
LADDER = (1000, 2000, 5000, 10000)
FALLBACK = 20000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--out", default=str(RESULTS / "lab-policy-sft-ladder.json"))
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # one thread: two oversubscribe a shared 2-core machine many times over
    base = preset(args.preset).replace({"policy": "sft", "sft.rounds": 0})
    steps, chosen = [], None
    for size in LADDER:
        start = time.perf_counter()
        folder = ensure_policy(base.replace({"sft.warm_start": size}), progress=False)
        warm = json.loads((folder / "policy.json").read_text())["rounds"][-1]
        steps.append({"warm_start": size, **warm, "seconds": round(time.perf_counter() - start, 1)})
        print(f"warm start {size:,}: pass@1 {warm['pass@1']:.3f}", flush=True)
        if warm["pass@1"] >= base.sft.target:
            chosen = size
            break
    summary = {"command": " ".join(["python scripts/policy_warm_ladder.py", *(argv if argv is not None else sys.argv[1:])]),
               "preset": args.preset, "ladder": list(LADDER), "fallback": FALLBACK, "target": base.sft.target,
               "steps": steps, "chosen": chosen or FALLBACK, **run_record()}
    Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    print(f"chosen {summary['chosen']:,}; wrote {args.out}")


if __name__ == "__main__":
    main()
