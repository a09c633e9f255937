"""Choose the synthetic study's generator setting by the rule in docs/study-synthetic.md ("The rule for a setting
where the second ordering is testable"), from the generator's statistics alone: no reward model is trained.

For every candidate in GRID's order (fixed with the rule, before the search), on the development seeds 0, 1, 2
(the default preset's eval pool, 300 problems x 64 samples each, pooled): the disagreement between a perfect
large PRM's outcome label (an answer and no wrong step, by the oracle) and answer checking, as a share of all
solutions, with its two parts; pass@1 and pass@16. The first candidate that meets the condition is the choice;
the search stops there unless --all. The table goes to the terminal and, with --out, to a JSON file.

    .venv/bin/python scripts/synthetic_setting.py --out docs/results/synthetic-setting.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys

from prmkit.lab.config import preset
from prmkit.lab.domains import oracle_labels
from prmkit.lab.pools import generate_pool
from prmkit.lab.stats import pool_stats
from prmkit.stack import run_record

DEV_SEEDS = (0, 1, 2)
WEIGHTS = preset("default").domain.weights
"""The default family's transaction kinds (no ``set``)."""
GRID = [{"generator.silent_fix_rate": fix, "domain.weights": weights}
        for fix, weights in itertools.product([0.05, 0.1, 0.2, 0.3, 0.4], [WEIGHTS, (*WEIGHTS, ("set", 0.25))])]
"""In the rule's order: the silent-fix rate outermost, then the weight of ``set`` (none, then 0.25)."""
RULE = {"disagreement": (0.12, 1.0), "pass@16": (0.0, 0.90)}
"""Each statistic's allowed range, both ends included."""


def disagreement(solutions) -> dict:
    """Shares of all solutions where a perfect large PRM's outcome label and answer checking differ: right answers
    with a wrong step (``right_wrong_step``), answered wrong answers with no wrong step (``wrong_no_wrong_step``)."""
    right_wrong = wrong_valid = 0
    for s in solutions:
        valid = s.answer is not None and all(x.rating != -1 for x in oracle_labels(s))
        right = s.grade == "correct"
        right_wrong += right and not valid
        wrong_valid += valid and not right
    n = max(len(solutions), 1)
    return {"disagreement": (right_wrong + wrong_valid) / n, "right_wrong_step": right_wrong / n,
            "wrong_no_wrong_step": wrong_valid / n}


def measure(overrides: dict, seeds=DEV_SEEDS, problems: int = 300) -> dict:
    """The rule's statistics of one candidate, each the mean over ``seeds``."""
    cfg = preset("default").replace(overrides)
    per_seed = []
    for seed in seeds:
        pool = generate_pool(cfg, seed, "eval", problems=problems)
        stats = pool_stats(pool)
        per_seed.append({**disagreement(pool), "pass@1": stats["pass@1"], "pass@16": stats["pass@16"]})
    return {k: sum(p[k] for p in per_seed) / len(per_seed) for k in per_seed[0]}


def meets(stats: dict) -> bool:
    return all(lo <= stats[k] <= hi for k, (lo, hi) in RULE.items())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="measure every candidate, not only up to the first that meets")
    ap.add_argument("--problems", type=int, default=300, help="problems per development seed")
    ap.add_argument("--out", help="write the table here (JSON)")
    args = ap.parse_args(argv)
    rows, chosen = [], None
    print(f"{'#':>2} {'silent fix':>10} {'set':>4} {'disagree':>8} {'right,wrong step':>16} {'pass@1':>7} {'pass@16':>7}")
    for i, overrides in enumerate(GRID):
        stats = measure(overrides, problems=args.problems)
        ok = meets(stats)
        rows.append({"overrides": overrides, "stats": stats, "meets": ok})
        set_weight = dict(overrides["domain.weights"]).get("set", 0.0)
        print(f"{i:>2} {overrides['generator.silent_fix_rate']:>10} {set_weight:>4g} "
              f"{stats['disagreement']:>8.3f} {stats['right_wrong_step']:>16.3f} {stats['pass@1']:>7.3f} "
              f"{stats['pass@16']:>7.3f}{'  <- meets the rule' if ok else ''}", flush=True)
        if ok and chosen is None:
            chosen = i
            if not args.all:
                break
    if args.out:
        command = " ".join(["scripts/synthetic_setting.py", *(argv if argv is not None else sys.argv[1:])])
        with open(args.out, "w") as f:
            json.dump({"rule": RULE, "seeds": list(DEV_SEEDS), "problems": args.problems, "candidates": rows,
                       "chosen": chosen, "command": command, **run_record()}, f, indent=1)
            f.write("\n")
    print("chosen:", "none" if chosen is None else chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
