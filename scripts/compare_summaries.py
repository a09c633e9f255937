"""Do two runs' summaries hold the same numbers? Every field is compared exactly except what says when,
where and from which code a run was made (wall times, the stack, the commit, the command).

    python scripts/compare_summaries.py BEFORE/study-synthetic/summary.json AFTER/study-synthetic/summary.json

How a refactor shows it changed no result (issue 32: the studies moved onto one driver): run the quick
size from the old and the new code into two folders and compare each study's summary. Exit status 1 and
one line per differing field when they differ.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

PROVENANCE = {"timings", "seconds", "step_time", "stack", "source", "commit", "command"}
"""Fields that record how a run went, not what it found (with every ``*_seconds``: wall times; ``step_time``: TRL's)."""


def is_provenance(key: str) -> bool:
    return key in PROVENANCE or key.endswith("_seconds")


def numbers(value):
    """``value`` without its provenance fields, at any depth."""
    if isinstance(value, dict):
        return {k: numbers(v) for k, v in value.items() if not is_provenance(k)}
    if isinstance(value, list):
        return [numbers(v) for v in value]
    return value


def differences(a, b, path: str = "") -> list[str]:
    """Every path where ``a`` and ``b`` differ (NaN equals NaN: both runs found no value).

    >>> differences({"x": [1, float("nan")], "t": {"timings": 1}}, {"x": [2, float("nan")], "t": {"timings": 2}})
    ['/x[0]: 1 != 2']
    """
    a, b = numbers(a), numbers(b)
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in one" for k in sorted(set(a) ^ set(b))]
        return out + [d for k in sorted(set(a) & set(b)) for d in differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    both_nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    return [] if a == b or both_nan else [f"{path}: {a!r} != {b!r}"]


def count_fields(value) -> int:
    """How many values ``value`` holds without its provenance (what :func:`differences` compares)."""
    value = numbers(value)
    if isinstance(value, dict):
        return sum(count_fields(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_fields(v) for v in value)
    return 1


RUN_FIELDS = ("command", "commit", "workers", "threads", "timings", "total_wall_seconds")
"""What a comparison record keeps of each run: how it was made and how long each stage took."""


def record(before: dict, afters: list[dict], what: str) -> dict:
    """Every run's command, commit and wall times, and whether every number each later run found is the first's."""
    found = [differences(before, after) for after in afters]
    return {"what": what, "identical_numbers": not any(found), "fields_compared": count_fields(before),
            "differences": [d for diffs in found for d in diffs],
            "runs": [{k: run.get(k) for k in RUN_FIELDS} for run in (before, *afters)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after", nargs="+", help="one or more summaries, each compared with BEFORE")
    parser.add_argument("--record", help="also write every run's wall times and the verdict to this JSON file "
                                         "(what docs/ tables are generated from)")
    parser.add_argument("--what", default="", help="what the runs differ in (kept in the record)")
    args = parser.parse_args(argv)
    with open(args.before) as f:
        before = json.load(f)
    afters, status = [], 0
    for path in args.after:
        with open(path) as f:
            afters.append(json.load(f))
        found = differences(before, afters[-1])
        for line in found:
            print(line)
        print(f"{path}: {'identical numbers' if not found else f'{len(found)} fields differ'}")
        status |= bool(found)
    if args.record:
        with open(args.record, "w") as f:
            json.dump(record(before, afters, args.what), f, indent=1)
            f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
