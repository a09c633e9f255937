#!/usr/bin/env python
"""Fill the generated tables of docs/*.md from the committed run summaries (docs/results/*.json).

    python scripts/docs_tables.py          rewrite every doc whose tables changed
    python scripts/docs_tables.py --check  exit 1 naming each stale doc (the test suite runs this)

A table is a block between ``<!-- generated: NAME RESULTS -->`` and ``<!-- end generated -->``
(:mod:`prmkit.lab.doctables`). To publish new numbers: copy a run's ``summary.json`` to
``docs/results/``, then run this script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prmkit.lab.doctables import render_doc

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report docs that do not match their summaries")
    args = parser.parse_args(argv)
    stale = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()
        new = render_doc(text, ROOT)
        if new != text:
            stale.append(doc.relative_to(ROOT))
            if not args.check:
                doc.write_text(new)
    for doc in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {doc}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
