"""Your activity: what happened on the account, in plain words, newest first,
20 a page with keyset paging.

Two sources, merged by time: the events of the user's own stream (what they
did, or what was done to their account) and the mails recorded for them in the
outbox ("Verification email sent"). Only types with a plain-words text are
listed; internal bookkeeping (a password hash upgraded to new cost parameters,
a deletion link's binding) is left out, and a raw type is never shown.

The cursor names the last entry shown: `<microseconds since 1970>-<source>-<id>`
(source 1 = mail, 0 = event; ties in time are broken by source, then id).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from flask_babel import lazy_gettext
from sqlalchemy import Connection, String, and_, literal_column, or_, select

from webapp.accounts import (
    account,
    change_email,
    change_password,
    deletion,
    registration,
    reset,
    signin_codes,
)
from webapp.accounts import events as ev
from webapp.accounts.factors import reset as factors_reset
from webapp.accounts.identities import commands as identity_commands
from webapp.accounts.users import User
from webapp.devices import alert as device_alert
from webapp.eventstore.tables import events
from webapp.mail.outbox.tables import mail_outbox
from webapp.privacy import mails

PAGE = 20
EVENT, MAIL = 0, 1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# event type -> what the person did or what happened to their account
EVENT_TEXTS = {
    ev.REGISTERED: "privacy.activity.registered",
    ev.EMAIL_CHANGED: "privacy.activity.emailChanged",
    ev.EMAIL_VERIFIED: "privacy.activity.emailVerified",
    ev.EMAIL_CHANGE_REVERTED: "privacy.activity.emailChangeReverted",
    ev.PASSWORD_CHANGED: "privacy.activity.passwordChanged",
    ev.PASSWORD_RESET_REQUESTED: "privacy.activity.passwordResetRequested",
    ev.PASSWORD_RESET: "privacy.activity.passwordReset",
    ev.LANGUAGE_CHANGED: "privacy.activity.languageChanged",
    ev.SESSIONS_REVOKED: "privacy.activity.sessionsRevoked",
    ev.DELETION_REQUESTED: "privacy.activity.deletionRequested",
    ev.DELETION_CANCELLED: "privacy.activity.deletionCancelled",
    ev.EXPORT_REQUESTED: "privacy.activity.exportRequested",
    ev.EXPORT_COMPLETED: "privacy.activity.exportCompleted",
    ev.EXPORT_FAILED: "privacy.activity.exportFailed",
    ev.RESTRICTED: "privacy.activity.restricted",
    ev.RESTRICTION_LIFTED: "privacy.activity.restrictionLifted",
    ev.NEW_DEVICE_SIGNED_IN: "privacy.activity.newDeviceSignedIn",
    ev.DEVICE_SIGNED_OUT: "privacy.activity.deviceSignedOut",
    ev.TOTP_ADDED: "privacy.activity.totpAdded",
    ev.TOTP_REMOVED: "privacy.activity.totpRemoved",
    ev.RECOVERY_CODES_GENERATED: "privacy.activity.recoveryCodesGenerated",
    ev.RECOVERY_CODE_USED: "privacy.activity.recoveryCodeUsed",
    ev.FACTORS_RESET: "privacy.activity.factorsReset",
    ev.PASSKEY_ADDED: "privacy.activity.passkeyAdded",
    ev.PASSKEY_REMOVED: "privacy.activity.passkeyRemoved",
    ev.IDENTITY_LINKED: "privacy.activity.identityLinked",
    ev.IDENTITY_UNLINKED: "privacy.activity.identityUnlinked",
}

# outbox kind -> the mail we sent
MAIL_TEXTS = {
    registration.VERIFICATION: "privacy.activity.mail.verification",
    registration.VERIFICATION_RESEND: "privacy.activity.mail.verification",
    registration.VERIFICATION_REMINDER: "privacy.activity.mail.verification",
    change_email.EMAIL_CHANGED: "privacy.activity.mail.emailChanged",
    change_password.PASSWORD_CHANGED: "privacy.activity.mail.passwordChanged",
    reset.PASSWORD_RESET: "privacy.activity.mail.passwordReset",
    registration.REGISTRATION_ATTEMPT: "privacy.activity.mail.registrationAttempt",
    deletion.DELETION_REQUESTED: "privacy.activity.mail.deletionRequested",
    deletion.DELETION_CANCELLED: "privacy.activity.mail.deletionCancelled",
    account.RESTRICTED_MAIL: "privacy.activity.mail.restricted",
    account.RESTRICTION_LIFTED_MAIL: "privacy.activity.mail.restrictionLifted",
    mails.EXPORT_READY: "privacy.activity.mail.exportReady",
    mails.EXPORT_FAILED: "privacy.activity.mail.exportFailed",
    deletion.DELETION_LINK: "privacy.activity.mail.deletionLink",
    device_alert.NEW_DEVICE_MAIL: "privacy.activity.mail.newDevice",
    factors_reset.FACTORS_RESET_MAIL: "privacy.activity.mail.factorsReset",
    identity_commands.LINKED_MAIL: "privacy.activity.mail.identityLinked",
    identity_commands.UNLINKED_MAIL: "privacy.activity.mail.identityUnlinked",
    signin_codes.SIGNIN_CODE: "privacy.activity.mail.signinCode",
}


@dataclass(frozen=True)
class Cursor:
    at: datetime
    source: int
    id: int

    def __str__(self) -> str:
        micros = (self.at - EPOCH) // timedelta(microseconds=1)
        return f"{micros}-{self.source}-{self.id}"


@dataclass(frozen=True)
class Entry:
    text: str
    at: datetime
    key: Cursor


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_before: str | None  # the cursor of the next page, None at the end


def parse_before(raw: str | None) -> Cursor | None:
    """The `before` cursor from a query string, or None; ValueError when malformed."""
    if raw is None or raw == "":
        return None
    parts = raw.split("-")
    if len(parts) != 3 or not all(p.isdigit() and len(p) <= 18 for p in parts):
        raise ValueError("malformed cursor")
    micros, source, ident = (int(p) for p in parts)
    if source not in (EVENT, MAIL):
        raise ValueError("malformed cursor")
    return Cursor(EPOCH + timedelta(microseconds=micros), source, ident)


def _older(at: Any, ident: Any, source: int, before: Cursor | None) -> Any:
    """Entries of `source` that come after the cursor in newest-first order."""
    if before is None:
        return True
    if source == before.source:
        return or_(at < before.at, and_(at == before.at, ident < before.id))
    # same instant: mails (1) are listed before events (0)
    return at < before.at if source > before.source else at <= before.at


def _listed(values: Iterable[str]) -> list[Any]:
    """Our own constants as SQL literals (not parameters): a statement built once
    (webapp/privacy/shown.py) sends no list of its own."""
    assert all("'" not in v for v in values)
    return [literal_column(f"'{v}'", String) for v in values]


def events_where(tenant_id: Any, user_id: Any) -> tuple[Any, ...]:
    """The events Your activity lists: the user's own stream, listed types only."""
    c = events.c
    return (
        c.tenant_id == tenant_id,
        c.aggregate_type == ev.AGGREGATE,
        c.aggregate_id == user_id,
        c.type.in_(_listed(EVENT_TEXTS)),
    )


def mails_where(tenant_id: Any, user_id: Any) -> tuple[Any, ...]:
    """The mails Your activity lists: recorded for the user, listed kinds only."""
    c = mail_outbox.c
    return (c.tenant_id == tenant_id, c.user_id == user_id, c.kind.in_(_listed(MAIL_TEXTS)))


def event_entry(version: int, type_: str, at: datetime) -> Entry:
    return Entry(str(lazy_gettext(EVENT_TEXTS[type_])), at, Cursor(at, EVENT, version))


def mail_entry(ident: int, kind: str, at: datetime) -> Entry:
    return Entry(str(lazy_gettext(MAIL_TEXTS[kind])), at, Cursor(at, MAIL, ident))


def _events(conn: Connection, user: User, before: Cursor | None) -> list[Entry]:
    c = events.c
    rows = conn.execute(
        select(c.version, c.type, c.recorded_at)
        .where(
            *events_where(user.tenant_id, user.id),
            _older(c.recorded_at, c.version, EVENT, before),
        )
        .order_by(c.recorded_at.desc(), c.version.desc())
        .limit(PAGE + 1)
    )
    return [event_entry(r.version, r.type, r.recorded_at) for r in rows]


def _mails(conn: Connection, user: User, before: Cursor | None) -> list[Entry]:
    c = mail_outbox.c
    rows = conn.execute(
        select(c.id, c.kind, c.created_at)
        .where(*mails_where(user.tenant_id, user.id), _older(c.created_at, c.id, MAIL, before))
        .order_by(c.created_at.desc(), c.id.desc())
        .limit(PAGE + 1)
    )
    return [mail_entry(r.id, r.kind, r.created_at) for r in rows]


def merged(entries: Iterable[Entry]) -> Page:
    """One page of `entries` (each source's first PAGE + 1 at most), newest first."""
    ordered = sorted(entries, key=lambda e: (e.key.at, e.key.source, e.key.id), reverse=True)
    shown = ordered[:PAGE]
    more = len(ordered) > PAGE
    return Page(shown, str(shown[-1].key) if more else None)


def page(conn: Connection, user: User, before: Cursor | None = None) -> Page:
    return merged([*_events(conn, user, before), *_mails(conn, user, before)])
