"""Run every benchmark under bench/ in turn (each prints a ratio against its baseline)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failures = 0
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n=== {script.name} ===", flush=True)
        failures += subprocess.call([sys.executable, str(script)]) != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
