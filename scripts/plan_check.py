"""Check ``prmkit lab study NAME --plan``'s estimates against the seconds the jobs then take (issue 33: within 2x).

    python scripts/plan_check.py --study budget --preset quick --seeds 0,1 --out docs/results/plan-check-budget.json

1. the study runs on the first seed alone, from an empty cache and run folder of its own (``prmkit lab study``, a
   process of its own, as a user runs it);
2. the study is planned for every seed (:func:`prmkit.lab.study.plan.plan_study`, what ``--plan`` prints): the
   other seeds' jobs are estimated from the first seed's done jobs of the same kind (their median);
3. the study runs on every seed, and each job estimated in step 2 is read back with its measured seconds (its
   ``done.json``, the seconds the plan itself reads for a done job);
4. the summary holds each job's estimate, measured seconds and ratio, the median ratio per kind of job, the share
   of jobs within 2x, and the totals.

The published presets' own plans estimate a fresh study from the published summary's stage means instead; that
needs the published size, hours here, and is not what this script runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOLERANCE = 2.0
"""The issue's bound: an estimate within this factor of the measured seconds, either way."""


def run_study(study: str, preset: str, seeds: list[int], out: Path, env: dict) -> float:
    """``prmkit lab study`` in a process of its own; its wall seconds."""
    cmd = [sys.executable, "-m", "prmkit", "lab", "study", study, "--preset", preset, "--seeds",
           ",".join(map(str, seeds)), "--out-dir", str(out), "--no-progress"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def planned(study: str, preset: str, seeds: list[int], out: Path) -> list[dict]:
    """The plan's rows for ``seeds`` in ``out`` (what ``--plan`` prints), read in this process."""
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.plan import LATER, plan_study

    module = importlib.import_module(f"prmkit.lab.study.{study}")
    rows = plan_study(module.STUDY, study_preset(study, preset, "ledger"), seeds, out, "cpu")["rows"]
    return [r for r in rows if r.get("kind") != LATER]  # jobs not yet known are not estimates to check


def compare(estimated: list[dict], measured: list[dict]) -> dict:
    """Each job the plan estimated (not done when planned), its measured seconds once done, the ratio measured /
    estimate; per kind of job the median ratio; the share within :data:`TOLERANCE`; the totals.

    >>> est = [{"folder": "a", "job": "RM", "status": "to run", "estimate": 10.0}]
    >>> got = [{"folder": "a", "job": "RM", "status": "done", "seconds": 15.0}]
    >>> c = compare(est, got); c["jobs"][0]["ratio"], c["within"], c["share_within"]
    (1.5, True, 1.0)
    """
    seconds = {r["folder"]: r["seconds"] for r in measured if r["status"] == "done"}
    jobs = [{"folder": r["folder"], "job": r["job"], "estimate": r["estimate"], "measured": seconds.get(r["folder"]),
             "ratio": round(seconds[r["folder"]] / r["estimate"], 3) if r["estimate"] and seconds.get(r["folder"]) else None}
            for r in estimated if r["status"] != "done"]
    rated = [j for j in jobs if j["ratio"] is not None]
    inside = [j for j in rated if 1 / TOLERANCE <= j["ratio"] <= TOLERANCE]
    kinds = {}
    for j in rated:
        kinds.setdefault(j["job"], []).append(j["ratio"])
    total_estimate = sum(j["estimate"] for j in rated)
    total_measured = sum(j["measured"] for j in rated)
    return {"jobs": jobs, "unestimated": len(jobs) - len(rated),
            "by_kind": {k: {"jobs": len(v), "median_ratio": round(statistics.median(v), 3)} for k, v in sorted(kinds.items())},
            "share_within": round(len(inside) / len(rated), 4) if rated else None,
            "total_estimate": round(total_estimate, 1), "total_measured": round(total_measured, 1),
            "total_ratio": round(total_measured / total_estimate, 3) if total_estimate else None,
            "tolerance": TOLERANCE, "within": bool(rated) and len(inside) == len(rated)}


def main(argv=None) -> int:
    from prmkit.stack import run_record

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("--study", default="budget", help="the study (budget, active, synthetic, autolabel, pressure)")
    p.add_argument("--preset", default="quick", help="its preset")
    p.add_argument("--seeds", default="0,1", help="comma-separated seeds: the first runs first, the rest are estimated")
    p.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if len(seeds) < 2:
        p.error("--seeds needs at least two seeds: the first is run, the others estimated from it")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "PRMKIT_CACHE": str(tmp / "cache")}
        os.environ["PRMKIT_CACHE"] = env["PRMKIT_CACHE"]  # the plan reads the same cache (the base's folder)
        first = run_study(args.study, args.preset, seeds[:1], tmp / "run", env)
        estimated = planned(args.study, args.preset, seeds, tmp / "run")
        rest = run_study(args.study, args.preset, seeds, tmp / "run", env)
        measured = planned(args.study, args.preset, seeds, tmp / "run")
    result = {"study": args.study, "preset": args.preset, "seeds": seeds, "first_run_s": round(first, 1),
              "second_run_s": round(rest, 1), **compare(estimated, measured),
              "command": " ".join(["python scripts/plan_check.py", *(argv if argv is not None else sys.argv[1:])]),
              **run_record()}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("by_kind", "share_within", "total_estimate", "total_measured", "within")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
