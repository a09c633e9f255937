"""``prmkit report``: one self-contained HTML page for a run folder."""

from __future__ import annotations

import argparse

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import output_argument

EPILOG = """\
examples:
  prmkit eval bon scored.jsonl --score prm_min --out-dir runs/r1 && prmkit report runs/r1
  prmkit report runs/r1 r1.html

Collects every result JSON that prmkit eval wrote in RUN_DIR and embeds its figures (base64), so the
page can be mailed or archived alone.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="write one self-contained HTML report for a run folder",
                              formatter_class=HelpFormatter, epilog=EPILOG)
    p.add_argument("run_dir", metavar="RUN_DIR", help="folder holding the outputs of prmkit eval (--out-dir)")
    output_argument(p, help="HTML file to write; default RUN_DIR/report.html")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from prmkit.evaluate.report import write_report

    path = write_report(args.run_dir, args.output)
    print(f"wrote {path}")
    return 0
