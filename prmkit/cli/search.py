"""``prmkit search``: PRM-guided search at test time (:mod:`prmkit.search`)."""

from __future__ import annotations

import dataclasses
import json

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit search problems.jsonl out.jsonl --prm runs/prm --backend hf --model ./policy --strategy beam --n 16 --m 4
  prmkit search problems.jsonl out.jsonl --prm runs/prm --backend lab --model default --strategy dvts --n 16
  prmkit search problems.jsonl out.jsonl --prm runs/prm --backend openai --model served --strategy particles
  prmkit search problems.jsonl out.jsonl --prm runs/prm --backend hf --model ./policy --strategy beam --lookahead 2
  prmkit search problems.jsonl out.jsonl --prm-url http://localhost:8000/v1 --backend lab --strategy beam   (a PRM served by prmkit serve --scorer)

Strategies (docs/search.md): best_of_n and weighted (N whole samples; the weighted pick groups answers by the
grader), beam (N first steps, the N/M best prefixes kept and each extended by M one-step continuations), dvts
(N/M subtrees, each greedy), particles (N particles resampled by their newest step's score); --lookahead k
ranks a prefix by its score k greedy steps ahead. One step is the step splitter's (--steps). Every line of
OUT: the chosen solution, every candidate made (the trace), the compute spent (generated tokens, PRM calls,
tokens the PRM read), and a stamp of the settings and models. A rerun resumes from .OUT.part; another
search's OUT is refused. Generation flags are `prmkit generate`'s (--backend, --model, --temperature, ...).
"""


def register(subparsers) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.generate.config import GenerateConfig
    from prmkit.search.run import GENERATION_ONLY, SearchRunConfig

    p = subparsers.add_parser("search", help="search with a PRM: beam search, DVTS, particle filtering, best-of-N",
                              formatter_class=HelpFormatter, epilog=EPILOG,
                              description="Search every problem of IN with a generator backend and a PRM; write "
                                          "the chosen solutions, traces and costs to OUT.")
    p.add_argument("input", metavar="IN", help="problems: any file prmkit reads (see --from)")
    p.add_argument("output", metavar="OUT", help="JSONL (.gz ok): one search result per problem")
    p.add_argument("--from", dest="input_format", default="prmkit", help="format of IN (a `prmkit data convert "
                                                                           "--from` format)")
    p.add_argument("--progress", action="store_true", default=True, help="show a progress bar")
    add_settings(p)
    add_config_arguments(p, SearchRunConfig, skip=("generate",))
    add_config_arguments(p.add_argument_group("generator (as prmkit generate; in a recipe or --set: generate.NAME)"),
                         GenerateConfig, skip=GENERATION_ONLY)
    p.set_defaults(func=run)


def run(args) -> int:
    from prmkit.config import flatten, parse_sets, read_recipe, resolve
    from prmkit.generate.config import GenerateConfig
    from prmkit.search.run import GENERATION_ONLY, SearchRunConfig, search_file

    ours = {f.name for f in dataclasses.fields(SearchRunConfig)}
    theirs = {f.name for f in dataclasses.fields(GenerateConfig)} - set(GENERATION_ONLY)
    flags = {k: v for k, v in vars(args).items() if k in ours and k != "generate"}
    flags |= {f"generate.{k}": v for k, v in vars(args).items() if k in theirs}
    recipe = {**flatten(read_recipe(args.recipe) if args.recipe else {}), **parse_sets(args.set or [])}
    cfg = resolve(SearchRunConfig, recipe, flags)
    print(json.dumps(search_file(args.input, args.output, cfg, args.input_format, progress=args.progress)))
    return 0
