"""The CLI teaches itself: every command has examples, every flag has help, and docs/cli.md is current."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from prmkit.cli import build_parser, walk_commands
from prmkit.cli.helpdoc import render_help_reference

REPO = Path(__file__).resolve().parents[1]


COMMANDS = list(walk_commands(build_parser()))


@pytest.mark.parametrize("name, parser", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_flag_has_help(name, parser):
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        assert action.help and action.help.strip(), f"{name}: {action.option_strings or action.dest} has no help"


@pytest.mark.parametrize("name, parser", [c for c in COMMANDS if not any(
    isinstance(a, argparse._SubParsersAction) for a in c[1]._actions)], ids=lambda c: getattr(c, "prog", c))
def test_every_command_has_examples(name, parser):
    assert parser.epilog and "example" in parser.epilog.lower(), f"{name} has no examples in its epilog"


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="argparse's layout differs between Python versions; "
                    "docs/cli.md is generated on 3.11, the version CI runs")
def test_help_reference_is_current():
    current = (REPO / "docs" / "cli.md").read_text()
    assert current == render_help_reference(), "docs/cli.md is stale: run `python -m prmkit.cli.helpdoc`"


def test_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "prmkit", "--help"], capture_output=True, text=True, check=True)
    assert "data" in out.stdout and "examples:" in out.stdout


def test_every_group_lists_all_of_its_commands_in_the_top_level_help():
    from prmkit.cli import subcommands

    top = build_parser()
    text = top.format_help()
    groups = [(n, p) for n, p in COMMANDS if n.count(" ") == 1 and subcommands(p)]
    assert {n for n, _ in groups} >= {"prmkit lab", "prmkit train", "prmkit data", "prmkit label", "prmkit eval"}
    for name, parser in groups:
        assert f"[{'|'.join(subcommands(parser))}]" in " ".join(text.split()), name
    assert "run" in subcommands(dict(COMMANDS)["prmkit lab"]) and "study" in subcommands(dict(COMMANDS)["prmkit lab"])


@pytest.mark.parametrize("name, parser", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_one_spelling_for_each_switch(name, parser):
    """Progress is --progress / --no-progress everywhere, worker processes --workers: never --quiet or --jobs."""
    flags = {o for a in parser._actions for o in a.option_strings}
    assert not flags & {"--quiet", "--jobs", "-q", "-j"}, name
    if "--progress" in flags:
        assert "--no-progress" in flags, name
