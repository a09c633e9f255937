"""Incremental PRM scoring (``prmkit.search.incremental``) against scoring every prefix whole, as a beam search asks:
``--beams`` chains grown a step at a time to ``--depth`` steps, each round's prefixes scored, side by side in one
process, alternated ``--repeat`` times and the best of each shown. Issue 35's target: incremental at least 3x
faster than whole-prefix rescoring at depth 10.

The PRM is a Llama-style model trained for a few steps by ``prmkit train`` on toy solutions (its weights do not
matter to the speed), ``--hidden`` wide and ``--layers`` deep, without per-token features (a model with them is
scored whole). Both scorers give the same numbers (checked here to 1e-5).

    .venv/bin/python bench/bench_incremental_scoring.py [--depth 10] [--beams 8] [--hidden 256] [--layers 4]
        [--summary docs/results/bench-incremental.json]

``--hidden`` and ``--layers`` take several values (``--hidden 256 512 --layers 4 8``: paired in order); ``--summary``
writes every size's numbers with the command and the numeric stack.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

TARGET = 3.0


def tiny_prm(folder: Path, hidden: int, layers: int) -> Path:
    from prmkit.io import write_records
    from prmkit.model.tiny import build_preset
    from prmkit.testing.toydata import make_solutions
    from prmkit.train.config import TrainConfig
    from prmkit.train.loop import train

    texts = [f"{a} + {b} = {a + b}, carried over\n# Answer\n\n{a + b}" for a in range(100) for b in range(10)]
    model, tok = build_preset("tiny-llama", texts, "AutoModelForCausalLM", 500, hidden_size=hidden,
                              intermediate_size=2 * hidden, num_hidden_layers=layers)
    model.save_pretrained(folder / "base")
    tok.save_pretrained(folder / "base")
    write_records(folder / "train.jsonl", make_solutions(64, seed=1))
    train(TrainConfig(data=str(folder / "train.jsonl"), out=str(folder / "model"), base_model=str(folder / "base"),
                      max_steps=2, batch_size=8, eval_fraction=0, save_every=0, progress=False, tensorboard=False))
    return folder / "model"


def chains(beams: int, depth: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[f"{rng.integers(100)} + {rng.integers(10)} = {rng.integers(120)}, carried over" for _ in range(depth)]
            for _ in range(beams)]


def run(scorer, problem, paths: list[list[str]], depth: int) -> tuple[float, list]:
    start, out = time.perf_counter(), []
    for d in range(1, depth + 1):
        out.append(scorer.score([(problem, p[:d]) for p in paths]))
    return time.perf_counter() - start, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--beams", type=int, default=8)
    ap.add_argument("--hidden", type=int, nargs="+", default=[256])
    ap.add_argument("--layers", type=int, nargs="+", default=[4])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--summary", type=Path, default=None, help="write every size's numbers here (JSON)")
    args = ap.parse_args(argv)
    if len(args.hidden) != len(args.layers):
        ap.error("--hidden and --layers pair in order: give as many of each")
    rows = [measure(args, hidden, layers) for hidden, layers in zip(args.hidden, args.layers)]
    for row in rows:
        print(json.dumps(row))
    if args.summary:
        from prmkit.stack import run_record

        args.summary.write_text(json.dumps({"rows": rows, "command": " ".join(["bench/bench_incremental_scoring.py", *(argv or sys.argv[1:])]),
                                            **run_record()}, indent=1) + "\n")
    if any(row["largest_difference"] > 1e-5 for row in rows):
        raise SystemExit("incremental scores differ from whole-prefix scores by more than 1e-5")


def measure(args, hidden: int, layers: int) -> dict:
    """Both scorers on one PRM size, alternated ``args.repeat`` times; the best time of each."""
    import torch

    from prmkit.schema import Problem
    from prmkit.score import Scorer
    from prmkit.search.adapters import PRMScorer
    from prmkit.search.incremental import IncrementalPRMScorer

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        scorer = Scorer(tiny_prm(Path(tmp), hidden, layers), device="cpu")
        problem = Problem("Start at 12. A + 2, B - 5, C + 7, D - 1. What is the final value?", answer="15")
        paths = chains(args.beams, args.depth)
        best = {"whole": float("inf"), "incremental": float("inf")}
        for _ in range(args.repeat):
            t_whole, whole = run(PRMScorer(scorer), problem, paths, args.depth)
            t_inc, inc = run(IncrementalPRMScorer(scorer), problem, paths, args.depth)  # a fresh cache each time
            best = {"whole": min(best["whole"], t_whole), "incremental": min(best["incremental"], t_inc)}
        worst = max(float(np.max(np.abs(a[0] - b[0]))) for r, s in zip(whole, inc) for a, b in zip(r, s))
    ratio = best["whole"] / best["incremental"]
    return {"depth": args.depth, "beams": args.beams, "hidden": hidden, "layers": layers, "repeat": args.repeat,
            "whole_s": round(best["whole"], 3), "incremental_s": round(best["incremental"], 3),
            "speedup": round(ratio, 2), "target": TARGET, "met": ratio >= TARGET, "largest_difference": worst}


if __name__ == "__main__":
    main()
