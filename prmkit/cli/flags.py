"""The command vocabulary's building blocks (``docs/cli.md``, "The vocabulary"): one grammar for switches,
and old spellings that keep working for one release.

- :func:`add_switch`: ``--x`` switches on, ``--no-x`` off: the grammar every switch shares (a config's
  switches, :func:`prmkit.train.config.add_config_arguments`, also take ``--x true|false``, as a recipe
  would write them);
- :func:`renamed`: a flag renamed to the vocabulary's spelling: the old one is hidden from ``--help``, does
  what the new one does, and warns with the new name (``FutureWarning``, printed by default);
- :func:`output_argument`: an output file as the positional ``OUT`` that an older ``--out FILE`` also sets.
"""

from __future__ import annotations

import argparse

from prmkit.config import Renamed, renamed

VOCABULARY = """\
Every command spells the same idea the same way:

| idea | spelling | e.g. |
|---|---|---|
| the file a command reads, the file it writes | positional `IN`, then `OUT` | `prmkit select IN OUT`, `prmkit grade IN [OUT]` |
| a folder it writes | `--out-dir DIR` | `prmkit train prm --out-dir runs/prm`, `prmkit eval bon IN --out-dir runs/eval` |
| the format of `IN`, of `OUT` | `--from FORMAT`, `--to FORMAT` | `prmkit data stats IN --from prm800k`, `prmkit label export OUT --to prm800k` |
| samples per problem | `--n N` | `prmkit generate IN OUT --n 64`, `prmkit lab generate OUT --n 8` |
| a list of N | `--ns N,N,...` | `prmkit eval bon IN --ns 1,4,16` |
| how many records to choose | `--count N` | `prmkit select IN OUT --count 500`, `prmkit label push IN --count 1000` |
| rollouts per step prefix | `--rollouts K` | `prmkit label auto IN OUT --rollouts 8` |
| a switch | `--x` on, `--no-x` off (a config's switches also take `--x true\\|false`) | `--skip-invalid`, `--no-vote` |
| settings | `--recipe FILE`, and `--set KEY=VALUE` where a command has dotted settings; flags override | `prmkit lab run --set rm.max_steps=400` |

The spellings before this vocabulary (`--out FILE`, `--format`, `-f`, `--samples`, `--k`, `--n` for a list of
N in `eval bon`) still work for one release: each prints a `FutureWarning` naming its new spelling.
"""
"""The vocabulary as docs/cli.md states it (a test walks every command against it)."""


def add_switch(parser, flag: str, help: str, default: bool = False) -> None:
    """``--x`` and ``--no-x`` into ``dest`` x (dashes to underscores), default ``default``."""
    state = "on" if default else "off"
    parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                        help=f"{help} (default: {state})")


def complete_switches(parser: argparse.ArgumentParser) -> None:
    """Give every plain ``--x`` switch (``store_true``) of ``parser`` and its subcommands its ``--no-x``, so
    that every switch of every command reads the same way (:func:`add_switch`'s grammar)."""
    for action in list(parser._actions):
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                complete_switches(sub)
        elif isinstance(action, argparse._StoreTrueAction) and action.option_strings[-1].startswith("--"):
            off = "--no-" + action.option_strings[-1][2:]
            if off not in parser._option_string_actions:
                container = next((g for g in parser._mutually_exclusive_groups if action in g._group_actions), parser)
                container.add_argument(off, dest=action.dest, action="store_false", help=argparse.SUPPRESS)
                if action.help and action.help is not argparse.SUPPRESS:
                    action.help += f" ({off} switches it off)"


def output_argument(parser, metavar: str = "OUT", help: str = "file to write") -> None:
    """An output file as an optional positional ``OUT``; the older ``--out FILE`` still sets it, with a
    warning (:func:`renamed`). An ``OUT`` after options (``IN --mode lenient OUT``) is taken too, where
    argparse alone would leave it unrecognised (:func:`late_output`)."""
    parser.add_argument("output", metavar=metavar, nargs="?", default=None, help=help)
    action = next(a for a in parser._actions if a.dest == "output")
    parser.add_argument("--out", dest="output", action=Renamed, new=action)
    parser.set_defaults(late_output=True)


def late_output(args, extra: list[str]) -> list[str]:
    """``extra`` (what argparse did not recognise) less the ``OUT`` of a command with an optional ``OUT``
    written after options: argparse fills ``IN [OUT]`` from the first run of positionals only.

    >>> import argparse
    >>> args = argparse.Namespace(late_output=True, output=None)
    >>> late_output(args, ["o.jsonl"]), args.output
    ([], 'o.jsonl')
    """
    if getattr(args, "late_output", False) and args.output is None and len(extra) == 1 \
            and not extra[0].startswith("-"):
        args.output = extra.pop()
    return extra


__all__ = ["add_switch", "complete_switches", "late_output", "output_argument", "renamed"]
