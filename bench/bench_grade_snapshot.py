"""The parser snapshot (``prmkit.grade.parser_cache``) on pairs its corpus was not written against, side by side.

Pairs: ProcessBench's 1,000 MATH solutions (``../shared/data/processbench/math.json``; PRMKIT_SHARED_DATA
overrides), each graded as a grader meets it: given, the solution's steps but the last, then "So the answer is"
and the last step's boxed answer without spaces; gold, that boxed answer. Only the pairs prmkit's fast path leaves
to Math-Verify's parser are timed (the snapshot changes nothing else). Each run is a fresh process that grades them
on one thread (``InProcess``), cold: with the snapshot (built beforehand, untimed, as on any machine after its first
grading) and without it (``PRMKIT_GRADE_PARSER_CACHE=0``), alternating. Both must give the same answers, parsed
forms included; the ratio is without / with.

    .venv/bin/python bench/bench_grade_snapshot.py [--repeat K] [--summary JSON]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prmkit.grade.parser_cache import ENV, cache_sizes, install
from prmkit.stack import GRADE_PACKAGES, numeric_stack, source_commit

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PRMKIT_SHARED_DATA", ROOT.parent / "shared" / "data"))
SOURCE = DATA / "processbench" / "math.json"
_BOX = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")


def parser_jobs() -> list[dict]:
    """The symbolic jobs of the ProcessBench pairs: those the fast path does not decide."""
    from prmkit.grade import fast_path

    jobs = []
    for row in json.loads(SOURCE.read_text()):
        boxes = _BOX.findall("\n\n".join(row["steps"]))
        if boxes:
            given = "\n\n".join(row["steps"][:-1]) + f"\n\nSo the answer is ${boxes[-1].replace(' ', '')}$."
            job = fast_path(given, f"${boxes[-1]}$")
            if isinstance(job, dict):
                jobs.append(job)
    return jobs


def child() -> dict:
    """In this fresh process: the snapshot installed (or not), then every job once; seconds and answers."""
    from prmkit.grade import InProcess

    jobs = parser_jobs()
    pool = InProcess()
    start = time.perf_counter()
    answers = [pool.run(job) for job in jobs]
    return {"seconds": time.perf_counter() - start, "answers": answers, "dfa_states": cache_sizes()}


def run_child(snapshot: bool) -> dict:
    env = dict(os.environ, **({} if snapshot else {ENV: "0"}))
    out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per arm; timings are medians")
    parser.add_argument("--summary", metavar="JSON", help="also write the numbers to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child()))
        return
    if not SOURCE.exists():
        sys.exit(f"{SOURCE} is absent: this benchmark reads ProcessBench from the shared data")
    built = install()  # untimed: the snapshot exists on any machine after its first grading
    runs = {"with": [], "without": []}
    for k in range(args.repeat):
        for arm in ("without", "with"):
            runs[arm].append(run_child(arm == "with"))
            print(f"run {k + 1}/{args.repeat} {arm} snapshot: {runs[arm][-1]['seconds']:.2f} s", flush=True)
    answers = {arm: [r["answers"] for r in rs] for arm, rs in runs.items()}
    same = all(a == answers["without"][0] for rs in answers.values() for a in rs)
    seconds = {arm: statistics.median(r["seconds"] for r in rs) for arm, rs in runs.items()}
    summary = {
        "bench": "bench/bench_grade_snapshot.py", "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
        "source": "ProcessBench math.json", "jobs": len(answers["with"][0]), "repeat": args.repeat,
        "snapshot": built, "dfa_states": {arm: rs[0]["dfa_states"] for arm, rs in runs.items()},
        "seconds": seconds, "runs": {arm: [r["seconds"] for r in rs] for arm, rs in runs.items()},
        "ratio": seconds["without"] / seconds["with"], "same_answers": same,
        "stack": numeric_stack(GRADE_PACKAGES), "commit": source_commit(),
        "command": " ".join(["python", *sys.argv]),
    }
    print(f"{summary['jobs']} jobs for the parser, one thread, cold: without the snapshot {seconds['without']:.2f} s, "
          f"with it {seconds['with']:.2f} s: {summary['ratio']:.2f}x; same answers: {same}")
    if args.summary:
        Path(args.summary).write_text(json.dumps(summary, indent=1) + "\n")
        print(f"wrote {args.summary}")
    if not same:
        sys.exit("the snapshot changed an answer")


if __name__ == "__main__":
    main()
