"""Opening the labelling database: SQLite in WAL mode or PostgreSQL, behind one :class:`Database`.

``--db`` takes a SQLAlchemy URL, ``postgresql://...`` (driven by psycopg 3) or ``sqlite:///path``;
a bare path means a SQLite file. SQLite runs in WAL mode with ``synchronous=NORMAL`` (a committed
transaction survives a killed process; only a power cut can lose the last ones), foreign keys on, and
a busy timeout. Writes on SQLite start with ``BEGIN IMMEDIATE``, so a transaction that reads and then
writes never fails half-way on a lock upgrade; reads start a plain deferred transaction.

>>> normalise_url("labels.db")
'sqlite:///labels.db'
>>> normalise_url("postgresql://u@localhost:5432/prm")
'postgresql+psycopg://u@localhost:5432/prm'
>>> from sqlalchemy import text
>>> db = open_database("sqlite://")
>>> with db.write() as s:
...     _ = s.execute(text("SELECT 1"))
>>> db.backend
'sqlite'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from prmkit.label.migrations import migrate

DEFAULT_DB = "sqlite:///prmkit-label.db"
"""Where ``prmkit label`` keeps its data when ``--db`` is not given: a SQLite file in the current folder."""


def normalise_url(url: str) -> str:
    """A SQLAlchemy URL from what a user types (a path, ``sqlite:///...``, ``postgresql://...``)."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if "://" not in url:
        return f"sqlite:///{url}"
    return url


def _sqlite_engine(url: str) -> Engine:
    memory = url in ("sqlite://", "sqlite:///:memory:")
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                           **({"poolclass": StaticPool} if memory else {"pool_size": 8, "max_overflow": 32}))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        if not memory:
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("immediate") else "BEGIN")

    return engine


class Database:
    """An engine with two kinds of unit of work: :meth:`read` and :meth:`write` (commits on success)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.backend = engine.dialect.name
        self._writer = engine.execution_options(immediate=True) if self.backend == "sqlite" else engine

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            yield session
            session.rollback()

    @contextlib.contextmanager
    def write(self) -> Iterator[Session]:
        with Session(self._writer, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def integrity_check(self) -> str:
        """The backend's own integrity check, ``ok`` or what is wrong.

        SQLite: ``PRAGMA integrity_check`` (page structure, every index against its table, NOT NULL and
        UNIQUE). PostgreSQL, the same checks through ``amcheck``: every B-tree index of the schema
        verified (``bt_index_check`` with ``heapallindexed``: the index's order, and every table row
        present in it), plus any constraint not validated.
        """
        with self.engine.connect() as conn:
            if self.backend == "sqlite":
                return "; ".join(r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check"))
            return _postgres_integrity(conn)

    def close(self) -> None:
        self.engine.dispose()


_PG_INDEXES = """
SELECT c.oid::regclass::text FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.amname = 'btree' AND n.nspname = current_schema() AND i.indisvalid AND i.indisready
ORDER BY 1"""


def _postgres_integrity(conn) -> str:
    from sqlalchemy.exc import DBAPIError

    try:
        conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS amcheck")
        conn.commit()
    except DBAPIError as e:
        conn.rollback()
        return f"cannot check: the amcheck extension is unavailable ({e.orig})"
    problems = []
    for (index,) in conn.exec_driver_sql(_PG_INDEXES).fetchall():
        try:
            conn.exec_driver_sql("SELECT bt_index_check(%(i)s::regclass, true)", {"i": index})
        except DBAPIError as e:
            conn.rollback()
            problems.append(f"index {index}: {str(e.orig).strip()}")
    unvalidated = conn.exec_driver_sql(
        "SELECT conrelid::regclass::text || '.' || conname FROM pg_constraint c "
        "JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = current_schema() AND NOT convalidated")
    problems += [f"constraint {name} not validated" for (name,) in unvalidated]
    return "; ".join(problems) or "ok"


def open_database(url: str, *, upgrade: bool = True) -> Database:
    """Connect to ``url`` and bring its schema to the latest version (unless ``upgrade=False``)."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = _sqlite_engine(url)
    else:
        engine = create_engine(url, pool_size=20, max_overflow=40, pool_pre_ping=True)
    if upgrade:
        migrate(engine)
    return Database(engine)
