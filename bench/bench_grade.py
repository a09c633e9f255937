"""Grading throughput and agreement, prmkit vs Math-Verify, on the same pairs, one run side by side.

Pairs: Math-Verify's own test cases (pred, gold), MATH-500 (reference solution, answer), and the
Qwen2.5-Math candidate pool (800 sampled solutions against their problem's gold), read from
../shared/data (PRMKIT_SHARED_DATA overrides), plus prmkit's regression table
(tests/data/grading_cases.jsonl). Math-Verify runs as its README shows, in this process on the main
thread with its own signal timeouts; prmkit runs ``grade_many`` with its worker pool.

Two timings each: cold (prmkit: worker start-up inside the timed region; Math-Verify: its first call in
this process, imports included) and warm (everything started, the same pairs again). The agreement
table counts, against the right verdict of each pair (Math-Verify's expectation for its cases, but for
the ones ``RIGHT_OVERRIDES`` corrects; correct for MATH-500; the pool's recorded correctness, but for
the one pair it gets wrong; the table's verdict), how often each grader accepts a wrong answer and
rejects a right one.

    .venv/bin/python bench/bench_grade.py [--workers N]
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
    from math_verify import parse, verify
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    start = time.perf_counter()
    # The README's usage; a bare gold answer is put in $...$ so that its LaTeX is found.
    out = [bool(verify(parse(_delimited(gold)), parse(given))) for _, given, gold, _ in pairs]
    return out, time.perf_counter() - start


def run_prmkit(pairs, pool: SymbolicPool) -> tuple[list, float]:
    start = time.perf_counter()
    results = grade_many([(given, gold) for _, given, gold, _ in pairs], pool=pool, errors="keep")
    return results, time.perf_counter() - start


def _delimited(text: str) -> str:
    return text if re.search(r"\$|\\\(|\\\[|\\boxed", text) else f"${text}$"


def _says_correct(result) -> bool:
    return not isinstance(result, GradeError) and result.correct


def agreement_table(pairs, verdicts: dict[str, list[bool]]) -> list[str]:
    lines = [f"  {'source':<11}{'pairs':>6}" + "".join(f"{g + ' right':>18}{'accepts wrong':>15}{'rejects right':>15}"
                                                      for g in verdicts)]
    for source in [*dict.fromkeys(p[0] for p in pairs), "all"]:
        idx = [i for i, p in enumerate(pairs) if source in ("all", p[0])]
        row = f"  {source:<11}{len(idx):>6}"
        for says in verdicts.values():
            right = sum(says[i] == pairs[i][3] for i in idx)
            accepts = sum(says[i] and not pairs[i][3] for i in idx)
            rejects = sum(pairs[i][3] and not says[i] for i in idx)
            row += f"{right:>11} {right / len(idx):6.1%}{accepts:>15}{rejects:>15}"
        lines.append(row)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="prmkit worker processes "
                        "(default: one per core)")
    args = parser.parse_args()
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
    sources = collections.Counter(p[0] for p in pairs)
    print(f"{n} pairs (" + ", ".join(f"{v} {k}" for k, v in sources.items()) + ")")
    for name, cold, warm, how in (("math-verify", mv_cold, mv_warm, "in process, main thread"),
                                  ("prmkit", ours_cold, ours_warm, f"{args.workers} workers")):
        print(f"{name:<12} cold {cold:6.2f} s {n / cold:8.1f} pairs/s   warm {warm:6.2f} s {n / warm:8.1f} pairs/s"
              f"  ({how})")
    print(f"ratio prmkit/math-verify: cold {mv_cold / ours_cold:.2f}x, warm {mv_warm / ours_warm:.2f}x")
    reasons = collections.Counter(getattr(r, "reason", "error") for r in ours)
    print("prmkit reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    print("\nagainst the right verdict (strict mode; 'accepts wrong' is the failure that becomes a false label)")
    print("\n".join(agreement_table(pairs, {"math-verify": mv, "prmkit": [_says_correct(r) for r in ours]})))
    hung = sum(getattr(r, "reason", "") == "timeout" for r in ours)
    print(f"prmkit timeouts: {hung}; errors: {sum(isinstance(r, GradeError) for r in ours)}")


if __name__ == "__main__":
    main()
