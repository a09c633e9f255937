"""Write the summaries that docs/lab.md's generator tables are rendered from: `prmkit lab stats` of a
preset's held-out and OOD pools on report seeds. The defaults remake the committed summaries: the easy family
(the lab's default before its calibration, and the one the base model as policy was sampled for) on report
seeds 10, 11, 12; another preset or other seeds are written elsewhere only with --out.

    python scripts/lab_stats.py               # docs/results/lab-stats.json: the rule-based generator
    python scripts/lab_stats.py --policy lm   # docs/results/lab-lm-stats.json: the base model as the policy
                                              # (sampled at temperature 1), beside the rule-based pools
    python scripts/lab_stats.py --preset default --seeds 10,11,12,13,14 --out /tmp/stats.json
    python scripts/docs_tables.py             # then render the docs

The lm policy samples 32,000 solutions per seed through `prmkit generate --backend lab-lm` (about 8
minutes per seed on one CPU thread).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from prmkit.lab import generate_pool, pool_stats, preset
from prmkit.stack import run_record

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
SPLITS = ("eval", "ood")


def stats_of(cfg, seeds) -> tuple[dict, dict]:
    """Per split and seed, the pool's stats; and the seconds each pool took to sample."""
    pools, seconds = {split: {} for split in SPLITS}, {}
    for split in SPLITS:
        for s in seeds:
            start = time.perf_counter()
            pools[split][str(s)] = pool_stats(generate_pool(cfg, s, split))
            seconds[f"{split}/{s}"] = round(time.perf_counter() - start, 1)
    return pools, seconds


COMMITTED = {"preset": "easy", "seeds": "10,11,12"}
"""What the committed summaries are made from: the easy family (the lab's default before its calibration)."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="rules", choices=("rules", "lm"))
    parser.add_argument("--preset", default=COMMITTED["preset"], help="the ledger preset whose pools are read")
    parser.add_argument("--seeds", default=COMMITTED["seeds"], help="comma-separated report seeds")
    parser.add_argument("--out", help="where to write (required unless the preset and seeds are the defaults, so a "
                                      "committed summary is never overwritten with another family's numbers)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if not args.out and (args.preset, args.seeds) != (COMMITTED["preset"], COMMITTED["seeds"]):
        parser.error("another preset or other seeds than the committed summaries': give --out")
    cfg = preset(args.preset).replace({"policy": args.policy})
    if args.policy == "lm":
        import torch

        torch.set_num_threads(1)  # one core samples; the machine's other is left free
    command = " ".join(["python scripts/lab_stats.py", *(argv if argv is not None else sys.argv[1:])])
    summary = {"command": command, "preset": cfg.name, "policy": args.policy, "seeds": seeds}
    pools, seconds = stats_of(cfg, seeds)
    summary.update(pools)
    if args.policy == "lm":
        from prmkit.lab.pools import LM_SAMPLING

        summary["sampling"] = LM_SAMPLING
        summary["seconds"] = seconds
        summary["rules"] = stats_of(preset(args.preset), seeds)[0]
    summary.update(run_record())
    out = Path(args.out) if args.out else RESULTS / ("lab-lm-stats.json" if args.policy == "lm" else "lab-stats.json")
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
