#!/usr/bin/env python
"""Write docs/results/lab-policy-sft.json: the ``sft`` policy of a preset (the lab's base fine-tuned by expert
iteration on its own samples, prmkit/lab/policy.py; issue 34, "a policy worth optimising").

It records each round's pass@1, valid@1 and right-answer-wrong-step on the fine-tuning's own measure problems
(round 0 is the base), then measures the base and the policy side by side on the held-out eval pools of
``--seeds`` (problems no round sampled or measured on), and the wall time of each part.

    python scripts/policy_sft.py                                  # the default family, report seeds 10-12
    python scripts/policy_sft.py --set sft.keep=valid --out /tmp/valid.json
    python scripts/docs_tables.py                                 # then render the docs

The default settings (``PolicyConfig``) were written before the first run: stop at the first round whose pass@1
reaches 25%, the middle of the 20-40% the issue asks for, at most four rounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from prmkit.lab import preset
from prmkit.lab.policy import MEASURES, ensure_policy, measure_pool, policy_path
from prmkit.stack import run_record

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
COMMITTED = {"preset": "default", "seeds": "10,11,12", "problems": 300, "samples": 8, "set": []}
"""What the committed summary is made from."""


def held_out(cfg, seeds: list[int], problems: int, samples: int) -> tuple[dict, dict]:
    """Per seed, the base's and the policy's measures on the eval split; the seconds each took."""
    out, seconds = {}, {}
    for s in seeds:
        out[str(s)] = {}
        for who in ("lm", "sft"):
            start = time.perf_counter()
            out[str(s)][who] = measure_pool(cfg.replace({"policy": who}), s, problems, samples)
            seconds[f"{who}/{s}"] = round(time.perf_counter() - start, 1)
    return out, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default=COMMITTED["preset"], help="the ledger preset whose base is fine-tuned")
    parser.add_argument("--seeds", default=COMMITTED["seeds"], help="comma-separated seeds of the held-out pools")
    parser.add_argument("--problems", type=int, default=300, help="held-out problems per seed")
    parser.add_argument("--samples", type=int, default=8, help="samples per held-out problem")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a lab setting, e.g. sft.keep=valid (repeatable)")
    parser.add_argument("--out", help="where to write (required unless every setting is the committed one)")
    args = parser.parse_args(argv)
    if not args.out and {k: getattr(args, k) for k in COMMITTED} != COMMITTED:
        parser.error("other settings than the committed summary's: give --out")
    import torch

    torch.set_num_threads(1)  # the numbers do not depend on the machine's other jobs' threads
    seeds = [int(s) for s in args.seeds.split(",")]
    cfg = preset(args.preset).replace({"policy": "sft", **dict(kv.split("=", 1) for kv in args.set)})
    start = time.perf_counter()
    cached = (policy_path(cfg) / "policy.json").is_file()
    folder = ensure_policy(cfg, progress=True)
    info = json.loads((folder / "policy.json").read_text())
    pools, seconds = held_out(cfg, seeds, args.problems, args.samples)
    summary = {"command": " ".join(["python scripts/policy_sft.py", *(argv if argv is not None else sys.argv[1:])]),
               "preset": cfg.name, "seeds": seeds, "measures": list(MEASURES), "sft": info["sft"],
               "rounds": info["rounds"], "held_out": pools,
               "held_out_size": {"problems": args.problems, "samples": args.samples},
               # the fine-tuning's own wall time, whether it ran now or was found in the cache (then not in total)
               "fine_tuning_seconds": info["seconds"], "policy_from_cache": cached,
               "seconds": {**seconds, "total": round(time.perf_counter() - start, 1)},
               **run_record()}
    out = Path(args.out) if args.out else RESULTS / "lab-policy-sft.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
