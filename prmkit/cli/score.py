"""``prmkit score``: write step and solution scores of a trained PRM or ORM into a JSONL file."""

from __future__ import annotations

import json

from prmkit.cli import HelpFormatter

EPILOG = """\
examples:
  prmkit score --model runs/prm candidates.jsonl scored.jsonl
  prmkit score --model runs/prm candidates.jsonl scored.jsonl --aggregations min,product --name prm
  prmkit score --model runs/orm scored.jsonl scored_orm.jsonl
  accelerate launch --num_processes 4 -m prmkit score --model runs/prm in.jsonl out.jsonl

One forward pass per solution. Step scores: p_pos, p_neg (p_neu), p_correct; solution scores:
NAME_product, NAME_min, NAME_last, NAME_mean (PRM) or NAME (ORM). Rerunning skips records already
scored; several processes shard the input and the output is merged in input order.
"""


def register(subparsers) -> None:
    from prmkit.score import ScoreConfig
    from prmkit.train.config import add_config_arguments

    p = subparsers.add_parser("score", help="score solutions with a trained PRM or ORM",
                              formatter_class=HelpFormatter, epilog=EPILOG,
                              description="Score every solution of IN with a trained reward model; write OUT.")
    p.add_argument("--model", required=True, help="a model folder written by `prmkit train`")
    p.add_argument("input", metavar="IN", help="prmkit JSONL (.gz ok)")
    p.add_argument("output", metavar="OUT", help="scored JSONL (.gz ok), written atomically")
    add_config_arguments(p, ScoreConfig)
    p.set_defaults(func=run_score)


def run_score(args) -> int:
    import dataclasses

    from prmkit.score import ScoreConfig, score_file
    from prmkit.train.config import resolve

    names = {f.name for f in dataclasses.fields(ScoreConfig)}
    cfg = resolve(ScoreConfig, None, {k: v for k, v in vars(args).items() if k in names})
    summary = score_file(args.model, args.input, args.output, cfg)
    print(json.dumps(summary))
    return 0
