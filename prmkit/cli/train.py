"""``prmkit train prm|orm``: train a process or outcome reward model (flags mirror :class:`TrainConfig`)."""

from __future__ import annotations

import json

from prmkit.cli import HelpFormatter

EPILOG = """\
examples:
  prmkit train prm --data train.jsonl --base-model tiny-llama --out runs/prm
  prmkit train prm --recipe recipes/prm-tiny.yaml --max-steps 50
  prmkit train orm --data train.jsonl --base-model tiny-qwen2 --head classify --out runs/orm
  prmkit train prm --data mc.jsonl --head regress --label-source value --out runs/prm-soft
  prmkit train lm --data pool.jsonl --out runs/base --max-steps 400
  prmkit train prm --data train.jsonl --base-model runs/base --features surprise:runs/base --out runs/prm
  accelerate launch --num_processes 8 -m prmkit train prm --recipe recipes/prm-gpu.yaml

Settings: defaults < --recipe file (YAML/TOML, keys = the flag names with underscores) < flags.
Rerunning the same command resumes from the latest checkpoint in --out. The output folder loads
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
        p.add_argument("--recipe", default=None, help="recipe file (YAML or TOML) with settings; flags override it")
        _add_config_flags(p)
        p.set_defaults(func=run_train, kind=kind)


def _add_config_flags(p) -> None:
    from prmkit.train.config import TrainConfig, add_config_arguments

    add_config_arguments(p, TrainConfig, skip=("kind",))


def build_config(args):
    """The TrainConfig of parsed arguments: defaults < recipe < flags given on the command line."""
    import dataclasses

    from prmkit.train.config import TrainConfig, read_recipe, resolve

    recipe = read_recipe(args.recipe) if args.recipe else {}
    if recipe.get("kind", args.kind) != args.kind:
        raise ValueError(f"recipe {args.recipe} is for {recipe['kind']}, not {args.kind}")
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    flags = {k: v for k, v in vars(args).items() if k in names}
    cfg = resolve(TrainConfig, recipe, flags)
    if not cfg.data or not cfg.out:
        raise ValueError("--data and --out are required (on the command line or in the recipe)")
    return cfg


def run_train(args) -> int:
    from prmkit.train.loop import train

    result = train(build_config(args))
    print(json.dumps(result))
    return 0
