"""The ``prmkit`` command: noun-verb subcommands that parse arguments and call library functions.

Each command group lives in its own module exposing ``register(subparsers)``; the group's
subcommands set ``func`` (called with the parsed namespace, returning an exit status).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import signal
import sys
import threading

from prmkit import __version__

# Command groups in the order --help lists them: (module under prmkit.cli, command name).
GROUPS = (
    ("data", "data"),
    ("grade", "grade"),
    ("evaluate", "eval"),
    ("report", "report"),
    ("label", "label"),
    ("select", "select"),
    ("generate", "generate"),
    ("lab", "lab"),
    ("train", "train"),
    ("score", "score"),
    ("search", "search"),
    ("rl", "rl"),
    ("serve", "serve"),
)

EPILOG = """\
examples:
  prmkit data convert --from prm800k --to prmkit phase2_train.jsonl data.jsonl.gz
  prmkit data stats data.jsonl.gz
  prmkit generate --backend hf --model ./my-model problems.jsonl candidates.jsonl --n 16
  prmkit grade pairs.jsonl --audit math-verify
  prmkit eval bon scored.jsonl --score prm_min,orm --ns 1,2,4,8

Every command has its own --help with examples.
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keeps the examples in epilogs as written and shows each flag's default, once.

    A help text that already says what the default is keeps its own words: one with ``(default``, and
    one whose default is unset (None or '') and that mentions ``default`` at all, since its words say
    what unset means (``default: every score column``) better than ``(default: None)`` would.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "(default" in text or (action.default in (None, "") and re.search(r"\bdefault\b", text)):
            return action.help
        return super()._get_help_string(action)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command tree; with ``only`` (a command of :data:`GROUPS`), that command's alone, which is all
    a command line starting with it needs (every group imports its own modules: the labelling app's pull
    in a web framework that ``prmkit eval`` has no use for)."""
    parser = argparse.ArgumentParser(
        prog="prmkit", formatter_class=HelpFormatter, epilog=EPILOG,
        description="prmkit: process supervision. Generation, step-labelled data, answer grading, "
                    "process and outcome reward models, best-of-N evaluation, serving.")
    parser.add_argument("--version", action="version", version=f"prmkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name, command in GROUPS:
        if only is not None and command != only:
            continue
        module = importlib.import_module(f"prmkit.cli.{module_name}")
        module.register(subparsers)
    _list_commands(subparsers)
    from prmkit.cli.flags import complete_switches

    complete_switches(parser)
    return parser


def subcommands(parser: argparse.ArgumentParser) -> list[str]:
    """The names of a parser's subcommands, in the order they were added (none for a leaf command)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def walk_commands(parser: argparse.ArgumentParser, path: str = "prmkit"):
    """``(command line, parser)`` of ``parser`` and of every subcommand under it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk_commands(sub, f"{path} {name}")


def _list_commands(subparsers) -> None:
    """End each group's one-line help in ``prmkit --help`` with all of its commands, so none is left out
    by a help text written before the command was added."""
    for pseudo in subparsers._choices_actions:
        names = subcommands(subparsers.choices[pseudo.dest])
        if names:
            pseudo.help = f"{pseudo.help} [{'|'.join(names)}]"


USER_ERROR = 2
"""The exit status of a command refused or stopped by its input or settings (argparse's own, for bad flags)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """``argv`` parsed by the whole command tree, an ``OUT`` written after options included
    (:func:`prmkit.cli.flags.late_output`)."""
    from prmkit.cli.flags import late_output, switch_words

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and argv[0] in {command for _, command in GROUPS} else None)
    args, extra = parser.parse_known_args(switch_words(parser, argv))
    if late_output(args, extra):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if str(getattr(args, "progress", "")).lower() in ("false", "0", "no", "off"):  # bools or their words
        quiet_progress_bars()
    with sigterm_as_exit():
        try:
            return int(args.func(args) or 0)
        except (ValueError, OSError) as e:  # expected user-facing failures: bad input, missing files
            print(f"prmkit: error: {error_message(e)}", file=sys.stderr)
            return USER_ERROR
        finally:
            close_process_group()


def close_process_group() -> None:
    """Ends the torch.distributed group a command joined (under torchrun). Left to interpreter teardown,
    gloo's worker threads still hold tensors and the process can abort with "terminate called without an
    active exception" (pytorch/pytorch#190489), which fails a run that finished its work."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def quiet_progress_bars() -> None:
    """``--no-progress`` silences the libraries' bars too (transformers' "Loading weights", the hub's), not
    only prmkit's: they read this variable when first imported, and transformers is told if already in."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def error_message(e: Exception) -> str:
    """What ``prmkit: error:`` says about ``e``: its message, or for a missing path the path first.

    >>> error_message(FileNotFoundError(2, "No such file or directory", "in.jsonl"))
    'no such file: in.jsonl'
    """
    if isinstance(e, FileNotFoundError) and e.filename:
        return f"no such file: {e.filename}"
    if isinstance(e, IsADirectoryError) and e.filename:
        return f"{e.filename} is a folder, not a file"
    return str(e)


@contextlib.contextmanager
def sigterm_as_exit():
    """While a command runs, SIGTERM (``kill``, a job scheduler, a container stop) raises ``SystemExit(143)``
    instead of ending the process on the spot, so that every ``finally`` runs: empty partial files, lock
    files and temporary outputs are removed, finished work is kept for a rerun. A second SIGTERM ends the
    process at once; a forked child (a data-loader worker) keeps the default. Off the main thread (where
    Python cannot set handlers) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pid = os.getpid()

    def on_sigterm(signum, frame):
        signal.signal(signum, signal.SIG_DFL)
        if os.getpid() != pid:
            os.kill(os.getpid(), signum)
            return
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
