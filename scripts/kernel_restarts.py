"""Where the float-kernel difference of a lab seed comes from: every restart of every reward model of two runs,
scored on the seed's held-out pool, each restart's best-of-N and the restarts' mean (an ensemble) beside the
restart the protocol chose. A diagnosis on a development seed, for choosing a recipe by a rule written later;
it changes no lab number.

    python scripts/kernel_restarts.py runs/after1 runs/k2 --seed 0 --out docs/results/lab-kernels-restarts.json

Each run folder is a finished ``prmkit lab run`` that kept its restarts (``seed-S/restarts/<model>-r<i>/run``),
its base model (``base/done.json`` names its cache folder) and its label-free scores (the base's surprise). The
scored files are cached under ``<out>.work/`` (keyed by the restart's and the label-free job's keys), so a rerun
only recomputes the numbers. The default preset's runs: 2,000 labels, the PRM by its min; the restarts are as many
as the runs' recipe trained (``rm.restarts``).

The ensembles by size (``ensembles``: size 2 up to every restart) average the first restarts, by index, that the
plateau check did not reject; size 1 is the restart the protocol chose. ``rule`` reads the rule written in
docs/lab.md before the six-restart runs: the smallest size at which every model's two runs differ by at most
``KERNEL_TOLERANCE`` at best-of-N.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

MODELS = {"prm": "prm", "orm": "orm", "prm_paper": "prm", "orm_paper": "orm"}
"""The lab run's reward models and their kinds."""
LABELLED = 2000
"""The default preset's label budget: the models' folders are named by it."""


def score_restart(run: Path, seed: int, model: str, restart: int, work: Path) -> Path:
    """The held-out pool scored by one restart of ``model`` by the lab's own scoring job, cached under ``work``
    and keyed by what the scores depend on: the restart's job key and the label-free job's (the base's surprise);
    a cached file under another key is scored again."""
    from prmkit.config import resolve
    from prmkit.lab.config import LabConfig
    from prmkit.lab.run import job_score_model

    folder = run / f"seed-{seed}" / "restarts" / f"{model}-{LABELLED}-r{restart}"
    free = run / f"seed-{seed}" / "scores" / "label-free-eval"
    key = " ".join(json.loads((f / "done.json").read_text())["key"] for f in (folder, free))
    out = work / run.name / f"{model}-r{restart}"
    scored = out / "eval.jsonl.gz"
    if not scored.exists() or not (out / "key").exists() or (out / "key").read_text() != key:
        out.mkdir(parents=True, exist_ok=True)
        cfg = resolve(LabConfig, json.loads((run / "config.json").read_text()))  # the ledger's (its runs only)
        base = json.loads((run / "base" / "done.json").read_text())["path"]
        job_score_model(out, "eval", cfg, base, str(free / "eval.jsonl.gz"), str(free), "x", str(folder / "run"))
        (out / "key").write_text(key)
    return scored


def restart_scores(path: Path, kind: str) -> list:
    """Per solution: the PRM's step P(correct) list, or the ORM's P(correct)."""
    from prmkit.io import read_solutions

    if kind == "orm":
        return [s.scores["x"] for s in read_solutions(path)]
    return [[st.scores["x_p_correct"] for st in s.steps if "x_p_correct" in st.scores] for s in read_solutions(path)]


def bon(pool_file: Path, scores: list, kind: str, n: int, work: Path) -> float:
    """Best-of-``n`` answer accuracy (exact) of one scoring of the held-out pool (PRM: the min over steps, the
    lab's score), through a file under ``work``."""
    from prmkit.evaluate.bon import exact_bon
    from prmkit.evaluate.pool import load_pool
    from prmkit.io import read_solutions, write_records

    sols = list(read_solutions(pool_file))
    for sol, s in zip(sols, scores, strict=True):
        sol.scores["k"] = float(s) if kind == "orm" else (float(min(s)) if s else float("nan"))
    tmp = work / "bon.jsonl.gz"
    write_records(tmp, sols)
    return float(exact_bon(load_pool(tmp, answer_key="exact"), "k", [n]).mean())


def measure(runs: list[Path], seed: int, work: Path, n: int) -> dict:
    """Per model and run: each restart's best-of-``n``, the restarts' ensemble (their probabilities averaged) and
    the restart the lab's protocol chose (0-based)."""
    out = {}
    for model, kind in MODELS.items():
        row = {}
        for run in runs:
            pool_file = run / f"seed-{seed}" / "scores" / "label-free-eval" / "eval.jsonl.gz"
            restarts = json.loads((run / "config.json").read_text())["rm"]["restarts"]
            each = [restart_scores(score_restart(run, seed, model, r, work), kind) for r in range(restarts)]
            record = json.loads((run / f"seed-{seed}" / f"rm-{model}-{LABELLED}" / "model" / "restarts.json").read_text())
            kept = [r for r, m in enumerate(record["runs"]) if not m.get("plateau")]
            sizes = {k: bon(pool_file, ensemble([each[r] for r in kept[:k]], kind), kind, n, work)
                     for k in range(2, len(kept) + 1)}
            row[run.name] = {"restarts": [bon(pool_file, e, kind, n, work) for e in each],
                             "ensemble": bon(pool_file, ensemble(each, kind), kind, n, work),
                             "chosen": record["chosen"], "rejected": [r for r in range(restarts) if r not in kept],
                             "ensembles": {str(k): v for k, v in sizes.items()}}
            print(model, run.name, row[run.name], flush=True)
        out[model] = row
    return out


def ensemble(scores: list, kind: str) -> list:
    """The restarts' probabilities averaged, per solution (and per step for a PRM)."""
    if kind == "orm":
        return [float(np.mean(v)) for v in zip(*scores)]
    return [list(np.mean(np.asarray(v, float), axis=0)) for v in zip(*scores)]


def read_rule(models: dict, tolerance: float) -> dict:
    """The rule of docs/lab.md: per ensemble size (1: the chosen restart), each model's difference in points between
    the two runs, and the smallest size at which every one is within ``tolerance`` points (None where none is)."""
    def at(r: dict, k: int) -> float:
        return r["restarts"][r["chosen"]] if k == 1 else r["ensembles"].get(str(k), float("nan"))

    largest = min(len(r["restarts"]) - len(r["rejected"]) for row in models.values() for r in row.values())
    by_size: dict[str, dict] = {}
    for k in range(1, largest + 1):
        for model, row in models.items():
            a, b = row.values()
            by_size.setdefault(str(k), {})[model] = round(100 * abs(at(a, k) - at(b, k)), 6)
    met = [int(k) for k, d in by_size.items() if max(d.values()) <= tolerance]
    return {"tolerance": tolerance, "differences": by_size, "chosen_size": min(met) if met else None}


def main(argv=None) -> int:
    from prmkit.stack import run_record

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("runs", nargs=2, type=Path, help="two finished lab run folders of the same seed")
    p.add_argument("--seed", type=int, default=0, help="the seed both ran (a development seed)")
    p.add_argument("--n", type=int, default=64, help="best-of-N at this N")
    p.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = p.parse_args(argv)
    from prmkit.lab.targets import KERNEL_TOLERANCE

    models = measure(args.runs, args.seed, Path(f"{args.out}.work"), args.n)
    result = {"seed": args.seed, "n": args.n, "runs": [str(r) for r in args.runs], "models": models,
              "rule": read_rule(models, KERNEL_TOLERANCE)}
    result.update(command=f"python scripts/kernel_restarts.py {' '.join(map(str, args.runs))} --seed {args.seed} "
                          f"--n {args.n} --out {args.out}", **run_record())
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
