"""The labelling database: one set of SQLAlchemy 2 models for SQLite and PostgreSQL.

These classes describe the schema at the latest migration (:data:`prmkit.label.migrations.LATEST`);
the migrations build it, and ``tests/test_label_migrations.py`` checks the two agree.

- ``users``: admins and labellers; ``tokens``: login sessions and API tokens, stored as SHA-256 hashes.
- ``projects``: a flow (phase 1 or 2) and its settings: overlap, how often QC items come, the screening bar.
- ``items``: one solution to label. ``kind`` is ``real``, ``qc`` (quality control, with gold labels) or
  ``screening`` (generation -1, with gold). ``record`` is the prmkit record *without* labels, so no
  serving path can leak gold; ``gold`` holds the gold ratings apart, one list per step.
- ``assignments``: one labeller on one item; ``labels``: one rating of one completion of one step.
  ``(assignment, step, completion)`` is unique, so a label is never stored twice.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

ROLES = ("admin", "labeller")
KINDS = ("real", "qc", "screening")
HUMAN = -1
"""The completion index of the step a labeller wrote themselves (phase 1)."""


def now() -> datetime:
    """The current time in UTC (stored without a zone: both backends then compare alike)."""
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    password_hash: Mapped[str | None] = mapped_column(String(300), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")


class Token(Base):
    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(20))  # "session" (cookie) or "api" (bearer)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    user: Mapped[User] = relationship()


class Project(Base):
    __tablename__ = "projects"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    phase: Mapped[int] = mapped_column(Integer, default=2)
    overlap: Mapped[int] = mapped_column(Integer, default=1)
    qc_every: Mapped[int] = mapped_column(Integer, default=10)
    screening_min: Mapped[float] = mapped_column(Float, default=0.8)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)

    def settings(self) -> dict:
        return {"name": self.name, "phase": self.phase, "overlap": self.overlap,
                "qc_every": self.qc_every, "screening_min": self.screening_min}


class Item(Base):
    __tablename__ = "items"
    __table_args__ = (Index("ix_items_queue", "project_id", "kind", "generation", "position"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    generation: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    position: Mapped[int] = mapped_column(Integer, default=0)
    record: Mapped[str] = mapped_column(Text)
    gold: Mapped[str | None] = mapped_column(Text, nullable=True)
    n_steps: Mapped[int] = mapped_column(Integer)
    n_assigned: Mapped[int] = mapped_column(Integer, default=0)
    strategy: Mapped[str | None] = mapped_column(String(100), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    project: Mapped[Project] = relationship()

    def record_dict(self) -> dict:
        return json.loads(self.record)

    def gold_ratings(self) -> list[list[int | None]] | None:
        return json.loads(self.gold) if self.gold else None


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("item_id", "user_id", name="uq_assignment_item_user"),
                      Index("ix_assignments_user", "user_id", "status"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20), default="open")  # open | done
    finish_reason: Mapped[str | None] = mapped_column(String(40), nullable=True)
    started_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    time_ms: Mapped[int] = mapped_column(Integer, default=0)
    item: Mapped[Item] = relationship()
    user: Mapped[User] = relationship()


class Label(Base):
    __tablename__ = "labels"
    __table_args__ = (UniqueConstraint("assignment_id", "step", "completion", name="uq_label_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    step: Mapped[int] = mapped_column(Integer)
    completion: Mapped[int] = mapped_column(Integer)  # index into the step's completions; -1 = written by the labeller
    rating: Mapped[int | None] = mapped_column(Integer, nullable=True)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    chosen: Mapped[bool] = mapped_column(Boolean, default=False)
    text: Mapped[str | None] = mapped_column(Text, nullable=True)
    time_ms: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
