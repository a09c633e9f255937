"""Write the summaries that docs/lab.md's generator tables are rendered from: `prmkit lab stats` of the
default preset's held-out and OOD pools on the report seeds.

    python scripts/lab_stats.py               # docs/results/lab-stats.json: the rule-based generator
    python scripts/lab_stats.py --policy lm   # docs/results/lab-lm-stats.json: the base model as the policy
                                              # (sampled at temperature 1), beside the rule-based pools
    python scripts/docs_tables.py             # then render the docs

The lm policy samples 32,000 solutions per seed through `prmkit generate --backend lab-lm` (about 8
minutes per seed on one CPU thread).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from prmkit.lab import generate_pool, pool_stats, preset
from prmkit.lab.config import REPORT_SEEDS
from prmkit.lab.stack import numeric_stack

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="rules", choices=("rules", "lm"))
    args = parser.parse_args()
    cfg = preset("default").replace({"policy": args.policy})
    if args.policy == "lm":
        import torch

        torch.set_num_threads(1)  # one core samples; the machine's other is left free
    summary = {"command": "python scripts/lab_stats.py" + (" --policy lm" if args.policy == "lm" else ""),
               "preset": cfg.name, "policy": args.policy, "seeds": list(REPORT_SEEDS)}
    pools, seconds = stats_of(cfg, REPORT_SEEDS)
    summary.update(pools)
    if args.policy == "lm":
        from prmkit.lab.pools import LM_SAMPLING

        summary["sampling"] = LM_SAMPLING
        summary["seconds"] = seconds
        summary["rules"] = stats_of(preset("default"), REPORT_SEEDS)[0]
    summary["stack"] = numeric_stack()
    out = RESULTS / ("lab-lm-stats.json" if args.policy == "lm" else "lab-stats.json")
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
