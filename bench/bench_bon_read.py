"""Benchmark: ``prmkit eval bon`` on large pools against a bare read of the same file, side by side.

Run: ``.venv/bin/python bench/bench_bon_read.py --repeat 3`` (a few minutes on one core; ``--problems 100`` for a
first look). It writes, in the layouts the paper's and Qwen's releases use,

1. ``prm800k-samples``: one line per sample, as openai/prm800k's scored test samples (problem text,
   ``answer``, ``is_correct``, subject, level, unique id, the solution's ``steps``, per-step
   ``rating_probs``, ``prm_score``, ``orm_score``, ``ground_truth_answer``): 500 problems x 1,860 samples;
2. ``qwen-candidates``: one line per problem (the solutions' texts in ``code``, ``pred``, ``score``,
   ``pred_score``), the same pool;

and times, each in a fresh process, the whole command as a user runs it (imports, reading, answer
grouping by the grader, the exact best-of-N curves, voting, bootstrap; no output folder) against
a bare read of the file: every line through ``json.loads`` (the standard library), the baseline
the target is set against, with ``orjson.loads`` beside it. The ratio command / bare read is printed;
issue 36's target is at most 1.5 for each layout. ``--summary JSON`` writes every number.

Answers are drawn so that grouping has real work: per problem a gold answer and 5-40 wrong ones
(integers, fractions, roots, decimals, tuples), some written two ways (``\\frac{1}{2}`` and ``0.5``).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prmkit.stack import READ_PACKAGES, numeric_stack, source_commit

STEP = ("So we substitute $x = {x}$ into $f(x) = \\frac{{x^2 + {a}}}{{x - {b}}}$ and simplify the numerator "
        "first, which gives ${v}$; the denominator is nonzero here, so the value is defined.")
SUBJECTS = ("Algebra", "Counting & Probability", "Geometry", "Intermediate Algebra", "Number Theory",
            "Prealgebra", "Precalculus")


def answer_forms(rng: np.random.Generator, k: int) -> list[str]:
    """``k`` distinct answers of the shapes MATH answers take, a few of them written two equal ways."""
    out: list[str] = []
    while len(out) < k:
        kind = rng.integers(6)
        a, b = int(rng.integers(1, 60)), int(rng.integers(2, 12))
        form = [str(a), f"\\frac{{{a}}}{{{b}}}", f"{a}\\sqrt{{{b}}}", f"({a}, {b})", f"{a / b:.3f}",
                f"-\\frac{{{a}}}{{{b}}}"][kind]
        if form not in out:
            out.append(form)
        if kind == 1 and a % b == 0 and len(out) < k:
            out.append(str(a // b))  # the same value written as an integer: grouping must merge them
        if kind == 1 and b in (2, 4, 5, 8) and len(out) < k:
            out.append(f"{a / b:g}")  # and as a decimal
    return out


def write_prm800k_samples(path: Path, problems: int, samples: int, seed: int = 0) -> int:
    """The released per-sample layout; returns the number of lines."""
    rng = np.random.default_rng(seed)
    lines = 0
    with open(path, "w", encoding="utf-8") as f:
        for p in range(problems):
            forms = answer_forms(rng, int(rng.integers(6, 41)))
            weights = 1.0 / np.arange(1, len(forms) + 1) ** 1.2
            picks = rng.choice(len(forms), size=samples, p=weights / weights.sum())
            gold = forms[int(rng.integers(len(forms)))]
            problem = f"Problem {p}. Let $f(x) = \\frac{{x^2 + {p}}}{{x - 3}}$. Find the value the question asks for."
            for s in range(samples):
                answered = rng.random() > 0.03
                answer = forms[picks[s]] if answered else None
                steps = [STEP.format(x=s % 7, a=p % 11, b=3, v=i) for i in range(int(rng.integers(3, 7)))]
                probs = [{"1": round(float(q), 6), "-1": round(float(1 - q) * 0.8, 6),
                          "0": round(float(1 - q) * 0.2, 6)} for q in rng.random(len(steps))]
                record = {"problem": problem, "answer": answer, "is_correct": answer == gold if answered else None,
                          "subject": SUBJECTS[p % len(SUBJECTS)], "level": 1 + p % 5,
                          "unique_id": f"test/{SUBJECTS[p % len(SUBJECTS)].lower()}/{p}.json",
                          "steps": steps + [f"# Answer\n\n{answer}"], "rating_probs": probs,
                          "orm_score": float(rng.random()), "prm_score": float(rng.random()),
                          "ground_truth_answer": gold}
                f.write(json.dumps(record) + "\n")
                lines += 1
    return lines


def write_qwen_candidates(samples_file: Path, path: Path) -> int:
    """The same pool in the one-line-per-problem layout; returns the number of lines."""
    by_problem: dict[str, dict] = {}
    with open(samples_file, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            row = by_problem.setdefault(r["problem"], {"idx": len(by_problem), "question": r["problem"],
                                                       "gt": r["ground_truth_answer"], "code": [], "pred": [],
                                                       "score": [], "pred_score": []})
            row["code"].append("\n\n".join(r["steps"]))
            row["pred"].append(r["answer"] or "")
            row["score"].append(bool(r["is_correct"]))
            row["pred_score"].append([r["prm_score"]])
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in by_problem.values())
    return len(by_problem)


BARE = """
import sys, time
loads = __import__(sys.argv[2]).loads
start = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    for line in f:
        loads(line)
print(time.perf_counter() - start)
"""


def bare_read(path: Path, parser: str) -> float:
    """Seconds a fresh process takes to decode every line of ``path`` with ``parser`` (json or orjson)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE, str(path), parser], check=True, capture_output=True)
    return time.perf_counter() - start


def command(path: Path, fmt: str, scores: str, extra: tuple[str, ...] = ()) -> float:
    """Seconds the whole ``prmkit eval bon`` command takes, in a fresh process."""
    argv = [sys.executable, "-m", "prmkit", "eval", "bon", str(path), "--from", fmt, "--score", scores,
            "--pad-to", "1860", *extra]
    start = time.perf_counter()
    done = subprocess.run(argv, check=False, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    took = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return took


def measure(path: Path, fmt: str, scores: str, repeat: int) -> dict:
    """Every timing of one layout, each the median of ``repeat`` fresh processes (the runs kept beside it)."""
    timings = {"bare_json_s": lambda: bare_read(path, "json"), "bare_orjson_s": lambda: bare_read(path, "orjson"),
               "command_s": lambda: command(path, fmt, scores),
               "command_no_vote_s": lambda: command(path, fmt, scores, ("--no-vote",))}
    runs = {name: [] for name in timings}
    for _ in range(repeat):  # interleaved, so a slow spell of the machine touches every timing alike
        for name, timed in timings.items():
            runs[name].append(timed())
    row = {"format": fmt, "bytes": path.stat().st_size, **{k: float(np.median(v)) for k, v in runs.items()},
           "runs": runs}
    row["ratio"] = row["command_s"] / row["bare_json_s"]
    row["ratio_no_vote"] = row["command_no_vote_s"] / row["bare_json_s"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=500, help="problems in the pool (the release: 500)")
    parser.add_argument("--samples", type=int, default=1860, help="samples per problem (the release: 1,860)")
    parser.add_argument("--workdir", default=None, help="keep the generated files here (default: a temporary folder)")
    parser.add_argument("--summary", metavar="JSON", help="also write the numbers to this file")
    parser.add_argument("--repeat", type=int, default=1, help="time each this many times and keep the median")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        samples = work / f"prm800k_samples_{args.problems}x{args.samples}.jsonl"
        lines = write_prm800k_samples(samples, args.problems, args.samples)
        qwen = work / f"qwen_candidates_{args.problems}x{args.samples}.jsonl"
        write_qwen_candidates(samples, qwen)
        rows.append(dict(measure(samples, "prm800k-samples", "prm_score,orm_score", args.repeat), lines=lines))
        rows.append(dict(measure(qwen, "qwen-candidates", "pred_score", args.repeat), lines=args.problems))
    print(f"{args.problems} problems x {args.samples} samples; seconds, each in a fresh process (median of "
          f"{args.repeat})")
    print(f"{'format':>16} {'MiB':>7} {'json':>6} {'orjson':>7} {'command':>8} {'--no-vote':>10} {'ratio':>6} "
          f"{'no-vote':>8}")
    for r in rows:
        print(f"{r['format']:>16} {r['bytes'] / 2**20:7.0f} {r['bare_json_s']:6.2f} {r['bare_orjson_s']:7.2f} "
              f"{r['command_s']:8.2f} {r['command_no_vote_s']:10.2f} {r['ratio']:6.2f} {r['ratio_no_vote']:8.2f}")
    print("ratio: the command against a bare json.loads of every line (target: at most 1.5)")
    if args.summary:
        summary = {"bench": "bench/bench_bon_read.py", "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
                   "problems": args.problems, "samples": args.samples, "repeat": args.repeat, "rows": rows,
                   "command": " ".join(["python", *sys.argv]), "commit": source_commit(),
                   "stack": numeric_stack(READ_PACKAGES)}
        Path(args.summary).write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if all(r["ratio"] <= 1.5 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
