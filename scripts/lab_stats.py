"""Write docs/results/lab-stats.json: `prmkit lab stats` of the default preset's held-out and OOD pools on
the report seeds, the summary that docs/lab.md's generator tables are rendered from.

    python scripts/lab_stats.py            # then: python scripts/docs_tables.py
"""

from __future__ import annotations

import json
from pathlib import Path

from prmkit.lab import generate_pool, pool_stats, preset
from prmkit.lab.config import REPORT_SEEDS
from prmkit.lab.stack import numeric_stack

OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "lab-stats.json"


def main() -> None:
    cfg = preset("default")
    pools = {split: {str(s): pool_stats(generate_pool(cfg, s, split)) for s in REPORT_SEEDS} for split in ("eval", "ood")}
    summary = {"command": "python scripts/lab_stats.py", "preset": cfg.name, "seeds": list(REPORT_SEEDS), **pools,
               "stack": numeric_stack()}
    OUT.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
