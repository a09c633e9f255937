"""Versioned schema migrations, one small function per version, recorded in ``schema_version``.

Each migration is frozen: it spells out the DDL of its own version and never imports the current
models, so upgrading an old database replays exactly what happened. :func:`migrate` runs the missing
ones in order, each in its own transaction, and records each. The models in
:mod:`prmkit.label.models` must equal the result of all of them (a test checks this).

>>> from sqlalchemy import create_engine
>>> engine = create_engine("sqlite://")
>>> migrate(engine, target=1), current_version(engine)
([1], 1)
>>> migrate(engine), current_version(engine) == LATEST
([2], True)
>>> migrate(engine)
[]
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    inspect,
    text,
)


def _v1(conn: Connection) -> None:
    """Initial schema: users, tokens, projects, items, assignments, labels."""
    md = MetaData()
    Table("users", md, Column("id", Integer, primary_key=True), Column("name", String(200), unique=True, nullable=False),
          Column("role", String(20), nullable=False), Column("password_hash", String(300)),
          Column("created_at", DateTime, nullable=False))
    Table("tokens", md, Column("id", Integer, primary_key=True),
          Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
          Column("token_hash", String(64), unique=True, nullable=False), Column("kind", String(20), nullable=False),
          Column("name", String(200)), Column("created_at", DateTime, nullable=False))
    Table("projects", md, Column("id", Integer, primary_key=True), Column("name", String(200), unique=True, nullable=False),
          Column("phase", Integer, nullable=False), Column("overlap", Integer, nullable=False),
          Column("qc_every", Integer, nullable=False), Column("screening_min", Float, nullable=False),
          Column("created_at", DateTime, nullable=False))
    Table("items", md, Column("id", Integer, primary_key=True),
          Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
          Column("generation", Integer, nullable=False), Column("kind", String(20), nullable=False),
          Column("position", Integer, nullable=False), Column("record", Text, nullable=False), Column("gold", Text),
          Column("n_steps", Integer, nullable=False), Column("n_assigned", Integer, nullable=False),
          Column("strategy", String(100)), Column("created_at", DateTime, nullable=False),
          Index("ix_items_queue", "project_id", "kind", "generation", "position"))
    Table("assignments", md, Column("id", Integer, primary_key=True),
          Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False, index=True),
          Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
          Column("status", String(20), nullable=False), Column("finish_reason", String(40)),
          Column("started_at", DateTime, nullable=False), Column("finished_at", DateTime),
          Column("time_ms", Integer, nullable=False),
          UniqueConstraint("item_id", "user_id", name="uq_assignment_item_user"),
          Index("ix_assignments_user", "user_id", "status"))
    Table("labels", md, Column("id", Integer, primary_key=True),
          Column("assignment_id", Integer, ForeignKey("assignments.id", ondelete="CASCADE"), nullable=False),
          Column("step", Integer, nullable=False), Column("completion", Integer, nullable=False),
          Column("rating", Integer), Column("flagged", Boolean, nullable=False), Column("chosen", Boolean, nullable=False),
          Column("text", Text), Column("time_ms", Integer, nullable=False), Column("created_at", DateTime, nullable=False),
          UniqueConstraint("assignment_id", "step", "completion", name="uq_label_key"))
    md.create_all(conn)


def _v2(conn: Connection) -> None:
    """Sessions expire (``tokens.expires_at``); accounts can be disabled (``users.active``)."""
    true = "TRUE" if conn.dialect.name == "postgresql" else "1"
    conn.execute(text("ALTER TABLE tokens ADD COLUMN expires_at TIMESTAMP"))
    conn.execute(text(f"ALTER TABLE users ADD COLUMN active BOOLEAN NOT NULL DEFAULT {true}"))


MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1, 2: _v2}
LATEST = max(MIGRATIONS)

_VERSION_TABLE = MetaData()
_version = Table("schema_version", _VERSION_TABLE, Column("version", Integer, primary_key=True),
                 Column("applied_at", DateTime, nullable=False))


def current_version(engine: Engine) -> int:
    """The highest applied migration, 0 for an empty database."""
    if not inspect(engine).has_table("schema_version"):
        return 0
    with engine.connect() as conn:
        return conn.execute(text("SELECT COALESCE(MAX(version), 0) FROM schema_version")).scalar_one()


def migrate(engine: Engine, target: int = LATEST) -> list[int]:
    """Apply the migrations after the current version up to ``target``; return the versions applied."""
    if target not in MIGRATIONS:
        raise ValueError(f"unknown schema version {target} (known: 1..{LATEST})")
    _VERSION_TABLE.create_all(engine)
    have = current_version(engine)
    if have > LATEST:
        raise ValueError(f"the database is at schema version {have}, newer than this prmkit ({LATEST}); upgrade prmkit")
    applied = []
    for version in range(have + 1, target + 1):
        with engine.begin() as conn:
            MIGRATIONS[version](conn)
            conn.execute(_version.insert().values(version=version,
                                                  applied_at=datetime.now(UTC).replace(tzinfo=None)))
        applied.append(version)
    return applied
