"""The profile's commands: password, email, language, sessions, deletion."""

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
    check_password,
    config,
    fresh,
    hasher,
    seal,
)
from webapp.accounts.tables import users
from webapp.accounts.users import User, find_by_email
from webapp.eventstore import NewEvent


def change_password(user: User, current: str, new: str) -> Outcome:
    if not check_password(user, current):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    problem = passwords.policy_error(new, user.email, config().password_min_length)
    if problem:
        return Outcome.error(problem[0], "new_password", **problem[1])
    new_hash = passwords.hash_password(hasher(), new)
    token = secrets.token_urlsafe(24)
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
    with db.transaction() as conn:
        row = fresh(conn, user)
        append_to(conn, row, NewEvent(ev.LANGUAGE_CHANGED, {"language": language}))
    return Outcome(True, "profile.account.languageSaved")


def revoke_other_sessions(user: User) -> Outcome:
    token = secrets.token_urlsafe(24)
    with db.transaction() as conn:
        row = fresh(conn, user)
        append_to(
            conn, row, NewEvent(ev.SESSIONS_REVOKED, {"session_token": seal(conn, row, token)})
        )
        signins.end_others(conn, row, keep=user.sign_in)
    return Outcome(True, "profile.account.sessionsRevoked", session_token=token)


def request_deletion(user: User, password: str) -> Outcome:
    """Schedule the erasure and sign out every other session; this one stays,
    so the user can cancel."""
    if user.deletion_requested:
        return Outcome.error("profile.danger.alreadyRequested")
    if not check_password(user, password):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    due = clock.now() + timedelta(days=config().account_deletion_grace_days)
    token = secrets.token_urlsafe(24)
    with db.transaction() as conn:
        row = fresh(conn, user)
        if row.deletion_requested:
            return Outcome.error("profile.danger.alreadyRequested")
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


def cancel_deletion(user: User) -> Outcome:
    with db.transaction() as conn:
        row = fresh(conn, user)
        if not row.deletion_requested or row.deletion_due_at is None:
            return Outcome.error("profile.danger.notRequested")
        if row.deletion_due_at <= clock.now():
            return Outcome.error("profile.danger.gracePeriodExpired")
        append_to(conn, row, NewEvent(ev.DELETION_CANCELLED, {}))
        mails.record_deletion_cancelled(conn, row.tenant_id, row.id)
    return Outcome(True, "profile.danger.cancelSuccess")
