"""Grading throughput, prmkit vs Math-Verify, on the same pairs, one run side by side.

Pairs: Math-Verify's own test cases (pred, gold) and MATH-500 (reference solution, answer), read from
../shared/data (PRMKIT_SHARED_DATA overrides). Math-Verify runs as its README shows, in this process
on the main thread with its own signal timeouts; prmkit runs ``grade_many`` with its worker pool
(started inside the timed region). Prints pairs/s, the ratio, and the agreement table.

    .venv/bin/python bench/bench_grade.py [--workers 2]
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prmkit.grade import GradeError, SymbolicPool, grade_many

DATA = Path(os.environ.get("PRMKIT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def load_pairs() -> list[tuple[str, str, str]]:
    cases = json.loads((DATA / "answers" / "math_verify_test_cases.json").read_text())
    pairs = [("mv-cases", c["pred"], c["gold"]) for c in cases]
    for line in (DATA / "math500" / "test.jsonl").read_text().splitlines():
        row = json.loads(line)
        pairs.append(("math500", row["solution"], row["answer"]))
    return pairs


def run_math_verify(pairs) -> tuple[list[bool], float]:
    from math_verify import parse, verify
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    start = time.perf_counter()
    # The README's usage; a bare gold answer is put in $...$ so that its LaTeX is found.
    out = [bool(verify(parse(_delimited(gold)), parse(given))) for _, given, gold in pairs]
    return out, time.perf_counter() - start


def run_prmkit(pairs, workers: int) -> tuple[list, float]:
    start = time.perf_counter()
    pool = SymbolicPool(workers=workers)
    try:
        results = grade_many([(given, gold) for _, given, gold in pairs], pool=pool, errors="keep")
    finally:
        pool.close()
    return results, time.perf_counter() - start


def _delimited(text: str) -> str:
    return text if re.search(r"\$|\\\(|\\\[|\\boxed", text) else f"${text}$"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="prmkit worker processes")
    args = parser.parse_args()
    pairs = load_pairs()
    mv, mv_s = run_math_verify(pairs)
    ours, ours_s = run_prmkit(pairs, args.workers)
    n = len(pairs)
    print(f"{n} pairs ({sum(p[0] == 'mv-cases' for p in pairs)} Math-Verify cases + "
          f"{sum(p[0] == 'math500' for p in pairs)} MATH-500)")
    print(f"math-verify: {mv_s:7.2f} s  {n / mv_s:8.1f} pairs/s  (in process, main thread)")
    print(f"prmkit     : {ours_s:7.2f} s  {n / ours_s:8.1f} pairs/s  ({args.workers} workers, start-up included)")
    print(f"ratio prmkit/math-verify: {mv_s / ours_s:.2f}x")
    reasons = collections.Counter(getattr(r, "reason", "error") for r in ours)
    print("prmkit reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    table = collections.Counter()
    for (source, _, _), r, m in zip(pairs, ours, mv):
        table[(source, "error" if isinstance(r, GradeError) else r.verdict, "correct" if m else "incorrect")] += 1
    print("\nagreement table (rows prmkit verdict, columns math-verify verdict)")
    for source in ("mv-cases", "math500"):
        print(f"  {source}:{'correct':>12}{'incorrect':>12}")
        for verdict in ("correct", "incorrect", "unparseable", "error"):
            row = [table[(source, verdict, c)] for c in ("correct", "incorrect")]
            if any(row):
                print(f"  {verdict:>12}{row[0]:>9}{row[1]:>12}")
    agree = sum(1 for r, m in zip(ours, mv) if not isinstance(r, GradeError) and r.correct == m)
    print(f"agreement {agree}/{n} = {agree / n:.3f}")


if __name__ == "__main__":
    main()
