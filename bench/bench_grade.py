"""Grading throughput and agreement, prmkit vs Math-Verify, on the same pairs, one run side by side.

Pairs: Math-Verify's own test cases (pred, gold), MATH-500 (reference solution, answer), and the
Qwen2.5-Math candidate pool (800 sampled solutions against their problem's gold), read from
../shared/data (PRMKIT_SHARED_DATA overrides), plus prmkit's regression table
(tests/data/grading_cases.jsonl). Math-Verify runs as its README shows, in this process on the main
thread with its own signal timeouts; prmkit runs ``grade_many`` with its worker pool.

Two timings each: cold (prmkit: worker start-up inside the timed region; Math-Verify: its first call in
this process, importing it included) and warm (everything started, the same pairs again). The agreement
table counts, against the right verdict of each pair (Math-Verify's expectation for its cases, but for
the ones ``RIGHT_OVERRIDES`` corrects; correct for MATH-500; the pool's recorded correctness, but for
the one pair it gets wrong; the table's verdict), how often each grader accepts a wrong answer and
rejects a right one.

    .venv/bin/python bench/bench_grade.py [--workers N] [--repeat K] [--summary JSON]

``--repeat K`` runs the whole bench K times, each in a fresh process (so that every cold timing is
cold), and reports the median of each timing; every run's seconds are kept in the summary (``runs``).

Beside them, each in a fresh process of its own: prmkit on one thread (``grade_many`` with
:class:`prmkit.grade.InProcess`: the symbolic step in the same process, no workers), cold and warm, and where
prmkit's time goes (``stages``): the string fast path, the exact reader (``prmkit.grade.exact``), the pairs
left to Math-Verify's parser and their seconds there, and one worker's start-up.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prmkit.grade import GradeError, SymbolicPool, grade_many
from prmkit.grade.report import agreement_rows, speed_rows
from prmkit.stack import GRADE_PACKAGES, numeric_stack, source_commit

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PRMKIT_SHARED_DATA", ROOT.parent / "shared" / "data"))
RIGHT_OVERRIDES = {
    261: False,  # 1 - 1/e against 1 + 1/e: the file records Math-Verify's bug as the expectation
}
"""Math-Verify test cases whose recorded expectation is not the mathematically right verdict."""
QWEN_WRONG = {(72, 7): True}  # 10000 against 10{,}000: the pool's own grader compared strings


def load_pairs() -> list[tuple[str, str, str, bool]]:
    """(source, given, gold, right verdict) for every pair."""
    pairs = []
    for c in json.loads((DATA / "answers" / "math_verify_test_cases.json").read_text()):
        right = RIGHT_OVERRIDES.get(c["id"], bool(c.get("expected", c.get("result"))))
        pairs.append(("mv-cases", c["pred"], c["gold"], right))
    for line in (DATA / "math500" / "test.jsonl").read_text().splitlines():
        row = json.loads(line)
        pairs.append(("math500", row["solution"], row["answer"], True))
    for i, line in enumerate((DATA / "candidates" / "qwen25math_math_cot_100.jsonl").read_text().splitlines()):
        row = json.loads(line)
        for j, (code, score) in enumerate(zip(row["code"], row["score"])):
            pairs.append(("qwen-pool", code, row["gt"], QWEN_WRONG.get((i, j), bool(score))))
    for line in (ROOT / "tests" / "data" / "grading_cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        if case["given"] is not None and case["mode"] == "strict":
            pairs.append(("regression", case["given"], case["gold"], case["verdict"] == "correct"))
    return pairs


def run_math_verify(pairs) -> tuple[list[bool], float]:
    start = time.perf_counter()  # cold: importing sympy and the parser is inside, as prmkit's workers do it
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
    from math_verify import parse, verify
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    if getattr(_Latex2Sympy, "_prmkit_two_stage", False):  # prmkit's worker module was imported here
        raise SystemExit("Math-Verify's parser is patched by prmkit.grade.worker in this process: the baseline "
                         "would not be Math-Verify's own")
    # The README's usage; a bare gold answer is put in $...$ so that its LaTeX is found.
    out = [bool(verify(parse(_delimited(gold)), parse(given))) for _, given, gold, _ in pairs]
    return out, time.perf_counter() - start


def run_prmkit(pairs, pool: SymbolicPool) -> tuple[list, float]:
    start = time.perf_counter()
    results = grade_many([(given, gold) for _, given, gold, _ in pairs], pool=pool, errors="keep")
    return results, time.perf_counter() - start


def run_single() -> dict:
    """In this (fresh) process: prmkit on one thread (the symbolic step in the process), cold then warm."""
    from prmkit.grade import InProcess

    given_gold = [(given, gold) for _, given, gold, _ in load_pairs()]
    single = {}
    for when in ("cold", "warm"):
        start = time.perf_counter()
        grade_many(given_gold, pool=InProcess(), errors="keep")
        single[when] = time.perf_counter() - start
    return single


def run_stages() -> dict:
    """In this (fresh) process: where prmkit's time goes. The fast path on every pair first, with its caches
    empty; then the pairs it leaves, in this process's parser twice (the second pass timed: a warm parser);
    then one worker's start-up."""
    from prmkit.grade import GradeResult, InProcess, fast_path

    given_gold = [(given, gold) for _, given, gold, _ in load_pairs()]
    start = time.perf_counter()
    triaged = [fast_path(given, gold) for given, gold in given_gold]
    fast_s = time.perf_counter() - start
    decided = [r for r in triaged if isinstance(r, GradeResult)]
    jobs = [r for r in triaged if not isinstance(r, GradeResult)]
    one = InProcess()
    for job in jobs:
        one.run(job)
    start = time.perf_counter()
    for job in jobs:
        one.run(job)
    parser_s = time.perf_counter() - start
    pool = SymbolicPool(workers=1)
    start = time.perf_counter()
    pool.run({"gold": "$1$", "given": "$1$", "mode": "strict"})
    started = time.perf_counter() - start
    pool.close()
    return {"fast_path_s": fast_s, "decided_in_process": len(decided),
            "decided_by_exact_values": sum(r.reason.endswith("-value") for r in decided),
            "to_parser": len(jobs), "parser_s_after_warm_up": parser_s, "worker_start_s": started}


def in_child(part: str) -> dict:
    """``run_single`` or ``run_stages`` in a fresh process of its own."""
    out = subprocess.run([sys.executable, __file__, "--child", part], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def _delimited(text: str) -> str:
    return text if re.search(r"\$|\\\(|\\\[|\\boxed", text) else f"${text}$"


def _says_correct(result) -> bool:
    return not isinstance(result, GradeError) and result.correct


def agreement(pairs, verdicts: dict[str, list[bool]]) -> dict:
    """Per source (and all): pairs, and per grader right / accepts wrong / rejects right counts."""
    out = {}
    for source in [*dict.fromkeys(p[0] for p in pairs), "all"]:
        idx = [i for i, p in enumerate(pairs) if source in ("all", p[0])]
        out[source] = {"pairs": len(idx)}
        for grader, says in verdicts.items():
            out[source][grader] = {"right": sum(says[i] == pairs[i][3] for i in idx),
                                   "accepts_wrong": sum(says[i] and not pairs[i][3] for i in idx),
                                   "rejects_right": sum(pairs[i][3] and not says[i] for i in idx)}
    return out


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="prmkit worker processes "
                        "(default: one per core)")
    parser.add_argument("--summary", metavar="JSON", help="also write the numbers to this file")
    parser.add_argument("--repeat", type=int, default=1, help="runs, each in a fresh process; timings are medians")
    parser.add_argument("--child", choices=["single", "stages"], help=argparse.SUPPRESS)  # a child's part
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_single() if args.child == "single" else run_stages()))
        return None
    if args.repeat > 1:
        return repeated(args)
    pairs = load_pairs()
    n = len(pairs)
    mv, mv_cold = run_math_verify(pairs)
    _, mv_warm = run_math_verify(pairs)
    pool = SymbolicPool(workers=args.workers)
    try:
        ours, ours_cold = run_prmkit(pairs, pool)
        _, ours_warm = run_prmkit(pairs, pool)
    finally:
        pool.close()
    summary = {
        "bench": "bench/bench_grade.py", "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "pairs": n,
        "graders": ["math-verify", "prmkit"],
        "how": {"math-verify": "README usage, in process, main thread", "prmkit": f"grade_many, {args.workers} workers"},
        "seconds": {"math-verify": {"cold": mv_cold, "warm": mv_warm}, "prmkit": {"cold": ours_cold, "warm": ours_warm}},
        "single_thread": in_child("single"), "stages": in_child("stages"),
        "sources": agreement(pairs, {"math-verify": mv, "prmkit": [_says_correct(r) for r in ours]}),
        "prmkit_reasons": dict(collections.Counter(getattr(r, "reason", "error") for r in ours).most_common()),
        "prmkit_timeouts": sum(getattr(r, "reason", "") == "timeout" for r in ours),
        "prmkit_errors": sum(isinstance(r, GradeError) for r in ours),
        "stack": numeric_stack(GRADE_PACKAGES),
        "commit": source_commit(),
    }
    print(f"{n} pairs (" + ", ".join(f"{v['pairs']} {k}" for k, v in summary["sources"].items() if k != "all") + ")")
    _print_table(*speed_rows(summary))
    print(single_thread_line(summary))
    print("prmkit's time: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in summary["stages"].items()))
    print("prmkit reasons: " + ", ".join(f"{k} {v}" for k, v in summary["prmkit_reasons"].items()))
    print("\nagainst the right verdict (strict mode; 'accepts wrong' is the failure that becomes a false label)")
    _print_table(*agreement_rows(summary))
    print(f"prmkit timeouts: {summary['prmkit_timeouts']}; errors: {summary['prmkit_errors']}")
    if args.summary:
        Path(args.summary).write_text(json.dumps(summary, indent=1) + "\n")
        print(f"wrote {args.summary} (publish: copy to docs/results/bench-grade.json, run scripts/docs_tables.py)")


def repeated(args) -> None:
    """The bench ``args.repeat`` times in fresh processes; the summary holds the median of every timing."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            path = Path(tmp) / f"run{k}.json"
            subprocess.run([sys.executable, __file__, "--workers", str(args.workers), "--summary", str(path)],
                           check=True, stdout=subprocess.DEVNULL)
            runs.append(json.loads(path.read_text()))
            print(f"run {k + 1}/{args.repeat}: " + ", ".join(
                f"{g} cold {t['cold']:.2f} s warm {t['warm']:.2f} s" for g, t in runs[-1]["seconds"].items()))
    summary = dict(runs[0], runs=[dict(r["seconds"], single_thread=r["single_thread"]) for r in runs])
    summary["seconds"] = {g: {w: statistics.median(r["seconds"][g][w] for r in runs) for w in ("cold", "warm")}
                          for g in summary["graders"]}
    summary["single_thread"] = {w: statistics.median(r["single_thread"][w] for r in runs) for w in ("cold", "warm")}
    summary["stages"] = {k: statistics.median(r["stages"][k] for r in runs) for k in runs[0]["stages"]}
    summary["how"] = {g: f"{h}; median of {args.repeat} fresh runs" for g, h in summary["how"].items()}
    summary["command"] = " ".join(["python", *sys.argv])
    _print_table(*speed_rows(summary))
    print(single_thread_line(summary))
    if args.summary:
        Path(args.summary).write_text(json.dumps(summary, indent=1) + "\n")
        print(f"wrote {args.summary}")


def single_thread_line(summary: dict) -> str:
    one, mv = summary["single_thread"], summary["seconds"]["math-verify"]
    return (f"prmkit on one thread (no workers): cold {one['cold']:.2f} s ({mv['cold'] / one['cold']:.2f}x Math-Verify), "
            f"warm {one['warm']:.2f} s ({mv['warm'] / one['warm']:.2f}x)")


if __name__ == "__main__":
    main()
