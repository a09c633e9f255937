"""``prmkit label auto --method mc`` on the lab: rollouts/s, and what the rollout cache saves. One process,
side by side: mc with k=8 on the lab's 2,000 training solutions (cold cache), then k=16 on that cache
(only continuations 8..15 are sampled), against a cold k=16 run (the baseline), the two alternated
``--repeat`` times and the best of each shown; checks that the two k=16 runs write the same records
(continuation j does not depend on where its batch starts).

Solutions: ``generate_pool(preset("default"), 0, "train")``; rollouts: the lab backend (the rule-based
generator, default settings), graded by the lab oracle's ``grade_answer``; through ``label_file``, so the
partial file, the cache file and the final rename are timed as a user runs them. Issue target: the k=8
run in at most 10 minutes on 2 cores.

    .venv/bin/python bench/bench_autolabel.py [--k 8] [--solutions 2000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prmkit.generate.config import GenerateConfig
from prmkit.io import write_records
from prmkit.lab import preset
from prmkit.lab.backend import LabBackend
from prmkit.lab.oracle import grade_answer
from prmkit.lab.pools import generate_pool
from prmkit.label.auto.config import AutoLabelConfig
from prmkit.label.auto.run import label_file

TARGET_S = 600.0


def run(src: Path, out: Path, k: int, cache: Path) -> dict:
    backend = LabBackend(GenerateConfig(backend="lab", model="default"))
    cfg = AutoLabelConfig(method="mc", k=k, cache=str(cache), progress=False)
    return label_file(src, out, cfg, backend=backend, grade=grade_answer, log=lambda _: None)


def row(name: str, s: dict) -> str:
    return (f"{name:<22} {s['seconds']:8.2f} {s['rollouts']:>10} {s['rollouts_sampled']:>10} "
            f"{s['rollouts_cached']:>10} {s['cache_hit_rate']:>8.1%} {s['rollouts_per_s']:>12.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=8, help="rollouts per prefix of the first run (the rerun doubles it)")
    parser.add_argument("--solutions", type=int, default=2000, help="training solutions labelled (of 2,000)")
    parser.add_argument("--repeat", type=int, default=2, help="k=16 runs of each kind, alternated; the best is shown")
    args = parser.parse_args()
    pool = generate_pool(preset("default"), 0, "train")[:args.solutions]
    k, k2 = args.k, 2 * args.k
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        src = d / "train.jsonl"
        write_records(src, pool)
        first = run(src, d / f"mc{k}.jsonl", k, d / "rollouts.jsonl")
        warm, cold, same = None, None, True
        for i in range(args.repeat):  # alternated, best of each: the cores are shared
            shutil.copyfile(d / "rollouts.jsonl", d / f"warm{i}.jsonl")  # the k=8 cache as the first run left it
            w = run(src, d / f"mc{k2}-{i}.jsonl", k2, d / f"warm{i}.jsonl")  # a new OUT on the first run's cache
            c = run(src, d / f"mc{k2}-cold{i}.jsonl", k2, d / f"cold{i}.jsonl")
            same &= (d / f"mc{k2}-{i}.jsonl").read_bytes() == (d / f"mc{k2}-cold{i}.jsonl").read_bytes()
            warm = w if warm is None or w["seconds"] < warm["seconds"] else warm
            cold = c if cold is None or c["seconds"] < cold["seconds"] else cold
    steps = sum(len(s.texts) for s in pool)
    print(f"mc on {len(pool)} lab training solutions ({steps} steps), lab backend, oracle grader, via label_file")
    print(f"{'run':<22} {'seconds':>8} {'rollouts':>10} {'sampled':>10} {'cached':>10} {'hit rate':>8} "
          f"{'sampled/s':>12}")
    print(row(f"k={k} cold", first))
    print(row(f"k={k2} on the k={k} cache", warm) + f"  (best of {args.repeat})")
    print(row(f"k={k2} cold (baseline)", cold) + f"  (best of {args.repeat})")
    ratio = cold["seconds"] / warm["seconds"]
    print(f"k={k}: {first['rollouts_sampled'] / first['seconds']:.0f} rollouts/s, {first['seconds']:.1f} s "
          f"(target <= {TARGET_S:.0f} s: {'met' if first['seconds'] <= TARGET_S else 'MISSED'}); "
          f"k={k2} rerun: hit rate {warm['cache_hit_rate']:.1%}, {warm['seconds']:.1f} s")
    print(f"ratio cold k={k2} / cached k={k2} rerun: {ratio:.2f}x; same records: {same}")
    print(json.dumps({"bench": "autolabel", "solutions": len(pool), "steps": steps, "k": k,
                      "first_seconds": first["seconds"], "first_rollouts_per_s": round(first["rollouts_sampled"]
                                                                                      / first["seconds"], 1),
                      "first_rollouts_sampled": first["rollouts_sampled"], "rerun_k": k2,
                      "rerun_seconds": warm["seconds"], "rerun_hit_rate": warm["cache_hit_rate"],
                      "cold_seconds": cold["seconds"], "ratio_cold_over_cached": round(ratio, 2),
                      "target_s": TARGET_S, "same_records": same}))
    if not same:
        raise SystemExit("the cached and the cold k=16 runs wrote different records")


if __name__ == "__main__":
    main()
