"""How far apart two equally good reward models land at best-of-N on the lab's held-out pool: the float-kernel
target's own noise floor, from the restarts a ``scripts/kernel_restarts.py`` run scored. A diagnosis on a
development seed; it changes no lab number.

    python scripts/kernel_noise.py docs/results/lab-kernels-restarts-6-seed1.json \\
        --out docs/results/lab-kernels-noise-seed1.json

Every restart the plateau check kept, of both runs, is one draw of the lab's training for its model (the two runs
differ only in float kernels, which the target says must not matter). Per model it writes:

- ``parts``: the spread of the restarts' best-of-N, split into the problems' share (two models of equal quality
  still pick differently on each problem, and the held-out pool has few problems) and the models' own share
  (:func:`prmkit.lab.targets.noise_parts`);
- ``ensembles``: for each size K, random pairs of disjoint K-restart ensembles (probabilities averaged), the root
  mean square of their best-of-N difference and the share of pairs within the target's tolerance;
- ``problems_needed``: how many held-out problems two models of equal quality need to land within the tolerance
  in 95% of pairs, at the measured disagreement per problem (:func:`prmkit.lab.targets.problems_for`).

It reads the scored files under ``<restarts json>.work/`` or ``--work`` (run ``kernel_restarts.py`` first, from the same
folder).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_restarts import MODELS, restart_scores


def step_matrix(scores: list, kind: str) -> np.ndarray:
    """A restart's scores as (solutions, steps), NaN-padded: the ORM's one column, the PRM's step P(correct)."""
    if kind == "orm":
        return np.asarray(scores, float)[:, None]
    width = max((len(s) for s in scores), default=1) or 1
    out = np.full((len(scores), width), np.nan)
    for i, s in enumerate(scores):
        out[i, :len(s)] = s
    return out


def pick_score(stacked: np.ndarray) -> np.ndarray:
    """The lab's pick score of an ensemble: probabilities averaged over restarts, then a PRM's min over steps."""
    mean = stacked.mean(axis=0)
    with np.errstate(all="ignore"):
        return np.where(np.isnan(mean).all(axis=1), np.nan, np.nanmin(np.where(np.isnan(mean), np.inf, mean), axis=1))


def measure(record: dict, work: Path, n: int, pairs: int, seed: int, tolerance: float) -> dict:
    from prmkit.io import read_solutions
    from prmkit.lab.study.core import bon_per_problem
    from prmkit.lab.targets import noise_parts, problems_for

    runs = [Path(r) for r in record["runs"]]
    held = list(read_solutions(runs[0] / f"seed-{record['seed']}" / "scores" / "label-free-eval" / "eval.jsonl.gz"))
    rng = np.random.default_rng(seed)
    out = {}
    for model, kind in MODELS.items():
        mats = [step_matrix(restart_scores(work / run.name / f"{model}-r{r}" / "eval.jsonl.gz", kind), kind)
                for run in runs for r in range(len(record["models"][model][run.name]["restarts"]))
                if r not in record["models"][model][run.name]["rejected"]]
        width = max(m.shape[1] for m in mats)
        stacked = np.stack([np.pad(m, ((0, 0), (0, width - m.shape[1])), constant_values=np.nan) for m in mats])
        values = np.stack([bon_per_problem(held, pick_score(stacked[i:i + 1]), n) for i in range(len(mats))])
        parts = noise_parts(values)
        sizes = {}
        for k in range(1, len(mats) // 2 + 1):
            diffs = []
            for _ in range(pairs):
                chosen = rng.permutation(len(mats))[:2 * k]
                a, b = (bon_per_problem(held, pick_score(stacked[idx]), n).mean() for idx in (chosen[:k], chosen[k:]))
                diffs.append(100 * (a - b))
            diffs = np.asarray(diffs)
            sizes[str(k)] = {"rms": round(float(np.sqrt(np.mean(diffs ** 2))), 4),
                             "within": round(float(np.mean(np.abs(diffs) <= tolerance)), 4)}
        out[model] = {"restarts": len(mats), "parts": parts, "ensembles": sizes,
                      "problems_needed": problems_for(parts, tolerance)}
        print(model, out[model], flush=True)
    return out


def main(argv=None) -> int:
    import torch

    from prmkit.lab.targets import KERNEL_TOLERANCE
    from prmkit.stack import run_record

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("restarts", type=Path, help="a kernel_restarts.py result (its runs' paths relative to this folder)")
    p.add_argument("--work", type=Path, default=None,
                   help="the folder of its scored restarts (default: the result's path + .work)")
    p.add_argument("--pairs", type=int, default=40, help="random ensemble pairs drawn per size")
    p.add_argument("--seed", type=int, default=0, help="the draws' seed")
    p.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    record = json.loads(args.restarts.read_text())
    work = args.work or Path(f"{args.restarts}.work")
    models = measure(record, work, record["n"], args.pairs, args.seed, KERNEL_TOLERANCE)
    result = {"seed": record["seed"], "n": record["n"], "tolerance": KERNEL_TOLERANCE, "from": str(args.restarts),
              "problems": next(iter(models.values()))["parts"]["problems"], "models": models,
              "command": f"python scripts/kernel_noise.py {args.restarts}{f' --work {args.work}' if args.work else ''} --pairs {args.pairs} --seed {args.seed} "
                         f"--out {args.out}", **run_record()}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
