"""The profile's commands: password, email, language, sessions, deletion.

Each checks what it can before the transaction (the password costs an argon2
run), then runs its transaction through `retry_on_conflict`: a concurrent change
to the same account is retried once on fresh state, else answered with 409.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from webapp import clock, db
from webapp.accounts import emails, mails, passwords, signins
from webapp.accounts import events as ev
from webapp.accounts.commands import (
    INVALID_CREDENTIALS,
    LANGUAGES,
    Outcome,
    append_to,
    check_new_password,
    check_password,
    config,
    fresh,
    hasher,
    retry_on_conflict,
    seal,
)
from webapp.accounts.tables import users
from webapp.accounts.users import User, find_by_email
from webapp.eventstore import NewEvent


def change_password(user: User, current: str, new: str) -> Outcome:
    if not check_password(user, current):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    if new == current:
        return Outcome.error("password.errors.sameAsCurrent", "new_password")
    problem = check_new_password(user.email, new)
    if problem:
        return problem
    new_hash = passwords.hash_password(hasher(), new)
    token = secrets.token_urlsafe(24)

    def attempt() -> Outcome:
        with db.transaction() as conn:
            row = fresh(conn, user)
            append_to(
                conn,
                row,
                NewEvent(
                    ev.PASSWORD_CHANGED,
                    {
                        "password_hash": seal(conn, row, new_hash),
                        "session_token": seal(conn, row, token),
                    },
                ),
            )
            signins.end_others(conn, row, keep=user.sign_in)
            mails.record_password_changed(conn, row.tenant_id, row.id)
        return Outcome(True, "profile.password.success", session_token=token)

    return retry_on_conflict(attempt)


def change_email(user: User, new_raw: str, password: str) -> Outcome:
    if not check_password(user, password):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    checked = emails.check(new_raw)
    if checked.error:
        return Outcome.error(checked.error, "new_email")
    email = checked.address
    if email == user.email:
        return Outcome.error("profile.errors.emailUnchanged", "new_email")

    def attempt() -> Outcome:
        try:
            with db.transaction() as conn:
                row = fresh(conn, user)
                if email == row.email:
                    return Outcome.error("profile.errors.emailUnchanged", "new_email")
                if find_by_email(conn, email) is not None:
                    return Outcome.error("user.errors.emailAlreadyExists", "new_email")
                append_to(
                    conn,
                    row,
                    NewEvent(
                        ev.EMAIL_CHANGED,
                        {
                            "email": seal(conn, row, email),
                            "previous_email": seal(conn, row, row.email),
                        },
                    ),
                )
                mails.record_verification(conn, row.tenant_id, row.id)
                # The old address hears about it, with a link that undoes the change.
                mails.record_email_changed_notice(conn, row.tenant_id, row.id, row.version + 1)
        except IntegrityError:
            return Outcome.error("user.errors.emailAlreadyExists", "new_email")
        return Outcome(True, "profile.email.success")

    return retry_on_conflict(attempt)


def _locked(conn: Connection, user: User) -> User:
    """The user's row, locked until commit (PostgreSQL; SQLite's write lock is
    taken at BEGIN): two resends at once count each other's mail."""
    conn.execute(
        select(users.c.id)
        .where(users.c.tenant_id == user.tenant_id, users.c.id == user.id)
        .with_for_update()
    )
    return fresh(conn, user)


def resend_verification(user: User) -> Outcome:
    if user.email_verified:
        return Outcome.error("profile.account.alreadyVerified")
    with db.transaction() as conn:
        row = _locked(conn, user)
        if row.email_verified:
            return Outcome.error("profile.account.alreadyVerified")
        limit = mails.limit_reached(
            conn, row, mails.VERIFICATION_RESEND, cooldown_after=(mails.VERIFICATION,)
        )
        if limit is not None:
            return Outcome.error(f"profile.account.resendLimit.{limit}")
        mails.record_verification(conn, row.tenant_id, row.id, mails.VERIFICATION_RESEND)
    return Outcome(True, "profile.account.verificationSent", {"email": row.email})


def change_language(user: User, language: str) -> Outcome:
    if language not in LANGUAGES:
        return Outcome.error("profile.account.unknownLanguage", "language")
    if language == user.language:
        return Outcome(True, "profile.account.languageSaved")

    def attempt() -> Outcome:
        with db.transaction() as conn:
            row = fresh(conn, user)
            if row.language != language:
                append_to(conn, row, NewEvent(ev.LANGUAGE_CHANGED, {"language": language}))
        return Outcome(True, "profile.account.languageSaved")

    return retry_on_conflict(attempt)


def revoke_other_sessions(user: User) -> Outcome:
    token = secrets.token_urlsafe(24)

    def attempt() -> Outcome:
        with db.transaction() as conn:
            row = fresh(conn, user)
            append_to(
                conn,
                row,
                NewEvent(ev.SESSIONS_REVOKED, {"session_token": seal(conn, row, token)}),
            )
            signins.end_others(conn, row, keep=user.sign_in)
        return Outcome(True, "profile.account.sessionsRevoked", session_token=token)

    return retry_on_conflict(attempt)


def request_deletion(user: User, password: str) -> Outcome:
    """Schedule the erasure and sign out every other session; this one stays,
    so the user can cancel."""
    if user.deletion_requested:
        return Outcome.error("profile.danger.alreadyRequested")
    if not check_password(user, password):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    due = clock.now() + timedelta(days=config().account_deletion_grace_days)
    token = secrets.token_urlsafe(24)

    def attempt() -> Outcome:
        with db.transaction() as conn:
            row = fresh(conn, user)
            if row.deletion_requested:
                return Outcome.error("profile.danger.alreadyRequested")
            if row.status != ev.ACTIVE:  # restricted (Art. 18): frozen until lifted
                return Outcome.error("privacy.delete.restricted")
            append_to(
                conn,
                row,
                NewEvent(
                    ev.DELETION_REQUESTED,
                    {"due_at": due.isoformat(), "session_token": seal(conn, row, token)},
                ),
            )
            signins.end_others(conn, row, keep=user.sign_in)
            mails.record_deletion_requested(conn, row.tenant_id, row.id)
        return Outcome(True, "profile.danger.requested", {"due_at": due}, session_token=token)

    return retry_on_conflict(attempt)


def cancel_deletion(user: User) -> Outcome:
    def attempt() -> Outcome:
        with db.transaction() as conn:
            row = fresh(conn, user)
            if not row.deletion_requested or row.deletion_due_at is None:
                return Outcome.error("profile.danger.notRequested")
            if row.deletion_due_at <= clock.now():
                return Outcome.error("profile.danger.gracePeriodExpired")
            append_to(conn, row, NewEvent(ev.DELETION_CANCELLED, {}))
            mails.record_deletion_cancelled(conn, row.tenant_id, row.id)
        return Outcome(True, "profile.danger.cancelSuccess")

    return retry_on_conflict(attempt)
