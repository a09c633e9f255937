"""``prmkit data``: convert step-labelled data between formats, validate it, summarise it.

The commands parse arguments and call :mod:`prmkit.convert` and :mod:`prmkit.stats`; bad input
surfaces as :class:`~prmkit.io.RecordError` (file, line, field), which ``prmkit`` prints with exit
status 2.
"""

from __future__ import annotations

import argparse
import functools
import json

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_switch, renamed
from prmkit.convert import FORMATS, NEUTRAL_POLICIES, SPLIT_MODES, SUPERVISE, Options, convert_file, read
from prmkit.io import RejectWriter, rejects_path, require_records
from prmkit.longcot import LONG_MODES, resplit
from prmkit.schema import Solution
from prmkit.stats import format_summary, summarize

GROUP_EPILOG = """\
examples:
  prmkit data formats
  prmkit data convert --from prm800k --to prmkit phase2_train.jsonl data.jsonl.gz
  prmkit data convert --from prmkit --to trl --neutral positive data.jsonl.gz trl.jsonl
  prmkit data validate data.jsonl.gz
  prmkit data stats data.jsonl.gz
"""

CONVERT_EPILOG = """\
examples:
  prmkit data convert --from prm800k --to prmkit phase1_train.jsonl p1.jsonl.gz
  prmkit data convert --from prmkit --to prm800k p1.jsonl.gz phase1_again.jsonl
  prmkit data convert --from stepwise-critic --to prmkit phase1_test.stepwise-critic.jsonl.gz p1t.jsonl
  prmkit data convert --from prmkit --to trl --neutral positive p1.jsonl.gz trl.jsonl
  prmkit data convert --from math-shepherd --to math-shepherd --supervise all in.jsonl out.jsonl
  prmkit data convert --from processbench --to prmkit --skip-invalid math.json pb.jsonl
      (bad rows go to pb.rejects.jsonl; their count is printed)
  prmkit data convert --from qwen-candidates --to prmkit qwen25math_math_cot_100.jsonl pool.jsonl
      (a solution per sample, cut into steps at blank lines, with its pred, score and pred_score;
      then `prmkit score --model M pool.jsonl scored.jsonl` and `prmkit eval bon scored.jsonl`)
  prmkit data convert --from text --split sentences answers.jsonl pool.jsonl
  prmkit data convert --from prmkit --split-long sentences --step-tokens 60 cot.jsonl steps.jsonl
      (each solution's text re-cut into steps of whole sentences, up to 60 words each; the new
      steps are unlabelled, so label them next; meta["prmkit_resplit"] says how)

The output is written to a temporary file and renamed when complete: an interrupted run leaves
nothing behind, and an output equal to the input is refused, as is an input with no records (unless
--allow-empty). `prmkit data formats` lists formats.
"""


def _options(args: argparse.Namespace) -> Options:
    return Options(neutral=args.neutral, supervise=args.supervise, marker=args.marker, split=args.split)


def _resplitter(args: argparse.Namespace):
    """The record transform of --split-long/--step-tokens, or None; --step-tokens alone is an error, not ignored."""
    if args.step_tokens < 0:
        raise ValueError(f"--step-tokens must be >= 0 (0: no packing), got {args.step_tokens}")
    if args.split_long is None:
        if args.step_tokens:
            raise ValueError("--step-tokens packs the steps of --split-long: give --split-long MODE too")
        return None
    return functools.partial(resplit, how=args.split_long, max_tokens=args.step_tokens)


def cmd_convert(args: argparse.Namespace) -> int:
    transform = _resplitter(args)
    if not args.allow_empty:
        require_records(args.input, "--allow-empty writes an empty OUT")
    rejects = RejectWriter(rejects_path(args.output)) if args.skip_invalid else None
    report = convert_file(args.input, args.output, args.source, args.target, _options(args), rejects, transform)
    print(f"{args.input} -> {args.output}: {report.summary()}")
    if rejects is not None:
        rejects.close()
        if rejects.count:
            print(f"{rejects.count} invalid records written to {rejects.path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    require_records(args.file)
    rejects = RejectWriter(rejects_path(args.file)) if args.skip_invalid else None
    counts = {"solutions": 0, "problems": 0}
    for record in read(args.file, args.format, Options(marker=args.marker), rejects):
        counts["solutions" if isinstance(record, Solution) else "problems"] += 1
    what = ", ".join(f"{v} {k}" for k, v in counts.items() if v) or "no records"
    if rejects is None:
        print(f"{args.file}: valid ({what})")
        return 0
    rejects.close()
    print(f"{args.file}: {what} valid, {rejects.count} invalid"
          + (f" (written to {rejects.path})" if rejects.count else ""))
    return 1 if rejects.count else 0


def cmd_stats(args: argparse.Namespace) -> int:
    require_records(args.file)
    problems = 0

    def solutions():
        nonlocal problems
        for record in read(args.file, args.format, Options(marker=args.marker)):
            if isinstance(record, Solution):
                yield record
            else:
                problems += 1

    summary = summarize(solutions())
    summary["problem_records"] = problems
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(format_summary(summary) + (f"\nproblem records (no steps): {problems}" if problems else ""))
    return 0


def cmd_formats(args: argparse.Namespace) -> int:
    width = max(len(name) for name in FORMATS)
    print(f"{'format':<{width}}  read  write  description")
    for name, fmt in FORMATS.items():
        print(f"{name:<{width}}  {'yes' if fmt.read else 'no':<4}  {'yes' if fmt.write else 'no':<5}  {fmt.doc}")
    print("\nEach format is documented with an annotated example in docs/formats.md.")
    return 0


def _format_flag(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--from", dest="format", default="prmkit", choices=sorted(FORMATS), metavar="FORMAT",
                   help=help_text + " (see `prmkit data formats`)")
    renamed(p, "--format", "--from")
    renamed(p, "-f", "--from")
    p.add_argument("--marker", default=Options.marker, help="Math-Shepherd's step marker")


def _add_convert(sub) -> None:
    p = sub.add_parser("convert", help="convert a file from one format to another", formatter_class=HelpFormatter,
                       epilog=CONVERT_EPILOG, description="Convert a file between formats through prmkit records.")
    names = sorted(FORMATS)
    p.add_argument("--from", dest="source", required=True, choices=names, metavar="FORMAT",
                   help=f"format of IN: {', '.join(names)}")
    p.add_argument("--to", dest="target", default="prmkit", choices=names, metavar="FORMAT", help="format of OUT")
    p.add_argument("input", metavar="IN", help="file to read (.gz read transparently)")
    p.add_argument("output", metavar="OUT", help="file to write (gzip if it ends in .gz); never the input")
    p.add_argument("--neutral", choices=NEUTRAL_POLICIES, default=None,
                   help="how a neutral (0) step becomes a binary label in trl, math-shepherd and processbench "
                        "output: positive, negative, or drop the solution; required when one is met")
    p.add_argument("--supervise", choices=SUPERVISE, default="first_error",
                   help="steps binary targets label: up to and including the first wrong one, or all")
    p.add_argument("--marker", default=Options.marker, help="Math-Shepherd's step marker (read and write)")
    add_switch(p, "--skip-invalid", "write bad records to OUT's .rejects.jsonl side file and go on, instead of stopping")
    add_switch(p, "--allow-empty", "convert an IN with no records into an empty OUT, instead of refusing it")
    cutting = [f"{name} {fmt.split}" for name, fmt in FORMATS.items() if fmt.split is not None]
    p.add_argument("--split", choices=SPLIT_MODES, default=None, metavar="MODE",
                   help="how formats that store a solution as one text cut it into steps "
                        f"({', '.join(SPLIT_MODES)}; marker: at --marker); default: the format's own "
                        f"({', '.join(cutting)})")
    p.add_argument("--split-long", choices=LONG_MODES, default=None, metavar="MODE",
                   help=f"re-split every solution ({', '.join(LONG_MODES)}): its steps joined by a blank line are "
                        "cut into new, unlabelled steps (ratings and values dropped; problems pass unchanged)")
    p.add_argument("--step-tokens", type=int, default=0, metavar="N",
                   help="with --split-long: pack consecutive pieces into steps of at most N words (a longer "
                        "piece stays whole; paragraphs never merge in sentences mode); 0: no packing")
    p.set_defaults(func=cmd_convert)


def register(subparsers) -> None:
    """Add the ``data`` group and its subcommands to ``prmkit``'s subparsers."""
    group = subparsers.add_parser("data", help="convert, validate and summarise step-labelled data",
                                  formatter_class=HelpFormatter, epilog=GROUP_EPILOG,
                                  description="Step-labelled data: convert between formats, validate, summarise.")
    sub = group.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)
    _add_convert(sub)

    p = sub.add_parser("validate", help="check every record of a file", formatter_class=HelpFormatter,
                       epilog="examples:\n  prmkit data validate data.jsonl.gz\n"
                              "  prmkit data validate --from prm800k --skip-invalid phase2_train.jsonl\n",
                       description="Read every record; report the first error (file:line: field) or a count.")
    p.add_argument("file", metavar="IN", help="file to check")
    _format_flag(p, "format of IN")
    add_switch(p, "--skip-invalid", "write bad records to IN's .rejects.jsonl side file, count them, exit 1 if any")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("stats", help="counts and distributions of a file of solutions", formatter_class=HelpFormatter,
                       epilog="examples:\n  prmkit data stats data.jsonl.gz\n"
                              "  prmkit data stats --from prm800k --json phase2_test.jsonl\n",
                       description="Counts, rating distribution, steps per solution, finish reasons, label "
                                   "sources, right answers reached through a wrong step, soft values.")
    p.add_argument("file", metavar="IN", help="file to summarise")
    _format_flag(p, "format of IN")
    add_switch(p, "--json", "print the summary as JSON")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("formats", help="list the formats with what prmkit can do with each",
                       formatter_class=HelpFormatter, epilog="examples:\n  prmkit data formats\n")
    p.set_defaults(func=cmd_formats)
