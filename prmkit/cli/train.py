"""``prmkit train prm|orm``: train a process or outcome reward model (flags mirror :class:`TrainConfig`)."""

from __future__ import annotations

import json

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit train prm --data train.jsonl --base-model tiny-llama --out-dir runs/prm
  prmkit train prm --recipe recipes/prm-tiny.yaml --max-steps 50
  prmkit train orm --data train.jsonl --base-model tiny-qwen2 --head classify --out-dir runs/orm
  prmkit train prm --data mc.jsonl --head regress --label-source value --out-dir runs/prm-soft
  prmkit train lm --data pool.jsonl --out-dir runs/base --max-steps 400
  prmkit train prm --data train.jsonl --base-model runs/base --features surprise:runs/base --out-dir runs/prm
  accelerate launch --num_processes 8 -m prmkit train prm --recipe recipes/prm-gpu.yaml

Settings: defaults < --recipe file (YAML/TOML, keys = the flag names with underscores; --out-dir is `out`) < --set < flags.
Rerunning the same command resumes from the latest checkpoint in --out-dir. The output folder loads
with `prmkit score` and with transformers' from_pretrained (docs/training.md).
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("train", help="train process (PRM) and outcome (ORM) reward models, and base LMs",
                                   formatter_class=HelpFormatter, epilog=EPILOG)
    sub = parser.add_subparsers(dest="train_kind", metavar="KIND", required=True)
    for kind, text in (("prm", "a process reward model: one prediction per step"),
                       ("orm", "an outcome reward model: one prediction at the final token"),
                       ("lm", ("a causal LM on the solutions' text by next-token prediction (a base for reward "
                               "models, or the source of their surprise features)"))):
        p = sub.add_parser(kind, help=f"train {text}", formatter_class=HelpFormatter, epilog=EPILOG,
                           description=f"Train {text}.")
        add_settings(p)
        _add_config_flags(p, kind)
        p.set_defaults(func=run_train, kind=kind)


ONLY_FOR = {
    # the step-label policies, and what scoring makes of step scores, mean nothing to an ORM or an LM
    "supervise": "prm", "neutral": "prm", "score_neutral": "prm", "label_source": "prm", "value_threshold": "prm", "alternatives": "prm",
    "allow_one_class": "prm", "aggregations": "prm", "default_aggregation": "prm",
    # an ORM's target is the solution's outcome
    "outcome_source": "orm", "ungradable": "orm",
}
"""TrainConfig fields that one kind of model reads: only ``prmkit train KIND`` of that kind offers them."""


def _add_config_flags(p, kind: str) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.train.config import TrainConfig

    add_config_arguments(p, TrainConfig, skip=("kind", *(k for k, only in ONLY_FOR.items() if only != kind)))


def check_recipe_kind(recipe: dict, kind: str, path: str) -> None:
    """A recipe for ``prmkit train KIND`` sets nothing that only another kind reads: ValueError naming it
    (a setting that would do nothing is an error, not silently ignored).

    >>> check_recipe_kind({"lr": 0.1, "supervise": "all"}, "orm", "r.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: recipe r.toml sets supervise (PRM only), which `prmkit train orm` does not use: remove it ...
    """
    if recipe.get("kind", kind) != kind:
        raise ValueError(f"recipe {path} is for {recipe['kind']}, not {kind}")
    foreign = [k for k in recipe if ONLY_FOR.get(k, kind) != kind]
    if foreign:
        named = ", ".join(f"{k} ({ONLY_FOR[k].upper()} only)" for k in foreign)
        raise ValueError(f"recipe {path} sets {named}, which `prmkit train {kind}` does not use: remove "
                         f"{'it' if len(foreign) == 1 else 'them'} from the recipe")


def build_config(args):
    """The TrainConfig of parsed arguments: defaults < recipe < ``--set`` < flags given on the command line."""
    from prmkit.config import from_args, read_recipe
    from prmkit.train.config import TrainConfig

    recipe = read_recipe(args.recipe) if args.recipe else {}
    check_recipe_kind(recipe, args.kind, args.recipe)
    cfg = from_args(TrainConfig, args, recipe)
    if not cfg.data or not cfg.out:
        raise ValueError("--data and --out-dir are required (on the command line or in the recipe)")
    return cfg


def run_train(args) -> int:
    from prmkit.train.loop import train

    result = train(build_config(args))
    print(json.dumps(result))
    return 0
