"""Every command follows the vocabulary of docs/cli.md (prmkit.cli.flags.VOCABULARY): walked command by
command, so a new command or flag that spells an idea another way fails here."""

from __future__ import annotations

import argparse
import warnings

import pytest

from prmkit.cli import build_parser, parse_args, walk_commands
from prmkit.config import Renamed

RETIRED = {"--out", "--format", "-f", "--samples", "--k"}
"""Spellings the vocabulary replaced: hidden aliases at most."""
FILES_IN = {"input", "file", "files", "scored", "pairs"}


def leaves():
    return [(name, p) for name, p in walk_commands(build_parser())
            if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]


def visible(parser):
    return [a for a in parser._actions if a.option_strings and a.help is not argparse.SUPPRESS]


@pytest.mark.parametrize("name,parser", leaves(), ids=[n for n, _ in leaves()])
def test_the_command_follows_the_vocabulary(name, parser):
    shown = {s for a in visible(parser) for s in a.option_strings}
    assert not shown & RETIRED, f"{name} shows {shown & RETIRED}"
    if name not in ("prmkit generate", "prmkit search"):  # --n is samples per problem (search: its budget in
        assert "--n" not in shown or name.startswith("prmkit lab "), name  # samples); generate and the lab's pools
    for action in parser._actions:
        if not action.option_strings:  # positionals: IN and OUT for the files read and written
            if action.dest in FILES_IN:
                assert action.metavar == "IN", (name, action.dest, action.metavar)
            if action.dest == "output":
                assert action.metavar == "OUT", (name, action.metavar)
        elif "format" in action.dest and not isinstance(action, Renamed):
            assert set(action.option_strings) <= {"--from", "--to"}, (name, action.option_strings)
        elif isinstance(action, Renamed):  # an old spelling: hidden, and its new one is shown
            assert action.help is argparse.SUPPRESS and set(action.new.option_strings or ["positional"]) - RETIRED
    for action in visible(parser):  # every switch can be switched off
        flag = action.option_strings[0]
        if action.nargs == 0 and action.const is True or isinstance(action, argparse.BooleanOptionalAction):
            assert f"--no-{flag[2:]}" in parser._option_string_actions, (name, flag)


@pytest.mark.parametrize("old,new,argv", [
    ("--format", "--from", ["data", "stats", "x.jsonl", "--format", "prm800k"]),
    ("-f", "--from", ["data", "validate", "x.jsonl", "-f", "prm800k"]),
    ("--out", "OUT", ["grade", "pairs.jsonl", "--out", "o.jsonl"]),
    ("--out", "--out-dir", ["train", "prm", "--data", "d.jsonl", "--out", "runs/m"]),
    ("--k", "--count", ["select", "in.jsonl", "out.jsonl", "--k", "3"]),
    ("--k", "--rollouts", ["label", "auto", "in.jsonl", "out.jsonl", "--k", "3"]),
    ("--n", "--ns", ["eval", "bon", "in.jsonl", "--n", "1,2"]),
    ("--samples", "--n", ["lab", "generate", "o.jsonl", "--samples", "3"]),
])
def test_an_old_spelling_still_works_and_names_the_new(old, new, argv):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args = parse_args(argv)
    new_argv = [new if a == old else a for a in argv]
    if new == "OUT":
        new_argv.remove("OUT")
    assert vars(parse_args(new_argv)) == vars(args)
    assert any(f"{old} is renamed {new}" in str(w.message) and w.category is FutureWarning for w in caught)


def test_an_out_after_options_is_the_out():
    assert parse_args(["grade", "in.jsonl", "--mode", "lenient", "o.jsonl"]).output == "o.jsonl"
    with pytest.raises(SystemExit):
        parse_args(["grade", "in.jsonl", "o.jsonl", "extra.jsonl"])
