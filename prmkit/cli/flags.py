"""The command vocabulary's building blocks (``docs/cli.md``, "The vocabulary"): one grammar for switches,
and old spellings that keep working for one release.

- :func:`add_switch`: ``--x`` switches on, ``--no-x`` off: the grammar every switch shares (a config's
  switches too, :func:`add_config_arguments`; :func:`switch_words` reads their older
  ``--x true|false``);
- :func:`add_config_arguments`: one flag per field of a config dataclass, so that the flags, the recipe
  keys and ``--set`` keys are one set of names;
- :func:`add_settings`: ``--recipe FILE`` and ``--set KEY=VALUE``, read by :func:`prmkit.config.from_args`;
- :func:`renamed`: a flag renamed to the vocabulary's spelling: the old one is hidden from ``--help``, does
  what the new one does, and warns with the new name (``FutureWarning``, printed by default);
- :func:`output_argument`: an output file as the positional ``OUT`` that an older ``--out FILE`` also sets.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
import warnings

from prmkit.config import Renamed, field_type, renamed

VOCABULARY = """\
Every command spells the same idea the same way:

| idea | spelling | e.g. |
|---|---|---|
| the file a command reads, the file it writes | positional `IN`, then `OUT` | `prmkit select IN OUT`, `prmkit grade IN [OUT]` |
| a folder it writes | `--out-dir DIR` | `prmkit train prm --out-dir runs/prm`, `prmkit eval bon IN --out-dir runs/eval` |
| the format of `IN`, of `OUT` | `--from FORMAT`, `--to FORMAT` | `prmkit data stats IN --from prm800k`, `prmkit label export OUT --to prm800k` |
| samples per problem | `--n N` | `prmkit generate IN OUT --n 64`, `prmkit lab generate OUT --n 8`, `prmkit search IN OUT --n 16` (its budget) |
| a list of N | `--ns N,N,...` | `prmkit eval bon IN --ns 1,4,16` |
| how many records to choose | `--count N` | `prmkit select IN OUT --count 500`, `prmkit label push IN --count 1000` |
| rollouts per step prefix | `--rollouts K` | `prmkit label auto IN OUT --rollouts 8` |
| a switch | `--x` on, `--no-x` off; it takes no value | `--skip-invalid`, `--no-vote` |
| settings | `--recipe FILE` < `--set KEY=VALUE` < the flags, where a command has a config | `prmkit train prm --set lr=1e-4`, `prmkit lab run --set rm.max_steps=400` |

The spellings before this vocabulary (`--out FILE`, `--format`, `-f`, `--samples`, `--k`, `--n` for a list of
N in `eval bon`, `--x true|false`) still work for one release: each prints a `FutureWarning` naming its new spelling.
"""
"""The vocabulary as docs/cli.md states it (a test walks every command against it)."""


def add_switch(parser, flag: str, help: str, default: bool = False) -> None:
    """``--x`` and ``--no-x`` into ``dest`` x (dashes to underscores), default ``default``."""
    state = "on" if default else "off"
    parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                        help=f"{help} (default: {state})")


def add_settings(parser) -> None:
    """``--recipe FILE`` and ``--set KEY=VALUE`` (repeatable) of a command with a config; the command builds
    it with :func:`prmkit.config.from_args` (defaults < recipe < ``--set`` < flags)."""
    parser.add_argument("--recipe", default=None, metavar="FILE",
                        help="recipe file (YAML, TOML or JSON) of settings by field name; --set and flags override it "
                             "(default: none)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="one setting by field name (repeatable); flags override it (default: none)")


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


def switch_words(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv`` with a config switch's older ``--x true|false`` spelt ``--x`` / ``--no-x`` (with a warning):
    a switch takes no value, so ``--per-problem IN`` can never read ``IN`` as its value.

    >>> p = argparse.ArgumentParser(prog="prmkit t")
    >>> a = p.add_argument("--x", action="store_const", const="true"); a.takes_word = True
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     switch_words(p, ["--x", "false", "in.jsonl"])
    ['--no-x', 'in.jsonl']
    """
    leaf, rest = parser, list(argv)
    for token in argv:  # follow the subcommands named in argv down to the command that parses the rest
        subs = [a for a in leaf._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and token in subs[0].choices:
            leaf = subs[0].choices[token]
    words = {s for a in leaf._actions if getattr(a, "takes_word", False) for s in a.option_strings}
    out, i = [], 0
    while i < len(rest):
        token = rest[i]
        nxt = rest[i + 1].lower() if i + 1 < len(rest) else ""
        if token in words and not token.startswith("--no-") and nxt in ("true", "false"):
            new = token if nxt == "true" else f"--no-{token[2:]}"
            warnings.warn(f"{leaf.prog}: {token} {rest[i + 1]} is renamed {new}; the old spelling goes in the next "
                          "release", FutureWarning, stacklevel=2)
            out.append(new)
            i += 2
            continue
        out.append(token)
        i += 1
    return out


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


def add_config_arguments(parser: argparse.ArgumentParser, cls, skip: tuple[str, ...] = ()) -> None:
    """One ``--flag`` per field of ``cls`` (``max_steps`` -> ``--max-steps``), default suppressed so that
    only flags given on the command line override the recipe. Values stay text: :func:`resolve`
    converts them as it converts a recipe's (:func:`prmkit.config.convert`)."""
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        tp = typing.get_origin(field_type(cls, f)) or field_type(cls, f)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        shown = ",".join(default) if isinstance(default, list) else "unset" if default is None else repr(default)
        kw = {"choices": f.metadata["choices"]} if "choices" in f.metadata else {}
        flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))  # the vocabulary's spelling (docs/cli.md)
        text = f.metadata["help"]
        # a help that already says its default ("; default: the model kind") is not told it twice
        default_note = "" if "default:" in text or "(default" in text else f"default: {shown}"
        if tp is bool:  # one grammar for switches everywhere: --x on, --no-x off (docs/cli.md)
            notes = "; ".join(n for n in (default_note, f"--no-{flag[2:]} to switch off") if n)
            on = parser.add_argument(flag, dest=f.name, default=argparse.SUPPRESS, action="store_const", const="true",
                                     help=f"{text} ({notes})")
            off = parser.add_argument("--no-" + flag[2:], dest=f.name, action="store_const", const="false",
                                      default=argparse.SUPPRESS, help=argparse.SUPPRESS)
            on.takes_word = off.takes_word = True  # `--x true|false` still read, for one release (prmkit.cli.flags)
            continue
        meta = f.metadata.get("metavar", {list: "A,B"}.get(tp, f.name.upper()))
        parser.add_argument(flag, dest=f.name, default=argparse.SUPPRESS, metavar=meta,
                            help=f"{text} ({default_note})" if default_note else text, **kw)
        if "was" in f.metadata:  # the spelling before the vocabulary, for one release
            renamed(parser, f.metadata["was"], flag)


__all__ = ["add_config_arguments", "add_settings", "add_switch", "complete_switches", "late_output", "output_argument", "renamed", "switch_words"]
