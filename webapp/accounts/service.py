"""Account commands. Each runs in one transaction, appends to the user's stream
(the inline projection updates `users`), and returns an `Outcome`: expected
failures are values carrying an i18n key, exceptions are bugs or infrastructure.
Mail is never sent here: work for the worker is enqueued after commit."""

from __future__ import annotations

import logging
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from argon2 import PasswordHasher
from flask import current_app
from sqlalchemy import Connection, and_, delete, select
from sqlalchemy.exc import IntegrityError

from webapp import clock, db, jobs
from webapp.accounts import crypto, emails, passwords, tokens
from webapp.accounts import events as ev
from webapp.accounts.tables import used_tokens, users
from webapp.config import Config
from webapp.eventstore import Metadata, NewEvent, StreamId, VersionConflict, append, read_stream
from webapp.tenants import DEFAULT_TENANT

log = logging.getLogger(__name__)

LANGUAGES = ("en", "de")
TASKS = "worker.account_tasks"


@dataclass(frozen=True)
class User:
    tenant_id: str
    id: str
    email: str
    email_verified: bool
    password_hash: str
    session_token: str
    language: str | None
    status: str
    deletion_due_at: datetime | None
    created_at: datetime
    version: int

    # Flask-Login: the session token is part of the id, so rotating it ends
    # every session (and remember-me cookie) that carries the old one.
    is_authenticated = True
    is_active = True
    is_anonymous = False

    def get_id(self) -> str:
        return f"{self.id}:{self.session_token}"

    @property
    def deletion_requested(self) -> bool:
        return self.status == ev.DELETION_REQUESTED_STATUS


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


GENERIC = "profile.errors.generic"
INVALID_CREDENTIALS = "auth.errors.invalidCredentials"


def config() -> Config:
    cfg: Config = current_app.config["APP_CONFIG"]
    return cfg


def hasher() -> PasswordHasher:
    cfg = config()
    return passwords.hasher(cfg.argon2_time_cost, cfg.argon2_memory_cost, cfg.argon2_parallelism)


def _stream(tenant_id: str, user_id: str) -> StreamId:
    return StreamId(tenant_id, ev.AGGREGATE, user_id)


def _row_to_user(r: Any) -> User:
    return User(
        tenant_id=r.tenant_id,
        id=r.id,
        email=r.email,
        email_verified=bool(r.email_verified),
        password_hash=r.password_hash,
        session_token=r.session_token,
        language=r.language,
        status=r.status,
        deletion_due_at=r.deletion_due_at,
        created_at=r.created_at,
        version=r.version,
    )


def get_user(conn: Connection, user_id: str, tenant_id: str = DEFAULT_TENANT) -> User | None:
    r = conn.execute(
        select(users).where(users.c.tenant_id == tenant_id, users.c.id == user_id)
    ).first()
    return _row_to_user(r) if r else None


def find_by_email(conn: Connection, email: str, tenant_id: str = DEFAULT_TENANT) -> User | None:
    r = conn.execute(
        select(users).where(users.c.tenant_id == tenant_id, users.c.email == email)
    ).first()
    return _row_to_user(r) if r else None


def load_session_user(session_id: str) -> User | None:
    """Flask-Login's loader: `<user id>:<session token>`, both must match."""
    user_id, _, token = session_id.partition(":")
    if not user_id or not token:
        return None
    with db.reading() as conn:
        user = get_user(conn, user_id)
    if user is None or not secrets.compare_digest(user.session_token, token):
        return None
    return user


def _append(conn: Connection, user: User, *new: NewEvent, actor: str | None = None) -> None:
    append(
        conn,
        _stream(user.tenant_id, user.id),
        list(new),
        user.version,
        Metadata(actor=actor or f"user:{user.id}"),
    )


def _seal(conn: Connection, user: User | str, value: str) -> str:
    user_id = user if isinstance(user, str) else user.id
    return crypto.seal_for(conn, DEFAULT_TENANT, user_id, value)


def _enqueue_after_commit(conn: Connection, func: str, *args: Any) -> None:
    def enqueue() -> None:
        jobs.enqueue(f"{TASKS}.{func}", *args)

    db.after_commit(conn, enqueue)


def _request_verification(conn: Connection, user_id: str) -> None:
    """Ask for the verification mail to the user's current address.

    When the email-verification workflow is registered it reacts to the events
    itself; otherwise a worker job is queued after commit.
    """
    from webapp.accounts import verification

    if not verification.handled_by_workflow():
        _enqueue_after_commit(conn, "send_verification", DEFAULT_TENANT, user_id)


def address_version(conn: Connection, user: User) -> int:
    """The version of the event that set the user's current address."""
    setters = (ev.REGISTERED, ev.EMAIL_CHANGED, ev.EMAIL_CHANGE_REVERTED)
    stream = read_stream(conn, _stream(user.tenant_id, user.id))
    return max((e.version for e in stream if e.type in setters), default=0)


def check_password(user: User, password: str) -> bool:
    return passwords.verify_password(hasher(), user.password_hash, password)


# -- registration and sign-in -------------------------------------------------


def register(email_raw: str, password: str, confirm: str, language: str | None) -> Outcome:
    email = emails.normalize(email_raw)
    if email is None:
        return Outcome.error("auth.errors.invalidEmail", "email")
    if password != confirm:
        return Outcome.error("auth.register.mismatch", "confirm")
    problem = passwords.policy_error(password, email, config().password_min_length)
    if problem:
        return Outcome.error(problem[0], "password", **problem[1])
    # Hash before looking the address up, so both paths cost the same time.
    password_hash = passwords.hash_password(hasher(), password)
    lang = language if language in LANGUAGES else None
    try:
        with db.transaction() as conn:
            existing = find_by_email(conn, email)
            if existing is not None:
                # No enumeration: the page says the same; the owner hears about it.
                _enqueue_after_commit(
                    conn, "send_registration_attempt", DEFAULT_TENANT, existing.id
                )
                return Outcome(True, "auth.register.success", {"email": email})
            user_id = str(uuid.uuid4())
            key = crypto.create_key(conn, DEFAULT_TENANT, user_id)
            append(
                conn,
                _stream(DEFAULT_TENANT, user_id),
                [
                    NewEvent(
                        ev.REGISTERED,
                        {
                            "email": crypto.seal(key, user_id, email),
                            "password_hash": crypto.seal(key, user_id, password_hash),
                            "session_token": crypto.seal(key, user_id, secrets.token_urlsafe(24)),
                            "language": lang,
                        },
                    )
                ],
                0,
                Metadata(actor="anonymous"),
            )
            _request_verification(conn, user_id)
    except IntegrityError:
        # Lost a race with a concurrent registration of the same address.
        return Outcome(True, "auth.register.success", {"email": email})
    return Outcome(True, "auth.register.success", {"email": email}, user_id=user_id)


_DUMMY_HASH: dict[tuple[int, int, int], str] = {}


def authenticate(email_raw: str, password: str) -> User | None:
    """The user when the address and password match, else None (same cost either way)."""
    ph = hasher()
    email = emails.normalize(email_raw)
    with db.reading() as conn:
        user = find_by_email(conn, email) if email else None
    if user is None:
        params = (ph.time_cost, ph.memory_cost, ph.parallelism)
        if params not in _DUMMY_HASH:
            _DUMMY_HASH[params] = ph.hash(secrets.token_urlsafe(16))
        passwords.verify_password(ph, _DUMMY_HASH[params], password)
        return None
    if not passwords.verify_password(ph, user.password_hash, password):
        return None
    if passwords.needs_rehash(ph, user.password_hash):
        try:
            with db.transaction() as conn:
                fresh = get_user(conn, user.id)
                if fresh is not None:
                    _append(
                        conn,
                        fresh,
                        NewEvent(
                            ev.PASSWORD_REHASHED,
                            {"password_hash": _seal(conn, fresh, ph.hash(password))},
                        ),
                    )
        except VersionConflict:
            log.info("rehash skipped: concurrent change", extra={"user": user.id})
        with db.reading() as conn:
            user = get_user(conn, user.id) or user
    return user


# -- profile commands ------------------------------------------------------------


def _fresh(conn: Connection, user: User) -> User:
    fresh = get_user(conn, user.id, user.tenant_id)
    if fresh is None:
        raise LookupError("user is gone")
    return fresh


def change_password(user: User, current: str, new: str) -> Outcome:
    if not check_password(user, current):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    problem = passwords.policy_error(new, user.email, config().password_min_length)
    if problem:
        return Outcome.error(problem[0], "new_password", **problem[1])
    new_hash = passwords.hash_password(hasher(), new)
    token = secrets.token_urlsafe(24)
    with db.transaction() as conn:
        fresh = _fresh(conn, user)
        _append(
            conn,
            fresh,
            NewEvent(
                ev.PASSWORD_CHANGED,
                {
                    "password_hash": _seal(conn, fresh, new_hash),
                    "session_token": _seal(conn, fresh, token),
                },
            ),
        )
        _enqueue_after_commit(conn, "send_password_changed", fresh.tenant_id, fresh.id)
    return Outcome(True, "profile.password.success", session_token=token)


def change_email(user: User, new_raw: str, password: str) -> Outcome:
    if not check_password(user, password):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    email = emails.normalize(new_raw)
    if email is None:
        return Outcome.error("auth.errors.invalidEmail", "new_email")
    if email == user.email:
        return Outcome.error("profile.errors.emailUnchanged", "new_email")
    try:
        with db.transaction() as conn:
            fresh = _fresh(conn, user)
            if email == fresh.email:
                return Outcome.error("profile.errors.emailUnchanged", "new_email")
            if find_by_email(conn, email) is not None:
                return Outcome.error("user.errors.emailAlreadyExists", "new_email")
            _append(
                conn,
                fresh,
                NewEvent(
                    ev.EMAIL_CHANGED,
                    {
                        "email": _seal(conn, fresh, email),
                        "previous_email": _seal(conn, fresh, fresh.email),
                    },
                ),
            )
            _request_verification(conn, fresh.id)
            # The old address hears about it, with a link that undoes the change.
            _enqueue_after_commit(
                conn, "send_email_changed_notice", fresh.tenant_id, fresh.id, fresh.version + 1
            )
    except IntegrityError:
        return Outcome.error("user.errors.emailAlreadyExists", "new_email")
    return Outcome(True, "profile.email.success")


def resend_verification(user: User) -> Outcome:
    if user.email_verified:
        return Outcome.error("profile.account.alreadyVerified")
    from webapp.accounts import verification

    verification.resend(user)
    return Outcome(True, "profile.account.verificationSent", {"email": user.email})


def change_language(user: User, language: str) -> Outcome:
    if language not in LANGUAGES:
        return Outcome.error("profile.account.unknownLanguage", "language")
    if language == user.language:
        return Outcome(True, "profile.account.languageSaved")
    with db.transaction() as conn:
        fresh = _fresh(conn, user)
        _append(conn, fresh, NewEvent(ev.LANGUAGE_CHANGED, {"language": language}))
    return Outcome(True, "profile.account.languageSaved")


def revoke_other_sessions(user: User) -> Outcome:
    token = secrets.token_urlsafe(24)
    with db.transaction() as conn:
        fresh = _fresh(conn, user)
        _append(
            conn, fresh, NewEvent(ev.SESSIONS_REVOKED, {"session_token": _seal(conn, fresh, token)})
        )
    return Outcome(True, "profile.account.sessionsRevoked", session_token=token)


def request_deletion(user: User, password: str) -> Outcome:
    if user.deletion_requested:
        return Outcome.error("profile.danger.alreadyRequested")
    if not check_password(user, password):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    due = clock.now() + timedelta(days=config().account_deletion_grace_days)
    with db.transaction() as conn:
        fresh = _fresh(conn, user)
        if fresh.deletion_requested:
            return Outcome.error("profile.danger.alreadyRequested")
        _append(conn, fresh, NewEvent(ev.DELETION_REQUESTED, {"due_at": due.isoformat()}))
        _enqueue_after_commit(conn, "send_deletion_requested", fresh.tenant_id, fresh.id)
    return Outcome(True, "profile.danger.requested", {"due_at": due})


def cancel_deletion(user: User) -> Outcome:
    with db.transaction() as conn:
        fresh = _fresh(conn, user)
        if not fresh.deletion_requested or fresh.deletion_due_at is None:
            return Outcome.error("profile.danger.notRequested")
        if fresh.deletion_due_at <= clock.now():
            return Outcome.error("profile.danger.gracePeriodExpired")
        _append(conn, fresh, NewEvent(ev.DELETION_CANCELLED, {}))
    return Outcome(True, "profile.danger.cancelSuccess")


# -- links from mail -------------------------------------------------------------


def verification_token(user: User) -> str:
    return tokens.make(
        config().secret_key, tokens.VERIFY_EMAIL, {"u": user.id, "e": tokens.digest(user.email)}
    )


def _check_verify(conn: Connection, token: str) -> User:
    data = tokens.load(config().secret_key, tokens.VERIFY_EMAIL, token)
    user = get_user(conn, str(data.get("u", "")))
    if tokens.is_spent(conn, token):
        raise tokens.TokenError("used")
    if user is None or tokens.digest(user.email) != data.get("e"):
        # Erased account, or the address changed since: this link is void.
        raise tokens.TokenError("invalid")
    if user.email_verified:
        raise tokens.TokenError("used")
    return user


def check_verification(token: str) -> Outcome:
    try:
        with db.reading() as conn:
            _check_verify(conn, token)
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")
    return Outcome(True, "verify.confirm")


def verify_email(token: str) -> Outcome:
    try:
        with db.transaction() as conn:
            user = _check_verify(conn, token)
            tokens.spend(conn, token, user.tenant_id, user.id)
            _append(
                conn,
                user,
                NewEvent(
                    ev.EMAIL_VERIFIED,
                    {
                        "email": _seal(conn, user, user.email),
                        # ids only, so a waiting workflow can match user + address
                        "user_id": user.id,
                        "address_version": address_version(conn, user),
                    },
                ),
            )
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")
    return Outcome(True, "verify.success")


def revert_token(user_id: str, version: int) -> str:
    return tokens.make(config().secret_key, tokens.REVERT_EMAIL, {"u": user_id, "v": version})


def _check_revert(conn: Connection, token: str) -> tuple[User, str, int]:
    data = tokens.load(config().secret_key, tokens.REVERT_EMAIL, token)
    user = get_user(conn, str(data.get("u", "")))
    if tokens.is_spent(conn, token):
        raise tokens.TokenError("used")
    if user is None or not isinstance(data.get("v"), int):
        raise tokens.TokenError("invalid")
    change = next(
        (
            e
            for e in read_stream(conn, _stream(user.tenant_id, user.id), data["v"] - 1)
            if e.version == data["v"]
        ),
        None,
    )
    if change is None or change.type != ev.EMAIL_CHANGED:
        raise tokens.TokenError("invalid")
    previous = crypto.unseal_for(conn, user.tenant_id, user.id, change.payload["previous_email"])
    if previous == user.email:
        raise tokens.TokenError("used")
    return user, previous, change.version


def check_revert(token: str) -> Outcome:
    try:
        with db.reading() as conn:
            _user, previous, _version = _check_revert(conn, token)
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")
    return Outcome(True, "revert.confirm", {"email": previous})


def revert_email_change(token: str) -> Outcome:
    """Restore the address from before the change, verified (the link proved it),
    and end every session: whoever made the change is signed out."""
    try:
        with db.transaction() as conn:
            user, previous, version = _check_revert(conn, token)
            taken = find_by_email(conn, previous)
            if taken is not None and taken.id != user.id:
                return Outcome.error("revert.errors.taken")
            tokens.spend(conn, token, user.tenant_id, user.id)
            _append(
                conn,
                user,
                NewEvent(
                    ev.EMAIL_CHANGE_REVERTED,
                    {
                        "email": _seal(conn, user, previous),
                        "session_token": _seal(conn, user, secrets.token_urlsafe(24)),
                        "reverted_version": version,
                    },
                ),
                actor="email-revert-link",
            )
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")
    return Outcome(True, "revert.success", {"email": previous})


# -- erasure ---------------------------------------------------------------------


def erase(tenant_id: str, user_id: str, due_by: datetime | None = None) -> bool:
    """Erase one account: event, read-model row and spent tokens gone, key destroyed.
    With `due_by`, only when a deletion request for it has run out by then."""
    with db.transaction() as conn:
        user = get_user(conn, user_id, tenant_id)
        if user is None:
            return False
        if due_by is not None and not (
            user.deletion_requested
            and user.deletion_due_at is not None
            and user.deletion_due_at <= due_by
        ):
            return False
        _append(conn, user, NewEvent(ev.ERASED, {}), actor="system:erase-accounts")
        crypto.destroy_key(conn, tenant_id, user_id)
        conn.execute(
            delete(used_tokens).where(
                used_tokens.c.tenant_id == tenant_id, used_tokens.c.user_id == user_id
            )
        )
    return True


def erase_due(tenant_id: str, now: datetime) -> int:
    with db.reading() as conn:
        due = [
            r.id
            for r in conn.execute(
                select(users.c.id).where(
                    and_(
                        users.c.tenant_id == tenant_id,
                        users.c.status == ev.DELETION_REQUESTED_STATUS,
                        users.c.deletion_due_at <= now,
                    )
                )
            )
        ]
    erased = 0
    for user_id in due:
        try:
            erased += erase(tenant_id, user_id, due_by=now)
        except VersionConflict:
            log.info("erase skipped: concurrent change; next run retries", extra={"user": user_id})
    return erased
