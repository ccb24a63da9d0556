"""What every account command shares: the `Outcome` it returns, the app's config
and password hasher, appending to a user's stream, sealing personal data, and
work for the worker queued after commit.

Commands run in one transaction, append to the user's stream (the inline
projection updates `users`) and return an `Outcome`: expected failures are
values carrying an i18n key, exceptions are bugs or infrastructure. Mail is
never sent in a command: it is recorded in the outbox in the command's
transaction (mails.py) and the worker delivers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argon2 import PasswordHasher
from flask import current_app
from sqlalchemy import Connection

from webapp.accounts import crypto, passwords
from webapp.accounts.users import User, get_user, stream_of
from webapp.config import Config
from webapp.eventstore import Metadata, NewEvent, append
from webapp.tenants import DEFAULT_TENANT

LANGUAGES = ("en", "de")
GENERIC = "profile.errors.generic"
INVALID_CREDENTIALS = "auth.errors.invalidCredentials"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    field: str | None = None  # the form field the error belongs to
    user_id: str | None = None
    session_token: str | None = None

    @classmethod
    def error(cls, key: str, field: str | None = None, **params: Any) -> Outcome:
        return cls(False, key, params, field)


def config() -> Config:
    cfg: Config = current_app.config["APP_CONFIG"]
    return cfg


def hasher() -> PasswordHasher:
    cfg = config()
    return passwords.hasher(cfg.argon2_time_cost, cfg.argon2_memory_cost, cfg.argon2_parallelism)


def check_password(user: User, password: str) -> bool:
    return passwords.verify_password(hasher(), user.password_hash, password)


def fresh(conn: Connection, user: User) -> User:
    """The user's row as this transaction sees it."""
    row = get_user(conn, user.id, user.tenant_id)
    if row is None:
        raise LookupError("user is gone")
    return row


def append_to(conn: Connection, user: User, *new: NewEvent, actor: str | None = None) -> None:
    append(
        conn,
        stream_of(user.tenant_id, user.id),
        list(new),
        user.version,
        Metadata(actor=actor or f"user:{user.id}"),
    )


def seal(conn: Connection, user: User | str, value: str) -> str:
    user_id = user if isinstance(user, str) else user.id
    return crypto.seal_for(conn, DEFAULT_TENANT, user_id, value)
