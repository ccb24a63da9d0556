"""Registration and verification: sign up, the verification mail (and its
resend), the link that verifies the address, and the `users` row they make.

The reminder a day later is the workflow engine's (verification_workflow.py).
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from webapp.accounts import addresses, crypto, notices, passwords, signed_links
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.credentials import check_new_password, config, hasher
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.stream import RowChange, append, append_to, fresh, unsealed
from webapp.accounts.tables import users
from webapp.accounts.users import User, address_version, find_by_email, get_user
from webapp.core import db
from webapp.eventstore import Event
from webapp.tenants import DEFAULT_TENANT

LANGUAGES = ("en", "de")

# Outbox kinds (shown by `flask mail failed`).
VERIFICATION = "verification"
VERIFICATION_RESEND = "verification-resend"
VERIFICATION_REMINDER = "verification-reminder"
REGISTRATION_ATTEMPT = "registration-attempt"


def register(email_raw: str, password: str, confirm: str, language: str | None) -> Result:
    checked = addresses.check(email_raw)
    if checked.error:
        return Result.error(checked.error, "email")
    email = checked.address
    if password != confirm:
        return Result.error("auth.register.mismatch", "confirm")
    problem = check_new_password(email, password, field="password")
    if problem:
        return problem
    # Hash before looking the address up, so both paths cost the same time.
    password_hash = passwords.hash_password(hasher(), password)
    lang = language if language in LANGUAGES else None
    user_id = str(uuid.uuid4())
    decision = Account(None).register(email, password_hash, secrets.token_urlsafe(24), lang)
    assert not isinstance(decision, Refusal)  # a new id has no account yet
    try:
        with db.transaction() as conn:
            existing = find_by_email(conn, email)
            if existing is not None:
                # No enumeration: the page says the same; the owner hears about it.
                record_registration_attempt(conn, DEFAULT_TENANT, existing.id)
                return Result(True, "auth.register.success", {"email": email})
            crypto.create_key(conn, DEFAULT_TENANT, user_id)
            append(conn, DEFAULT_TENANT, user_id, 0, decision, actor="anonymous")
            record_verification(conn, DEFAULT_TENANT, user_id)
    except IntegrityError:
        # Lost a race with a concurrent registration of the same address.
        return Result(True, "auth.register.success", {"email": email})
    return Result(True, "auth.register.success", {"email": email}, user_id=user_id)


# --- the verification link ---------------------------------------------------
def verification_token(user: User) -> str:
    return signed_links.make(
        config().secret_key,
        signed_links.VERIFY_EMAIL,
        {"u": user.id, "e": signed_links.digest(user.email)},
    )


def _verification(conn: Connection, token: str) -> tuple[User, Any]:
    """The link's user and the account's decision; `TokenError` when void."""
    data = signed_links.load(config().secret_key, signed_links.VERIFY_EMAIL, token)
    user = get_user(conn, str(data.get("u", "")))
    if signed_links.is_spent(conn, token):
        raise signed_links.TokenError("used")
    if user is not None and signed_links.digest(user.email) != data.get("e"):
        raise signed_links.TokenError("invalid")  # the address changed since: void
    decision = Account(user).verify_email(address_version(conn, user) if user else 0)
    if isinstance(decision, Refusal):
        raise signed_links.TokenError(decision.key.rsplit(".", 1)[-1])
    assert user is not None
    return user, decision


def check_verification(token: str) -> Result:
    """GET only checks the link (mail scanners prefetch); the POST spends it."""
    try:
        with db.reading() as conn:
            _verification(conn, token)
    except signed_links.TokenError as e:
        return Result.error(f"verify.errors.{e.reason}")
    return Result(True, "verify.confirm")


def verify_email(token: str) -> Result:
    def attempt() -> Result:
        with db.transaction() as conn:
            user, decision = _verification(conn, token)
            signed_links.spend(conn, token, user.tenant_id, user.id)
            append_to(conn, user, decision)
        return Result(True, "verify.success")

    try:
        return retry_on_conflict(attempt)
    except signed_links.TokenError as e:
        return Result.error(f"verify.errors.{e.reason}")


def verified_by_code(user: User, mailed_to: str) -> Result:
    """A sign-in code mailed to `mailed_to` and typed back proves the address,
    as the verification link does: the account's address is verified when it
    is still that address (not changed since the code went out)."""
    unchanged = Result(False, "verify.errors.used")
    if user.email_verified or user.email != mailed_to:
        return unchanged

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            if row.email_verified or row.email != mailed_to:
                return unchanged
            decision = Account(row).verify_email(address_version(conn, row))
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
        return Result(True, "verify.success")

    return retry_on_conflict(attempt)


# --- resend --------------------------------------------------------------------
def _locked(conn: Connection, user: User) -> User:
    """The user's row, locked until commit (PostgreSQL; SQLite's write lock is
    taken at BEGIN): two resends at once count each other's mail."""
    conn.execute(
        select(users.c.id)
        .where(users.c.tenant_id == user.tenant_id, users.c.id == user.id)
        .with_for_update()
    )
    return fresh(conn, user)


def resend_verification(user: User) -> Result:
    refused = Account(user).resend_verification()
    if isinstance(refused, Refusal):
        return Result.refused(refused)
    with db.transaction() as conn:
        row = _locked(conn, user)
        refused = Account(row).resend_verification()
        if isinstance(refused, Refusal):
            return Result.refused(refused)
        limit = notices.limit_reached(
            conn, row, VERIFICATION_RESEND, cooldown_after=(VERIFICATION,)
        )
        if limit is not None:
            return Result.error(f"profile.account.resendLimit.{limit}")
        record_verification(conn, row.tenant_id, row.id, VERIFICATION_RESEND)
    return Result(True, "profile.account.verificationSent", {"email": row.email})


# --- mails ---------------------------------------------------------------------
def record_verification(
    conn: Connection, tenant_id: str, user_id: str, kind: str = VERIFICATION
) -> int | None:
    """The verification link to the user's current address (also for resends
    and the workflow's reminder, which is recorded once per address)."""
    user = notices.user_of(conn, tenant_id, user_id)
    reminder = kind == VERIFICATION_REMINDER
    return notices.record(
        conn,
        user,
        kind,
        "mail.verify",
        f"/verify-email/{verification_token(user)}",
        dedupe_key=f"reminder:{user.id}:{address_version(conn, user)}" if reminder else None,
        body="mail.verify.reminderBody" if reminder else "mail.verify.body",
        duration=signed_links.LIFETIMES[signed_links.VERIFY_EMAIL],
    )


def record_registration_attempt(conn: Connection, tenant_id: str, user_id: str) -> None:
    user = notices.user_of(conn, tenant_id, user_id)
    if notices.limit_reached(conn, user, REGISTRATION_ATTEMPT):
        return  # the owner has heard about it lately; nobody floods their inbox
    notices.record(conn, user, REGISTRATION_ATTEMPT, "mail.registerAttempt", "/login")


# --- the `users` row (written by projection.py) -------------------------------------
def registered_row(conn: Connection, e: Event) -> dict[str, Any]:
    return {
        "email": unsealed(conn, e, "email"),
        "email_verified": False,
        "password_hash": unsealed(conn, e, "password_hash"),
        "session_token": unsealed(conn, e, "session_token"),
        "language": e.payload.get("language"),
        "status": ev.ACTIVE,
        "deletion_due_at": None,
    }


ROW_CHANGES: dict[str, RowChange] = {ev.EMAIL_VERIFIED: lambda conn, e: {"email_verified": True}}
