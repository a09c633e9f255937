"""``prmkit score``: write step and solution scores of a trained PRM or ORM into a JSONL file."""

from __future__ import annotations

import json
import sys

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit score --model runs/prm candidates.jsonl scored.jsonl
  prmkit score --model runs/prm candidates.jsonl scored.jsonl --aggregations min,product --name prm
  prmkit score --model runs/orm scored.jsonl scored_orm.jsonl
  accelerate launch --num_processes 4 -m prmkit score --model runs/prm in.jsonl out.jsonl

One forward pass per solution. Step scores: p_pos, p_neg (p_neu), p_correct; solution scores:
NAME_product, NAME_min, NAME_last, NAME_mean (PRM) or NAME (ORM). Every record says which model
(folder, weights' digest) and settings wrote each NAME (meta.scored_by). Rerunning into OUT skips records
the same model and settings already scored; an OUT with NAME scores from another model or settings is
refused (--no-resume replaces them, --name adds another column); an OUT scored under other names only
(a PRM-scored file, now an ORM) gets the new column. Several processes shard the input and the output
is merged in input order.
"""


def register(subparsers) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.score import ScoreConfig

    p = subparsers.add_parser("score", help="score solutions with a trained PRM or ORM",
                              formatter_class=HelpFormatter, epilog=EPILOG,
                              description="Score every solution of IN with a trained reward model; write OUT.")
    p.add_argument("--model", required=True, help="a model folder written by `prmkit train`")
    p.add_argument("input", metavar="IN", help="prmkit JSONL (.gz ok)")
    p.add_argument("output", metavar="OUT", help="scored JSONL (.gz ok), written atomically")
    p.add_argument("--allow-empty", action="store_true", help="score an IN with no records into an empty OUT, "
                                                               "instead of refusing it")
    add_settings(p)
    add_config_arguments(p, ScoreConfig)
    p.set_defaults(func=run_score)


def run_score(args) -> int:
    from prmkit.config import from_args
    from prmkit.io import require_records
    from prmkit.score import ScoreConfig, score_file

    if not args.allow_empty:  # before the model loads: a missing, empty or broken IN fails at once
        require_records(args.input, "--allow-empty writes an empty OUT")
    cfg = from_args(ScoreConfig, args)
    summary = score_file(args.model, args.input, args.output, cfg)
    print(json.dumps(summary))
    warning = truncation_warning(summary["truncation"], args.model)
    if warning:
        print(warning, file=sys.stderr)
    return 0


def truncation_warning(t: dict, model: str) -> str:
    """A line for people when scoring truncated solutions (empty when none were): how many, what length
    would keep every step, and how to get a model with room for it.

    >>> t = {"solutions_truncated": 2, "solutions": 10, "steps_lost": 5, "steps": 40, "longest_needed": 5000,
    ...      "max_length": 4096}
    >>> print(truncation_warning(t, "m")[:70])
    warning: 2 of 10 solutions were longer than m takes (max_length 4096):
    """
    if not t.get("solutions_truncated"):
        return ""
    need, limit = t.get("longest_needed") or 0, t.get("max_length") or 0
    size = f"max_length {limit}" if limit else "its max_length"
    return (f"warning: {t['solutions_truncated']} of {t['solutions']} solutions were longer than {model} takes ({size}): "
            f"{t['steps_lost']} of {t['steps']} steps have no score, and those records carry NAME_steps_lost; a "
            f"solution with no step left has no solution score. The longest needs {need} tokens: retrain with "
            f"`--max-length {need}` or more. A base's position limit (max_position_embeddings) bounds it: a preset "
            f"base (tiny-llama, ...) is built with room for the --max-length you pass, and a larger --vocab-size "
            "makes its tokens longer and solutions shorter; a pretrained base needs one with a longer context. "
            "`prmkit eval steps --skip-unscored` or `eval bon` (which counts unscored samples) still read the file")
