"""Where the float-kernel difference of a lab seed comes from: every restart of every reward model of two runs,
scored on the seed's held-out pool, each restart's best-of-N and the restarts' mean (an ensemble) beside the
restart the protocol chose. A diagnosis on a development seed, for choosing a recipe by a rule written later;
it changes no lab number.

    python scripts/kernel_restarts.py runs/after1 runs/k2 --seed 0 --out docs/results/lab-kernels-restarts.json

Each run folder is a finished ``prmkit lab run`` that kept its restarts (``seed-S/restarts/<model>-r<i>/run``),
its base model (``base/done.json`` names its cache folder) and its label-free scores (the base's surprise). The
scored files are cached under ``<out>.work/`` (keyed by the restart's and the label-free job's keys), so a rerun
only recomputes the numbers. The default preset's runs: 2,000 labels, 3 restarts, the PRM by its min.
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
RESTARTS = 3


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
            each = [restart_scores(score_restart(run, seed, model, r, work), kind) for r in range(RESTARTS)]
            mean = ([float(np.mean(v)) for v in zip(*each)] if kind == "orm"
                    else [list(np.mean(np.asarray(v, float), axis=0)) for v in zip(*each)])
            chosen = json.loads((run / "summary.json").read_text())["models"][str(seed)][f"rm-{model}-{LABELLED}"]["chosen"]
            row[run.name] = {"restarts": [bon(pool_file, e, kind, n, work) for e in each],
                             "ensemble": bon(pool_file, mean, kind, n, work), "chosen": chosen}
            print(model, run.name, row[run.name], flush=True)
        out[model] = row
    return out


def main(argv=None) -> int:
    from prmkit.lab.stack import run_record

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("runs", nargs=2, type=Path, help="two finished lab run folders of the same seed")
    p.add_argument("--seed", type=int, default=0, help="the seed both ran (a development seed)")
    p.add_argument("--n", type=int, default=64, help="best-of-N at this N")
    p.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = p.parse_args(argv)
    result = {"seed": args.seed, "n": args.n, "runs": [str(r) for r in args.runs],
              "models": measure(args.runs, args.seed, Path(f"{args.out}.work"), args.n)}
    result.update(command=f"python scripts/kernel_restarts.py {' '.join(map(str, args.runs))} --seed {args.seed} "
                          f"--n {args.n} --out {args.out}", **run_record())
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
