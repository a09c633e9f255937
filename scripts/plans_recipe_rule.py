"""The plans recipe rule of docs/domains.md ("A plans recipe chosen on development seeds"), applied to the
development seeds' run summaries: the paper arms' PRM best-of-64 on the held-out pool under each candidate
score, averaged over the seeds, and the choice.

    python scripts/plans_recipe_rule.py runs/plans-dev0/summary.json runs/plans-dev12/summary.json \\
        --out docs/results/plans-recipe-rule.json

The rule (written before its numbers): candidates in order (a) ``min``, (b) ``product``; take (b) if its
mean is at least :data:`MARGIN` above (a)'s, else (a). Only development seeds (0, 1, 2) are accepted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

CANDIDATES = ("min", "product")
"""The PRM's solution scores, in the rule's order (the first is the lab's own)."""
MARGIN = 0.01
"""How far (a fraction: 1 point) a later candidate's mean must be above the first's to be taken."""
N = 64


def apply_rule(summaries: list[dict]) -> dict:
    """Each candidate's per-seed and mean paper-PRM best-of-64, and the chosen one.

    >>> h = {"prm_paper_min@64": 0.3, "prm_paper_product@64": 0.7}
    >>> s = {"domain": "plans", "seeds": [0, 1, 2], "results": {str(k): {"eval": h} for k in range(3)}}
    >>> apply_rule([s])["chosen"]
    'product'
    """
    from prmkit.lab.config import DEV_SEEDS

    per_seed = {}
    for summary in summaries:
        if summary.get("domain") != "plans":
            raise ValueError(f"a {summary.get('domain', 'ledger')} run's summary: the rule reads plans runs only")
        for seed in summary["seeds"]:
            if seed not in DEV_SEEDS or seed in per_seed:
                raise ValueError(f"seed {seed}: each development seed {tuple(DEV_SEEDS)} once, and no other")
            per_seed[seed] = summary["results"][str(seed)]["eval"]
    if sorted(per_seed) != sorted(DEV_SEEDS):
        raise ValueError(f"the rule needs every development seed {tuple(DEV_SEEDS)}; got {sorted(per_seed)}")
    means = {c: sum(h[f"prm_paper_{c}@{N}"] for h in per_seed.values()) / len(per_seed) for c in CANDIDATES}
    chosen = CANDIDATES[1] if means[CANDIDATES[1]] >= means[CANDIDATES[0]] + MARGIN else CANDIDATES[0]
    return {"metric": f"prm_paper_<score>@{N}, held-out pool", "margin": MARGIN, "seeds": sorted(per_seed),
            "per_seed": {c: {str(s): h[f"prm_paper_{c}@{N}"] for s, h in sorted(per_seed.items())} for c in CANDIDATES},
            "means": means, "chosen": chosen}


def main(argv=None) -> int:
    from prmkit.stack import run_record

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("summaries", nargs="+", type=Path, help="lab run summaries of the plans development seeds")
    p.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = p.parse_args(argv)
    summaries = [json.loads(path.read_text()) for path in args.summaries]
    result = apply_rule(summaries)
    result["runs"] = [{k: s.get(k) for k in ("command", "commit", "seeds")} for s in summaries]
    result.update(command=f"python scripts/plans_recipe_rule.py {' '.join(map(str, args.summaries))} --out {args.out}",
                  **run_record())
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"chosen: {result['chosen']} (means: " + ", ".join(f"{c} {100 * v:.1f}" for c, v in result["means"].items()) + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
