"""Benchmark: exact best-of-N against the released 400-trial resampling, and the memory of a large pool.

Run: ``.venv/bin/python bench/bench_bon.py`` (about a minute on one core). It

1. writes a deterministic scored-sample file of 500 problems x 1,860 samples (the released protocol's
   shape; qwen-candidates format, 5% of samples answerless, scores rounded so that ties occur),
2. loads it and times the exact best-of-N curve for N in {10, ..., 1860} against the released
   protocol's 400 trials of pad-shuffle-take-pick (re-implemented, vectorised over trials), in one run,
   and checks that they agree within 3 standard errors of the resampling mean,
3. writes a prmkit-format file of 1,000,000 samples and loads it in a child process, reporting the
   peak resident memory it added and the size of the loaded arrays.

Files go to a temporary folder (``--workdir`` to keep them). Not a timed test: it prints numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prmkit.evaluate.bon import exact_bon, resample_bon
from prmkit.evaluate.pool import load_pool

RELEASED_NS = [10, 25, 50, 75, 100, 200, 300, 400, 500, 750, 1000, 1250, 1500, 1860]


def write_released_shape(path: Path, problems: int = 500, samples: int = 1860, seed: int = 0) -> None:
    """One line per problem: answers (None = answerless), grades and a reward-model score per sample."""
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as f:
        for p in range(problems):
            difficulty = rng.beta(2, 2)
            correct = rng.random(samples) < difficulty
            answered = rng.random(samples) > 0.05
            wrong = rng.integers(1, 6, samples)
            preds = [("0" if c else str(w)) if a else None for c, a, w in zip(correct, answered, wrong)]
            scores = np.round(rng.normal(size=samples) + 1.2 * correct, 2)
            f.write(json.dumps({"idx": p, "pred": preds, "score": (correct & answered).tolist(),
                                "pred_score": [[float(s)] for s in scores]}) + "\n")


def time_curves(path: Path, trials: int = 400) -> dict:
    pool = load_pool(path, format="qwen-candidates", answer_key="exact")
    times = []
    for _ in range(5):
        start = time.perf_counter()
        exact = exact_bon(pool, "pred_score", RELEASED_NS, pad_to=1860).mean(axis=0)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    trials_acc = resample_bon(pool, "pred_score", RELEASED_NS, trials=trials, pad_to=1860, seed=0)
    resample_time = time.perf_counter() - start
    se = trials_acc.std(axis=0, ddof=1) / np.sqrt(trials)
    diff = np.abs(exact - trials_acc.mean(axis=0))
    z = diff / np.maximum(se, 1e-12)  # at N = M_pad every trial draws everything: se is 0 up to rounding
    return {"exact_s_first": times[0], "exact_s_median": float(np.median(times)), "resample_s": resample_time,
            "ratio_median": resample_time / float(np.median(times)), "ratio_first": resample_time / times[0],
            "exact": exact, "resampled": trials_acc.mean(axis=0), "se": se, "z": z,
            "agree": bool(np.all(diff <= 3 * se + 1e-9))}


def write_million(path: Path, samples: int = 1_000_000, per_problem: int = 2000) -> None:
    """A prmkit-format file: one Solution record per line, a score and an integer answer each."""
    rng = np.random.default_rng(1)
    scores, answers = np.round(rng.random(samples), 4), rng.integers(0, 8, samples)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"problem": {"problem": f"problem {i // per_problem}", "id": str(i // per_problem)},
                                "answer": str(answers[i]), "grade": "correct" if answers[i] == 0 else "incorrect",
                                "scores": {"rm": float(scores[i])}}) + "\n" for i in range(samples))


CHILD = """
import json, sys, time
from prmkit.evaluate.pool import load_pool

def status(key):  # kB; VmHWM is this process's peak RSS (ru_maxrss would include the parent's, from before exec)
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key + ":"))

base = status("VmRSS")
start = time.perf_counter()
pool = load_pool(sys.argv[1], columns=["rm"], answer_key="exact")
took = time.perf_counter() - start
peak = status("VmHWM")
print(json.dumps({"samples": pool.n_samples, "base_mb": base / 1024, "peak_mb": peak / 1024,
                  "added_mb": (peak - base) / 1024, "arrays_mb": pool.nbytes / 2**20, "load_s": took}))
"""


def measure_memory(path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default=None, help="keep the generated files here (default: a temporary folder)")
    parser.add_argument("--trials", type=int, default=400, help="resampling trials (the released protocol: 400)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        released = work / "released_shape_500x1860.jsonl"
        write_released_shape(released)
        r = time_curves(released, args.trials)
        print(f"exact best-of-N curve, 500 problems x 1860 samples, {len(RELEASED_NS)} values of N:")
        print(f"  exact: {r['exact_s_median'] * 1e3:.0f} ms (median of 5; first call {r['exact_s_first'] * 1e3:.0f} ms)")
        print(f"  released protocol, {args.trials} trials (vectorised re-implementation): {r['resample_s']:.1f} s")
        print(f"  speed ratio: {r['ratio_median']:.0f}x (against the first exact call: {r['ratio_first']:.0f}x)")
        print(f"  {'N':>5} {'exact':>8} {'resampled':>10} {'se':>7} {'|z|':>5}")
        for n, e, m, s, z in zip(RELEASED_NS, r["exact"], r["resampled"], r["se"], r["z"]):
            print(f"  {n:>5} {100 * e:8.3f} {100 * m:10.3f} {100 * s:7.3f} {z:5.2f}")
        agree = r["agree"]
        finite = r["z"][r["se"] > 1e-9]
        print(f"  agreement within 3 standard errors at every N: {agree} (max |z| {finite.max():.2f} where se > 0)")
        million = work / "million.jsonl"
        write_million(million)
        mem = measure_memory(million)
        print(f"loading a {mem['samples']:,}-sample prmkit file (streamed): peak RSS {mem['peak_mb']:.0f} MB "
              f"(+{mem['added_mb']:.0f} MB over the imports), arrays {mem['arrays_mb']:.1f} MB, {mem['load_s']:.0f} s")
    return 0 if agree and r["ratio_median"] >= 100 else 1


if __name__ == "__main__":
    sys.exit(main())
