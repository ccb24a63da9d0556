"""The account mails: composed in the user's language with their links, and
recorded in the mail outbox in the transaction of the change that causes them
(webapp/mail/outbox delivers them: retried with backoff, never lost).

Every function takes the transaction's connection and reads the user as that
transaction sees them (after the change's event), so the mail says what the
change did.
"""

from __future__ import annotations

from datetime import timedelta

from flask import current_app
from flask_babel import force_locale, format_date, gettext
from sqlalchemy import Connection

from webapp import clock
from webapp.accounts import crypto, links
from webapp.accounts import events as ev
from webapp.accounts.users import User, address_version, get_user, stream_of
from webapp.eventstore import read_stream
from webapp.mail import outbox

# Outbox kinds (shown by `flask mail failed`).
VERIFICATION = "verification"
VERIFICATION_RESEND = "verification-resend"
VERIFICATION_REMINDER = "verification-reminder"
EMAIL_CHANGED = "email-changed-notice"
PASSWORD_CHANGED = "password-changed"
PASSWORD_RESET = "password-reset"
REGISTRATION_ATTEMPT = "registration-attempt"
DELETION_REQUESTED = "deletion-requested"
DELETION_CANCELLED = "deletion-cancelled"

# While processing is restricted (Art. 18) only the mails the law requires go
# out: the confirmation of the restriction (Art. 12(3)) and the notice that it
# is lifted (Art. 18(3)). Every other mail is not recorded at all.
RESTRICTED = "restricted"
RESTRICTION_LIFTED = "restriction-lifted"
LAWFUL_WHILE_RESTRICTED = frozenset({RESTRICTED, RESTRICTION_LIFTED})

# Mails anyone can make us send to an address (resend, a sign-up with a taken
# address): at most this many per hour per account, and one per cooldown.
PER_HOUR = 3
COOLDOWN = timedelta(seconds=60)


def _base() -> str:
    return str(current_app.config["APP_CONFIG"].base_url)


def _user(conn: Connection, tenant_id: str, user_id: str) -> User:
    user = get_user(conn, user_id, tenant_id)
    if user is None:
        raise LookupError("no such user")
    return user


def _record(
    conn: Connection,
    user: User,
    kind: str,
    subject_key: str,
    body_key: str,
    to: str | None = None,
    dedupe_key: str | None = None,
    **params: object,
) -> int | None:
    if user.status == ev.RESTRICTED_STATUS and kind not in LAWFUL_WHILE_RESTRICTED:
        return None
    with force_locale(user.language or "en"):
        subject = gettext(subject_key)
        body = gettext(body_key, **params)  # type: ignore[arg-type]
    return outbox.record(
        conn,
        outbox.Mail(to or user.email, subject, body),
        tenant_id=user.tenant_id,
        user_id=user.id,
        kind=kind,
        dedupe_key=dedupe_key,
    )


record = _record  # for the other features' account mails (webapp/privacy)


def limit_reached(
    conn: Connection, user: User, kind: str, cooldown_after: tuple[str, ...] = ()
) -> str | None:
    """ "cooldown" or "hourly" when one more mail of `kind` would be too many:
    `PER_HOUR` of `kind` an hour, and none within `COOLDOWN` of the latest mail
    of `kind` or of `cooldown_after`."""
    now = clock.now()
    hour_ago = now - timedelta(hours=1)
    count, latest = outbox.recent(conn, user.tenant_id, user.id, (kind,), hour_ago)
    _, latest_other = outbox.recent(conn, user.tenant_id, user.id, cooldown_after, hour_ago)
    if any(t is not None and now - t < COOLDOWN for t in (latest, latest_other)):
        return "cooldown"
    if count >= PER_HOUR:
        return "hourly"
    return None


def record_verification(
    conn: Connection, tenant_id: str, user_id: str, kind: str = VERIFICATION
) -> int | None:
    """The verification link to the user's current address (also for resends
    and the workflow's reminder, which is recorded once per address)."""
    user = _user(conn, tenant_id, user_id)
    reminder = kind == VERIFICATION_REMINDER
    return _record(
        conn,
        user,
        kind,
        "mail.verify.subject",
        "mail.verify.reminderBody" if reminder else "mail.verify.body",
        dedupe_key=f"reminder:{user.id}:{address_version(conn, user)}" if reminder else None,
        link=f"{_base()}/verify-email/{links.verification_token(user)}",
    )


def record_password_changed(conn: Connection, tenant_id: str, user_id: str) -> None:
    _record(
        conn,
        _user(conn, tenant_id, user_id),
        PASSWORD_CHANGED,
        "mail.passwordChanged.subject",
        "mail.passwordChanged.body",
        link=f"{_base()}/reset-password",
    )


def record_registration_attempt(conn: Connection, tenant_id: str, user_id: str) -> None:
    user = _user(conn, tenant_id, user_id)
    if limit_reached(conn, user, REGISTRATION_ATTEMPT):
        return  # the owner has heard about it lately; nobody floods their inbox
    _record(
        conn,
        user,
        REGISTRATION_ATTEMPT,
        "mail.registerAttempt.subject",
        "mail.registerAttempt.body",
        link=f"{_base()}/login",
    )


def record_deletion_requested(conn: Connection, tenant_id: str, user_id: str) -> None:
    user = _user(conn, tenant_id, user_id)
    if user.deletion_due_at is None:
        return
    with force_locale(user.language or "en"):
        date = format_date(user.deletion_due_at, format="long")
    _record(
        conn,
        user,
        DELETION_REQUESTED,
        "mail.deletionRequested.subject",
        "mail.deletionRequested.body",
        date=date,
        link=f"{_base()}/profile",
    )


def record_deletion_cancelled(conn: Connection, tenant_id: str, user_id: str) -> None:
    _record(
        conn,
        _user(conn, tenant_id, user_id),
        DELETION_CANCELLED,
        "mail.deletionCancelled.subject",
        "mail.deletionCancelled.body",
        link=f"{_base()}/reset-password",
    )


def record_email_changed_notice(
    conn: Connection, tenant_id: str, user_id: str, version: int
) -> None:
    """To the address from before the change at `version`, with the revert link."""
    user = _user(conn, tenant_id, user_id)
    change = next(
        (
            e
            for e in read_stream(conn, stream_of(tenant_id, user_id), version - 1)
            if e.version == version
        ),
        None,
    )
    if change is None or change.type != ev.EMAIL_CHANGED:
        raise LookupError("no email change at that version")
    previous = crypto.unseal_for(conn, tenant_id, user_id, change.payload["previous_email"])
    link = f"{_base()}/email-change/revert/{links.revert_token(user.id, version)}"
    _record(
        conn,
        user,
        EMAIL_CHANGED,
        "mail.emailChanged.subject",
        "mail.emailChanged.body",
        to=previous,
        link=link,
    )


def record_password_reset(conn: Connection, user: User, token: str) -> None:
    _record(
        conn,
        user,
        PASSWORD_RESET,
        "mail.passwordReset.subject",
        "mail.passwordReset.body",
        link=f"{_base()}/reset-password/{token}",
    )
