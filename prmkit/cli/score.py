"""``prmkit score``: write step and solution scores of a trained PRM or ORM into a JSONL file."""

from __future__ import annotations

import json
import sys

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
    warning = truncation_warning(summary["truncation"], args.model)
    if warning:
        print(warning, file=sys.stderr)
    return 0


def truncation_warning(t: dict, model: str) -> str:
    """A line for people when scoring truncated solutions (empty when none were).

    >>> print(truncation_warning({"solutions_truncated": 2, "solutions": 10, "steps_lost": 5, "steps": 40}, "m")[:69])
    warning: 2 of 10 solutions were longer than m takes (its max_length):
    """
    if not t.get("solutions_truncated"):
        return ""
    return (f"warning: {t['solutions_truncated']} of {t['solutions']} solutions were longer than {model} takes "
            f"(its max_length): {t['steps_lost']} of {t['steps']} steps have no score, and those records carry "
            "NAME_steps_lost; a solution with no step left has no solution score. Train the model with a larger "
            "--max-length (0: the model's own limit)")
