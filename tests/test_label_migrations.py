"""Migrations: up from empty and from the previous version, on SQLite and (when provided) PostgreSQL;
the migrated schema equals the models; SQLite runs in WAL mode."""

from __future__ import annotations

import os
from datetime import datetime

import pytest

pytest.importorskip("sqlalchemy", reason="the labelling app needs the `serve` extra")
from sqlalchemy import create_engine, inspect, text

from prmkit.label import auth
from prmkit.label.db import normalise_url, open_database
from prmkit.label.migrations import LATEST, current_version, migrate
from prmkit.label.models import Base
from prmkit.testing.labelling import fresh_pg_database

PG = os.environ.get("PRMKIT_TEST_PG")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/m.db"
        return
    if not PG:
        pytest.skip("PostgreSQL not provided: run `eval \"$(bash scripts/services.sh)\"` to set PRMKIT_TEST_PG")
    with fresh_pg_database(PG) as u:
        yield u


def schema(engine) -> dict:
    insp = inspect(engine)
    return {t: {c["name"]: c["nullable"] for c in insp.get_columns(t)} for t in insp.get_table_names()
            if t != "schema_version"}


def indexes(engine) -> dict:
    insp = inspect(engine)
    # Named indexes only: backends differ in whether unique constraints also show up as indexes.
    return {t: sorted(i["name"] for i in insp.get_indexes(t) if i["name"].startswith("ix_"))
            for t in insp.get_table_names() if t != "schema_version"}


def test_up_from_empty_equals_the_models(url):
    engine = create_engine(normalise_url(url))
    assert current_version(engine) == 0
    assert migrate(engine) == list(range(1, LATEST + 1))
    assert current_version(engine) == LATEST and migrate(engine) == []
    reference = create_engine("sqlite://")
    Base.metadata.create_all(reference)
    assert schema(engine) == schema(reference)
    assert indexes(engine) == indexes(reference)
    engine.dispose()


def test_up_from_the_previous_version_keeps_data(url):
    engine = create_engine(normalise_url(url))
    assert migrate(engine, target=LATEST - 1) == list(range(1, LATEST))
    now = datetime(2026, 1, 1)
    with engine.begin() as conn:  # rows written by the previous version of prmkit
        conn.execute(text("INSERT INTO users (name, role, password_hash, created_at) "
                          "VALUES ('old', 'labeller', :h, :t)"), {"h": auth.hash_password("pw"), "t": now})
        uid = conn.execute(text("SELECT id FROM users WHERE name = 'old'")).scalar_one()
        conn.execute(text("INSERT INTO tokens (user_id, token_hash, kind, created_at) "
                          "VALUES (:u, :h, 'api', :t)"), {"u": uid, "h": auth.token_hash("tok"), "t": now})
    engine.dispose()
    db = open_database(url)  # what `prmkit label serve` does: migrate on start
    assert current_version(db.engine) == LATEST
    with db.read() as s:
        user = auth.user_for_token(s, "tok")
        assert user.name == "old" and user.active is True
        assert auth.login(s, "old", "pw")[0].id == user.id
    db.close()


def test_a_newer_database_is_refused(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path}/n.db")
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO schema_version (version, applied_at) VALUES (:v, :t)"),
                     {"v": LATEST + 1, "t": datetime(2030, 1, 1)})
    with pytest.raises(ValueError, match="newer than this prmkit"):
        migrate(engine)
    with pytest.raises(ValueError, match="unknown schema version"):
        migrate(engine, target=LATEST + 5)


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    db = open_database(str(tmp_path / "w.db"))
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    assert db.integrity_check() == "ok"
    db.close()


def test_integrity_check_checks_every_index_on_both_backends(url):
    """The PostgreSQL check is real (amcheck over every B-tree index), not a constant ``ok``."""
    db = open_database(url)
    assert db.integrity_check() == "ok"
    if db.backend == "sqlite":
        db.close()
        return
    with db.engine.connect() as conn:
        checked = conn.exec_driver_sql(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()").scalar()
        assert checked >= 5
        conn.exec_driver_sql("ALTER TABLE users ADD CONSTRAINT users_name_nonempty CHECK (name <> '') NOT VALID")
        conn.commit()
    assert "users_name_nonempty not validated" in db.integrity_check()
    db.close()
