"""Compare two lab runs of the same seeds that differ only in float kernels: every number at N = 64.

    prmkit lab run --seeds 0 --threads 1 --out-dir runs/k1     (each from an empty $PRMKIT_CACHE)
    prmkit lab run --seeds 0 --threads 2 --workers 1 --out-dir runs/k2
    python scripts/compare_kernels.py runs/k1/summary.json runs/k2/summary.json --out docs/results/lab-kernels.json

Prints the largest difference against the target (every scorer's best-of-64 within 2 points) and the rows
that move most; ``--out`` writes the comparison with both runs' commands, threads and stacks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from prmkit.stack import run_record
from prmkit.lab.targets import kernel_differences


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="the first run's summary.json")
    p.add_argument("b", type=Path, help="the second run's summary.json")
    p.add_argument("--n", type=int, default=64, help="the N whose numbers are compared")
    p.add_argument("--out", type=Path, default=None, help="write the comparison here (JSON)")
    args = p.parse_args(argv)
    a, b = (json.loads(path.read_text()) for path in (args.a, args.b))
    result = kernel_differences(a, b, args.n)
    result["runs"] = [{k: s.get(k) for k in ("command", "commit", "threads", "workers", "stack", "seeds")}
                      for s in (a, b)]
    for row in sorted(result["rows"], key=lambda r: -r[5])[:10]:
        print("seed {} {:5} {:32} {:6.1f} {:6.1f}  diff {:.1f}".format(*row))
    verdict = "within" if result["within"] else "NOT within"
    print(f"largest difference {result['largest']:.1f} points: {verdict} the {result['tolerance']:.0f}-point target")
    if args.out:  # the comparison's own provenance beside the two runs': how to rerun it, on what code
        result.update(command=" ".join(["python scripts/compare_kernels.py", *(argv or sys.argv[1:])]), **run_record())
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
