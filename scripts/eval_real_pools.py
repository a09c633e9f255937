#!/usr/bin/env python
"""The real pools of docs/evaluation.md, evaluated by ``prmkit eval bon`` as a user runs it, into one summary.

    python scripts/eval_real_pools.py --out docs/results/eval-real-pools.json
    python scripts/docs_tables.py

Reads the shared data (``PRMKIT_SHARED_DATA``, default ``../shared/data``): 100 MATH problems x 8 Qwen2.5-Math
samples with a reward model's ``pred_score``, and the 1,319 GSM8K problems x 4 solutions of OpenAI's example
file. Each pool's ``bon.json`` (every number) is kept under its name, beside the command, commit and stack.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prmkit.stack import run_record

POOLS = {
    "qwen25math": ("candidates/qwen25math_math_cot_100.jsonl", ("--score", "pred_score")),
    "gsm8k": ("candidates/gsm8k_example_model_solutions.jsonl", ()),
}
"""Each pool of the doc: its file under the shared data and the command's arguments beyond it."""


def evaluate(path: Path, extra: tuple[str, ...]) -> dict:
    """``prmkit eval bon PATH EXTRA`` in a fresh process; its ``bon.json`` without the per-problem arrays."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "prmkit", "eval", "bon", str(path), *extra, "--out-dir", out],
                       check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        result = json.loads((Path(out) / "bon.json").read_text())
    return {k: result[k] for k in ("pool", "ns", "metrics", "settings")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.environ.get("PRMKIT_SHARED_DATA", str(ROOT.parent / "shared" / "data")),
                        help="the shared data folder")
    parser.add_argument("--out", required=True, help="the summary to write")
    args = parser.parse_args()
    pools = {}
    for name, (file, extra) in POOLS.items():
        path = Path(args.data) / file
        if not path.is_file():
            raise SystemExit(f"{path}: not found (set --data or PRMKIT_SHARED_DATA to the shared data folder)")
        pools[name] = {"file": file, "arguments": list(extra), **evaluate(path, extra)}
        print(f"{name}: {pools[name]['pool']['problems']} problems")
    summary = {"pools": pools, "command": " ".join(["python", "scripts/eval_real_pools.py", *sys.argv[1:]]),
               **run_record()}
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
