"""Accounts, passwords and tokens.

Passwords are hashed with scrypt (``hashlib.scrypt``, n=2**14, r=8, p=1, 16-byte salt). Tokens, the
session cookie of a browser and the bearer token of a program alike, are 32 random bytes shown once
to their owner; the database keeps only their SHA-256, so a copy of it opens no account.

>>> h = hash_password("correct horse")
>>> verify_password("correct horse", h), verify_password("wrong", h)
(True, False)
>>> len(token_hash("abc"))
64
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from prmkit.label.models import ROLES, Token, User, now

SESSION_DAYS = 7
_SCRYPT = {"n": 2 ** 14, "r": 8, "p": 1}


class AuthError(ValueError):
    """A login that fails, or an account operation that cannot be done."""


def hash_password(password: str) -> str:
    """``scrypt$n$r$p$salt$hash`` (hex) for ``password``."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str | None) -> bool:
    """Whether ``password`` matches ``stored`` (constant-time comparison)."""
    if not stored or not stored.startswith("scrypt$"):
        return False
    _, n, r, p, salt, digest = stored.split("$")
    got = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=32)
    return hmac.compare_digest(got.hex(), digest)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_user(s: Session, name: str, role: str = "labeller", password: str | None = None) -> User:
    """Add an account; ``role`` is ``admin`` or ``labeller``. Without a password it logs in by token only."""
    if role not in ROLES:
        raise AuthError(f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
    if not name or len(name) > 200 or not name.isprintable():
        raise AuthError("a user name is 1 to 200 printable characters")
    if s.scalar(select(User).where(User.name == name)) is not None:
        raise AuthError(f"user {name!r} exists already")
    user = User(name=name, role=role, password_hash=hash_password(password) if password else None, active=True)
    s.add(user)
    s.flush()
    return user


def set_password(s: Session, name: str, password: str) -> None:
    user = get_user(s, name)
    user.password_hash = hash_password(password)


def get_user(s: Session, name: str) -> User:
    user = s.scalar(select(User).where(User.name == name))
    if user is None:
        raise AuthError(f"no user {name!r}")
    return user


def issue_token(s: Session, user: User, kind: str = "api", name: str | None = None,
                days: float | None = None) -> str:
    """A new token for ``user``; only its hash is stored. Sessions expire after :data:`SESSION_DAYS`."""
    if days is None and kind == "session":
        days = SESSION_DAYS
    token = secrets.token_urlsafe(32)
    expires = now() + timedelta(days=days) if days else None
    s.add(Token(user_id=user.id, token_hash=token_hash(token), kind=kind, name=name, expires_at=expires))
    s.flush()
    return token


def login(s: Session, name: str, password: str) -> tuple[User, str]:
    """Check a name and password; return the user and a new session token."""
    user = s.scalar(select(User).where(User.name == name))
    # Hash even for an unknown user, so the time taken does not tell which names exist.
    ok = verify_password(password, user.password_hash if user else hash_password("x"))
    if user is None or not ok or not user.active:
        raise AuthError("wrong name or password")
    return user, issue_token(s, user, "session")


def user_for_token(s: Session, token: str, at: datetime | None = None) -> User | None:
    """The active user a token belongs to, or None (unknown, expired, disabled)."""
    row = s.scalar(select(Token).where(Token.token_hash == token_hash(token)))
    if row is None or (row.expires_at is not None and row.expires_at < (at or now())):
        return None
    user = row.user
    return user if user.active else None


def revoke(s: Session, token: str) -> None:
    s.execute(delete(Token).where(Token.token_hash == token_hash(token)))
