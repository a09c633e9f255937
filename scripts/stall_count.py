"""How often does a single reward-model run of the lab's recipe stall? Count it over many runs, per arm.

A *stall*: the run ends with a held-out loss no better than predicting the training base rate (the
product's own plateau check, :func:`prmkit.train.plateau.plateau_check`): it learned the base rate only.
Beside it the script records every run's held-out metrics (step AUROC against the held-out labels, the
held-out loss and the base rate's).

Run ``i`` of ``--runs`` trains on development seed ``i mod 3``'s labelled data (the lab run's own data
job, cached under ``--work``) with training seed ``i`` and ``restarts=1``: the recipe of ``LabConfig.rm``
(``--preset``, with ``--set`` overrides, the same keys as ``prmkit lab run --set``), trained by
``prmkit.train`` in ``--workers`` processes. Only development seeds: the recipe is chosen here.

    # the recipe before the fix (evaluated every 50 steps for its held-out metrics; no effect on training)
    .venv/bin/python scripts/stall_count.py --runs 20 --label before --set rm.eval_every=50 --set rm.max_steps=300 \
        --set rm.lr=2e-3 --set rm.new_lr=1e-2 --set rm.early_stop_patience=0 --out docs/results/stalls.json
    # the recipe as committed
    .venv/bin/python scripts/stall_count.py --runs 20 --label after --out docs/results/stalls.json
    # the screen of candidate fixes (docs/lab.md, "Why single runs stall")
    .venv/bin/python scripts/stall_count.py --runs 4 --label C1 --set ... --out docs/results/stall-screen.json

``--out`` keeps one entry per ``--label`` (a rerun of a label replaces it), so before and after sit in one file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm import tqdm

from prmkit.config import parse_sets
from prmkit.lab.config import DEV_SEEDS, preset
from prmkit.stack import run_record

KEEP = ("plateau", "train_loss_end", "prior_entropy", "eval_prior_loss", "step_auroc", "eval_loss", "best_step",
        "last_step", "stopped_early")


def one_run(kind: str, run: int, cfg, base_dir: str, data_dir: str, work: str) -> dict:
    """Train run ``run`` of ``kind`` (one restart, training seed ``run``) as the lab run trains it, and return
    its final metrics."""
    import dataclasses

    from prmkit.lab.run import job_rm

    out = Path(work) / f"{kind}-{run}"
    out.mkdir(parents=True, exist_ok=True)
    one = dataclasses.replace(cfg, rm=dataclasses.replace(cfg.rm, restarts=1, resume=False))
    start = time.perf_counter()
    metrics = job_rm(out, kind, cfg.labelled, one, run, base_dir, data_dir, False)["metrics"]
    return {"kind": kind, "run": run, "data_seed": DEV_SEEDS[run % len(DEV_SEEDS)], "seconds":
            round(time.perf_counter() - start, 1), **{k: metrics[k] for k in KEEP if k in metrics}}


def prepare(cfg, work: Path) -> tuple[str, dict[int, str]]:
    """The base model (the lab's cache) and every development seed's data job, as ``prmkit lab run`` makes them."""
    from prmkit.lab.base import base_key, ensure_base
    from prmkit.lab.jobs import init_worker, run_job
    from prmkit.lab.run import data_key_of, job_data

    init_worker()
    base_dir = str(ensure_base(cfg, progress=True, log=lambda *a: None))
    data = {}
    for seed in DEV_SEEDS:
        folder = work / f"data-{seed}"
        run_job(str(folder), data_key_of(cfg, seed, base_key(cfg.base, cfg)), job_data, cfg, seed)
        data[seed] = str(folder)
    return base_dir, data


def summarise(runs: list[dict]) -> dict:
    out = {}
    for kind in sorted({r["kind"] for r in runs}):
        mine = [r for r in runs if r["kind"] == kind]
        aurocs = sorted(r["step_auroc"] for r in mine if "step_auroc" in r)
        out[kind] = {"runs": len(mine), "stalled": sum(bool(r.get("plateau")) for r in mine),
                     "worst_step_auroc": aurocs[0] if aurocs else None,
                     "median_step_auroc": aurocs[len(aurocs) // 2] if aurocs else None}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="default", help="the lab preset whose recipe is counted")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a LabConfig override")
    parser.add_argument("--runs", type=int, default=20, help="single runs per arm")
    parser.add_argument("--kinds", default="prm,orm", help="the arms, comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", default="runs/stalls", help="data and models (kept: rerun to look at a run)")
    parser.add_argument("--label", required=True, help="this count's name in --out (before, after, ...)")
    parser.add_argument("--out", help="JSON file that keeps one entry per --label")
    args = parser.parse_args(argv)
    cfg = preset(args.preset).replace(parse_sets(args.set))
    work = Path(args.work)
    start, source = time.perf_counter(), run_record()  # the code as it starts: a later commit is not its source
    base_dir, data = prepare(cfg, work)
    jobs = [(kind, i) for i in range(args.runs) for kind in args.kinds.split(",")]
    import multiprocessing

    from prmkit.lab.jobs import init_pool_worker

    runs = []
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=init_pool_worker) as pool:
        futures = [pool.submit(one_run, kind, i, cfg, base_dir, data[DEV_SEEDS[i % len(DEV_SEEDS)]],
                               str(work / args.label)) for kind, i in jobs]
        for f in tqdm(futures, desc="runs", file=sys.stderr):
            r = f.result()
            runs.append(r)
            tqdm.write(f"{r['kind']} run {r['run']:2d} (data seed {r['data_seed']}): plateau {r.get('plateau')} "
                       f"held-out loss {r.get('eval_loss', float('nan')):.3f} / base rate's "
                       f"{r.get('eval_prior_loss', float('nan')):.3f}, AUROC {r.get('step_auroc', float('nan')):.3f}")
    summary = summarise(runs)
    print(json.dumps(summary, indent=1))
    if args.out:
        path = Path(args.out)
        record = json.loads(path.read_text()) if path.is_file() else {}
        record[args.label] = {"preset": args.preset, "overrides": args.set, "runs": runs, "summary": summary,
                              "command": " ".join(["scripts/stall_count.py", *(argv if argv is not None else sys.argv[1:])]),
                              "seconds": round(time.perf_counter() - start, 1), **source}
        path.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
