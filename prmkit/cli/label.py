"""``prmkit label``: the step-labelling app: serve it, push candidates, manage accounts, export labels.

The commands parse arguments and call :mod:`prmkit.label`; the web stack (FastAPI, uvicorn,
SQLAlchemy) is imported only when a command runs, so ``prmkit --help`` works without the ``serve`` extra.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys

from prmkit.cli import HelpFormatter
from prmkit.cli.autolabel import add_auto
from prmkit.cli.flags import renamed
from prmkit.label.queue import STRATEGIES

DEFAULT_DB = "sqlite:///prmkit-label.db"  # kept equal to prmkit.label.db.DEFAULT_DB (a test checks)

GROUP_EPILOG = """\
examples:
  prmkit label user add alice --role admin --password-stdin < pw.txt
  prmkit label user add bob                 (asks for a password)
  prmkit label user token sim-01 --create   (a labeller for programs: prints an API token)
  prmkit label push --project gen-a --phase 2 --overlap 2 --count 500 candidates.jsonl
  prmkit label push --project gen-a --kind qc qc_gold.jsonl
  prmkit label push --project gen-a --kind screening screening_gold.jsonl
  prmkit label serve --port 8000            (then open http://127.0.0.1:8000/)
  prmkit label export --project gen-a labels.jsonl
  prmkit label serve --db postgresql://prm@db.example/labels --host 0.0.0.0

Every subcommand takes --db (default: a SQLite file in the current folder). docs/labelling.md
walks through a whole project.
"""


def _db_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=os.environ.get("PRMKIT_LABEL_DB", DEFAULT_DB), metavar="URL",
                   help="database: sqlite:///FILE (or a bare path) or postgresql://USER@HOST:PORT/NAME; "
                        "$PRMKIT_LABEL_DB overrides the default")


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from prmkit.label.app import AppConfig, create_app, find_katex
    from prmkit.label.db import open_database

    db = open_database(args.db)
    if find_katex() is None:
        print("prmkit label: warning: KaTeX not found (run `make venv` or `bash scripts/bootstrap.sh --katex`, or set "
              "PRMKIT_KATEX_DIR); mathematics will show as source text", file=sys.stderr)
    app = create_app(db, AppConfig(secure_cookie=args.secure_cookie))
    print(f"prmkit label: serving {db.backend} database on http://{args.host}:{args.port}/", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=args.access_log)
    return 0


def _read_candidates(path: str, fmt: str) -> list:
    from prmkit.convert import read_solutions_only

    return read_solutions_only(path, fmt, command="push")


def cmd_push(args: argparse.Namespace) -> int:
    from prmkit.label import projects
    from prmkit.label.db import open_database

    candidates = _read_candidates(args.file, args.format)
    settings = {"phase": args.phase, "overlap": args.overlap, "qc_every": args.qc_every,
                "screening_min": args.screening_min}
    db = open_database(args.db)
    with db.write() as s:
        try:
            projects.get_project(s, args.project)
            projects.update_project(s, args.project, **settings)
        except projects.NotFound:
            projects.create_project(s, args.project, **settings)
            print(f"created project {args.project!r}")
        gen, n = projects.push(s, args.project, candidates, kind=args.kind, strategy=args.strategy,
                               count=args.count, seed=args.seed, generation=args.generation)
    print(f"{args.project}: {n} {args.kind} items of {len(candidates)} candidates pushed as generation {gen} "
          f"(strategy {args.strategy})")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from prmkit.label.db import open_database
    from prmkit.label.export import write_export

    db = open_database(args.db)
    with db.read() as s:
        n = write_export(s, args.project, args.output, args.format, args.kinds.split(","), args.include_open)
    print(f"{args.project}: {n} labelled solutions written to {args.output} ({args.format})")
    return 0


def _password(args: argparse.Namespace) -> str | None:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    if args.password_env:
        if args.password_env not in os.environ:
            raise ValueError(f"${args.password_env} is not set")
        return os.environ[args.password_env]
    if args.no_password:
        return None
    first = getpass.getpass(f"password for {args.name}: ")
    if first != getpass.getpass("again: "):
        raise ValueError("the two passwords differ")
    return first


def cmd_user_add(args: argparse.Namespace) -> int:
    from prmkit.label import auth
    from prmkit.label.db import open_database

    password = _password(args)
    with open_database(args.db).write() as s:
        user = auth.create_user(s, args.name, args.role, password)
        token = auth.issue_token(s, user, "api", "cli") if args.token else None
    print(f"added {args.role} {args.name!r}" + ("" if password else " (token login only)"))
    if token:
        print(token)
    return 0


def cmd_user_token(args: argparse.Namespace) -> int:
    from prmkit.label import auth
    from prmkit.label.db import open_database

    with open_database(args.db).write() as s:
        try:
            user = auth.get_user(s, args.name)
        except auth.AuthError:
            if not args.create:
                raise
            user = auth.create_user(s, args.name, args.role)
        token = auth.issue_token(s, user, "api", args.label, args.days)
    print(token)
    return 0


def cmd_user_list(args: argparse.Namespace) -> int:
    from sqlalchemy import select

    from prmkit.label.db import open_database
    from prmkit.label.models import User

    with open_database(args.db).read() as s:
        users = [{"name": u.name, "role": u.role, "active": u.active, "password": u.password_hash is not None}
                 for u in s.scalars(select(User).order_by(User.name))]
    print(json.dumps(users, indent=2))
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from prmkit.label.db import normalise_url, open_database
    from prmkit.label.migrations import LATEST, current_version, migrate

    db = open_database(args.db, upgrade=False)
    applied = migrate(db.engine, args.to or LATEST)
    print(f"{normalise_url(args.db).split('://')[0]}: schema version {current_version(db.engine)}"
          + (f" (applied {applied})" if applied else " (up to date)"))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from prmkit.label.consistency import check_database
    from prmkit.label.db import open_database

    report = check_database(open_database(args.db))
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


def _add_serve(sub) -> None:
    p = sub.add_parser("serve", help="run the labelling web app and its API", formatter_class=HelpFormatter,
                       epilog="examples:\n  prmkit label serve\n  prmkit label serve --db labels.db --port 9000\n"
                              "  prmkit label serve --db postgresql://prm@localhost:5432/labels --host 0.0.0.0 "
                              "--secure-cookie\n",
                       description="Serve the labelling pages (/login, /app, /admin) and the JSON API (/api/...). "
                                   "The database schema is migrated to the latest version first.")
    _db_flag(p)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8000, help="TCP port")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn's log level")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.add_argument("--secure-cookie", action="store_true", help="mark the session cookie Secure (behind HTTPS)")
    p.set_defaults(func=cmd_serve)


def _add_push(sub) -> None:
    p = sub.add_parser("push", help="load candidate solutions into a project as a new generation",
                       formatter_class=HelpFormatter,
                       epilog="examples:\n  prmkit label push --project p2 --count 1000 --seed 7 candidates.jsonl\n"
                              "  prmkit label push --project p2 --kind qc --strategy in_order qc_gold.jsonl\n"
                              "  prmkit label push --project p1 --phase 1 --from prm800k phase1_test.jsonl\n",
                       description="Choose candidates with a selection strategy and add them as items. Real items "
                                   "open a new generation; QC items (gold ratings in the records) join the newest "
                                   "generation; screening items form generation -1. Creates the project if needed; "
                                   "settings given for an existing project update it.")
    _db_flag(p)
    p.add_argument("file", metavar="IN", help="candidate solutions (see --from)")
    p.add_argument("--project", required=True, help="project name")
    p.add_argument("--from", dest="format", default="prmkit", metavar="FORMAT",
                   help="format of IN (any that `prmkit data formats` reads)")
    renamed(p, "--format", "--from")
    p.add_argument("--kind", default="real", choices=["real", "qc", "screening"], help="what the items are")
    p.add_argument("--strategy", default="random", help=f"selection strategy, by registered name: {', '.join(sorted(STRATEGIES))}")
    p.add_argument("--count", type=int, default=None, help="how many candidates to choose (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the strategy's random generator")
    p.add_argument("--generation", type=int, default=None, help="generation of QC items (default: the newest)")
    p.add_argument("--phase", type=int, choices=[1, 2], default=None,
                   help="flow of a new project: 1 alternatives, 2 stop at the first bad step (default 2)")
    p.add_argument("--overlap", type=int, default=None, help="labellers per real item (default 1)")
    p.add_argument("--qc-every", type=int, default=None, help="every N-th assignment is a QC item (0: never; default 10)")
    p.add_argument("--screening-min", type=float, default=None,
                   help="agreement with gold needed to pass screening (default 0.8)")
    p.set_defaults(func=cmd_push)


def _add_export(sub) -> None:
    p = sub.add_parser("export", help="write the labelled solutions of a project", formatter_class=HelpFormatter,
                       epilog="examples:\n  prmkit label export --project p2 labels.jsonl.gz\n"
                              "  prmkit label export --project p2 --to prm800k --kinds real phase2.jsonl\n",
                       description="One record per labeller and solution, with labeller, generation, QC and "
                                   "screening flags, time and finish reason.")
    _db_flag(p)
    p.add_argument("output", metavar="OUT", help="JSONL file to write (gzip if it ends in .gz)")
    p.add_argument("--project", required=True, help="project name")
    p.add_argument("--to", dest="format", default="prmkit", choices=["prmkit", "prm800k"], help="format of OUT")
    renamed(p, "--format", "--to")
    p.add_argument("--kinds", default="real,qc,screening", help="comma-separated item kinds to include")
    p.add_argument("--include-open", action="store_true", help="also assignments still being labelled")
    p.set_defaults(func=cmd_export)


def _add_user(sub) -> None:
    g = sub.add_parser("user", help="accounts and API tokens", formatter_class=HelpFormatter,
                       epilog="examples:\n  prmkit label user add alice --role admin\n"
                              "  prmkit label user add sim --no-password --token\n  prmkit label user list\n")
    usub = g.add_subparsers(dest="user_command", metavar="SUBCOMMAND", required=True)
    p = usub.add_parser("add", help="add an admin or labeller", formatter_class=HelpFormatter,
                        epilog="examples:\n  prmkit label user add alice --role admin --password-stdin < pw.txt\n"
                               "  LABEL_PW=s3cret prmkit label user add bob --password-env LABEL_PW\n")
    _db_flag(p)
    p.add_argument("name", help="login name")
    p.add_argument("--role", default="labeller", choices=["admin", "labeller"], help="what the account may do")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    how.add_argument("--password-env", metavar="VAR", help="take the password from environment variable VAR")
    how.add_argument("--no-password", action="store_true", help="no password: the account logs in by token only")
    p.add_argument("--token", action="store_true", help="also print a new API token for the account")
    p.set_defaults(func=cmd_user_add)
    p = usub.add_parser("token", help="print a new API token for an account", formatter_class=HelpFormatter,
                        epilog="examples:\n  prmkit label user token bob\n  prmkit label user token sim-01 --create\n")
    _db_flag(p)
    p.add_argument("name", help="login name")
    p.add_argument("--create", action="store_true", help="create the account (no password) if it does not exist")
    p.add_argument("--role", default="labeller", choices=["admin", "labeller"], help="role when --create adds it")
    p.add_argument("--label", default=None, help="a note stored with the token")
    p.add_argument("--days", type=float, default=None, help="expire after this many days (default: never)")
    p.set_defaults(func=cmd_user_token)
    p = usub.add_parser("list", help="list accounts", formatter_class=HelpFormatter,
                        epilog="examples:\n  prmkit label user list --db labels.db\n")
    _db_flag(p)
    p.set_defaults(func=cmd_user_list)


def register(subparsers) -> None:
    """Add the ``label`` group and its subcommands to ``prmkit``'s subparsers."""
    group = subparsers.add_parser("label", help="the step-labelling app: serve, push, export, accounts",
                                  formatter_class=HelpFormatter, epilog=GROUP_EPILOG,
                                  description="Label solutions step by step, PRM800K style: projects, generations, "
                                              "QC and screening, agreement, export.")
    sub = group.add_subparsers(dest="label_command", metavar="SUBCOMMAND", required=True)
    _add_serve(sub)
    _add_push(sub)
    _add_export(sub)
    _add_user(sub)
    add_auto(sub)
    for name, func, text in [("migrate", cmd_migrate, "bring the database schema to the latest version"),
                             ("check", cmd_check, "check the database is consistent (exit 1 if not)")]:
        p = sub.add_parser(name, help=text, formatter_class=HelpFormatter, description=text[0].upper() + text[1:] + ".",
                           epilog=f"examples:\n  prmkit label {name} --db labels.db\n")
        _db_flag(p)
        if name == "migrate":
            p.add_argument("--to", type=int, default=None, help="target version (default: the latest)")
        p.set_defaults(func=func)
