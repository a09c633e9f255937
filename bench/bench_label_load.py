"""Load on loopback: concurrent simulated labellers submitting step labels over HTTP to `prmkit label serve`.

For each backend (SQLite always; PostgreSQL when $PRMKIT_TEST_PG names a server, as
`eval "$(bash scripts/services.sh)"` sets it) a fresh database gets one project of phase-2 solutions,
a server starts in a subprocess, and N labellers (threads, one HTTP connection each) label until M labels
are acknowledged between them. Prints throughput (acknowledged labels per second of wall time), the
p95 latency of a label submission, and the check that every acknowledged label is stored exactly once.

    .venv/bin/python bench/bench_label_load.py                       # 50 labellers, 5000 labels
    .venv/bin/python bench/bench_label_load.py --labellers 10 --labels 1000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

from prmkit.testing.labelling import (
    ServerProcess,
    fresh_pg_database,
    run_load,
    setup_project,
    synthetic_candidates,
    verify_acks,
)


def measure(db_url: str, labellers: int, labels: int, seed: int, log: Path) -> dict:
    # Enough items that nobody runs dry: a solution yields ~6 labels before its first Bad step.
    items = max(labels // 3, labellers * 4)
    tokens = setup_project(db_url, "load", labellers, synthetic_candidates(items, n_steps=10, seed=seed), overlap=1)
    with ServerProcess(db_url, log=log) as server:
        result = run_load(server.url, [t for n, t in tokens.items() if n != "admin"], "load", labels, seed=seed)
    check = verify_acks(db_url, result.acks)
    return {"result": result, "check": check}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--labellers", type=int, default=50, help="concurrent simulated labellers")
    p.add_argument("--labels", type=int, default=5000, help="step labels to submit in all")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated labellers")
    p.add_argument("--json", action="store_true", help="print one JSON object per backend too")
    args = p.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        backends = [("sqlite", contextlib.nullcontext(f"sqlite:///{tmp}/load.db"))]
        if os.environ.get("PRMKIT_TEST_PG"):
            backends.append(("postgresql", fresh_pg_database(os.environ["PRMKIT_TEST_PG"])))
        else:
            print("postgresql: skipped ($PRMKIT_TEST_PG not set; see scripts/services.sh)")
        for name, ctx in backends:
            with ctx as url:
                out = measure(url, args.labellers, args.labels, args.seed, Path(tmp) / f"{name}.log")
            r, c = out["result"], out["check"]
            good = c["missing"] == c["wrong"] == c["duplicated"] == 0 and len(r.acks) == args.labels
            ok &= good
            print(f"{r.summary(name)}; {args.labellers} labellers; lost {c['missing']}, duplicated {c['duplicated']}, "
                  f"wrong {c['wrong']} -> {'OK' if good else 'FAIL'}")
            if args.json:
                print(json.dumps({"backend": name, "labels": len(r.acks), "seconds": round(r.duration_s, 2),
                                  "labels_per_s": round(r.throughput, 1), "p95_ms": round(r.p95_ms, 1), **c}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
