"""What every account command shares: the `Outcome` it returns, the app's config
and password hasher, appending to a user's stream, sealing personal data, and
work for the worker queued after commit.

Commands run in one transaction, append to the user's stream (the inline
projection updates `users`) and return an `Outcome`: expected failures are
values carrying an i18n key, exceptions are bugs or infrastructure. Mail is
never sent in a command: work for the worker is enqueued after commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from argon2 import PasswordHasher
from flask import current_app
from sqlalchemy import Connection

from webapp import db, jobs
from webapp.accounts import crypto, passwords, verification
from webapp.accounts.users import User, get_user, stream_of
from webapp.config import Config
from webapp.eventstore import Metadata, NewEvent, VersionConflict, append
from webapp.tenants import DEFAULT_TENANT

LANGUAGES = ("en", "de")
TASKS = "worker.account_tasks"
GENERIC = "profile.errors.generic"
INVALID_CREDENTIALS = "auth.errors.invalidCredentials"
CONCURRENT_CHANGE = "profile.errors.concurrentChange"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    field: str | None = None  # the form field the error belongs to
    user_id: str | None = None
    session_token: str | None = None
    status: int | None = None  # the HTTP status when it is not the usual one

    @classmethod
    def error(cls, key: str, field: str | None = None, **params: Any) -> Outcome:
        return cls(False, key, params, field)


def retry_on_conflict(attempt: Callable[[], Outcome]) -> Outcome:
    """Run a command's transaction; when it meets a concurrent change to the same
    account (another window, a double click), run it once more on the fresh
    state, and if that conflicts too answer 409 instead of failing."""
    for _ in range(2):
        try:
            return attempt()
        except VersionConflict as exc:
            log.info("account command met a concurrent change", extra={"stream": str(exc)})
    return Outcome(False, CONCURRENT_CHANGE, status=409)


def config() -> Config:
    cfg: Config = current_app.config["APP_CONFIG"]
    return cfg


def hasher() -> PasswordHasher:
    cfg = config()
    return passwords.hasher(cfg.argon2_time_cost, cfg.argon2_memory_cost, cfg.argon2_parallelism)


def check_new_password(
    email: str, new: str, current_hash: str | None = None, field: str = "new_password"
) -> Outcome | None:
    """The error for a new password that breaks the policy (length, common list,
    the address, zxcvbn strength) or, given the stored hash, equals the current
    password; None when it is fine. For sign-up, password change and reset."""
    problem = passwords.policy_error(new, email, config().password_min_length)
    if problem:
        return Outcome.error(problem[0], field, **problem[1])
    if current_hash and passwords.verify_password(hasher(), current_hash, new):
        return Outcome.error("password.errors.sameAsCurrent", field)
    return None


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


def enqueue_after_commit(conn: Connection, func: str, *args: Any) -> None:
    def enqueue() -> None:
        jobs.enqueue(f"{TASKS}.{func}", *args)

    db.after_commit(conn, enqueue)


def request_verification(conn: Connection, user_id: str) -> None:
    """Ask for the verification mail to the user's current address.

    When the email-verification workflow is registered it reacts to the events
    itself; otherwise a worker job is queued after commit.
    """
    if not verification.handled_by_workflow():
        enqueue_after_commit(conn, "send_verification", DEFAULT_TENANT, user_id)
