"""``prmkit select``: choose which scored solutions to label (convincing wrong answers, uncertainty, top-K, random)."""

from __future__ import annotations

import argparse
import json

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit select --score prm_min --count 10 --per-problem scored.jsonl to_label.jsonl
  prmkit select --strategy convincing_wrong_answer --wrong-share 0.8 --count 500 scored.jsonl to_label.jsonl
  prmkit select --strategy uncertainty --score orm --count 200 scored.jsonl to_label.jsonl
  prmkit select --strategy random --count 4 --per-problem --seed 7 pool.jsonl to_label.jsonl
  prmkit label push --project gen-b --strategy in_order to_label.jsonl   (serve them in this order)

IN holds prmkit records with solution scores (`prmkit score`) and, for convincing_wrong_answer,
grades. A wrong answer is grade incorrect (a solution with no answer included); unparseable, where the
grader could not decide, is no verdict and not counted wrong unless --wrong-grades names it;
--answered-only counts only answered ones wrong (the paper's wrong-answer solutions). An
ungraded candidate is an error. Prints a JSON summary: chosen, problems, wrong_share among the chosen,
chosen per problem, and the ungradable (unparseable) count among the chosen and in the pool.
docs/labelling.md ("Choosing what to label") describes the strategies.
"""


def register(subparsers) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.select import SelectConfig

    p = subparsers.add_parser("select", help="choose which scored solutions to label", formatter_class=HelpFormatter,
                              epilog=EPILOG,
                              description="Choose solutions of IN with a selection strategy and write them to OUT, "
                                          "in serving order.")
    p.add_argument("input", metavar="IN", help="scored prmkit records (JSONL, .gz ok)")
    p.add_argument("output", metavar="OUT", help="the chosen records (JSONL, .gz ok), written atomically")
    add_settings(p)
    add_config_arguments(p, SelectConfig)
    p.set_defaults(func=run_select)


def run_select(args: argparse.Namespace) -> int:
    from prmkit.config import from_args
    from prmkit.io import NoRecords, read_solutions, write_records
    from prmkit.select import SelectConfig, select, summarise

    config = from_args(SelectConfig, args)
    candidates = list(read_solutions(args.input))
    if not candidates:
        raise NoRecords(args.input)
    chosen = select(candidates, config)
    write_records(args.output, chosen, inputs=[args.input])
    print(json.dumps(summarise(chosen, config.wrong_grades, candidates)))
    return 0
