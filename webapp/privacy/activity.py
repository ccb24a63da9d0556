"""Your activity: the events of the user's own stream in plain words, newest
first, 20 a page (keyset paging on the stream version).

Only types with a plain-words text are listed; internal bookkeeping (a password
hash upgraded to new cost parameters, a link request's binding) is left out,
and a raw event type is never shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask_babel import lazy_gettext
from sqlalchemy import Connection, select

from webapp.accounts import events as account_events
from webapp.accounts.users import User
from webapp.eventstore.tables import events
from webapp.privacy import events as ev

PAGE = 20

# event type -> what the person did or what happened to their account
TEXTS = {
    account_events.REGISTERED: "privacy.activity.registered",
    account_events.EMAIL_CHANGED: "privacy.activity.emailChanged",
    account_events.EMAIL_VERIFIED: "privacy.activity.emailVerified",
    account_events.EMAIL_CHANGE_REVERTED: "privacy.activity.emailChangeReverted",
    account_events.PASSWORD_CHANGED: "privacy.activity.passwordChanged",
    account_events.PASSWORD_RESET_REQUESTED: "privacy.activity.passwordResetRequested",
    account_events.PASSWORD_RESET: "privacy.activity.passwordReset",
    account_events.LANGUAGE_CHANGED: "privacy.activity.languageChanged",
    account_events.SESSIONS_REVOKED: "privacy.activity.sessionsRevoked",
    account_events.DELETION_REQUESTED: "privacy.activity.deletionRequested",
    account_events.DELETION_CANCELLED: "privacy.activity.deletionCancelled",
    ev.EXPORT_REQUESTED: "privacy.activity.exportRequested",
    ev.EXPORT_COMPLETED: "privacy.activity.exportCompleted",
    ev.EXPORT_FAILED: "privacy.activity.exportFailed",
    ev.RESTRICTED: "privacy.activity.restricted",
    ev.RESTRICTION_LIFTED: "privacy.activity.restrictionLifted",
    ev.DELETION_LINK_REQUESTED: "privacy.activity.deletionLinkRequested",
}


@dataclass(frozen=True)
class Entry:
    text: str
    at: datetime


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_before: int | None  # the cursor of the next page, None at the end


def parse_before(raw: str | None) -> int | None:
    """The `before` cursor from a query string: a positive number or nothing."""
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or len(raw) > 9:
        raise ValueError("before must be a positive number")
    return int(raw)


def page(conn: Connection, user: User, before: int | None = None) -> Page:
    query = (
        select(events.c.version, events.c.type, events.c.recorded_at)
        .where(
            events.c.tenant_id == user.tenant_id,
            events.c.aggregate_type == account_events.AGGREGATE,
            events.c.aggregate_id == user.id,
            events.c.type.in_(list(TEXTS)),
        )
        .order_by(events.c.version.desc())
        .limit(PAGE + 1)
    )
    if before is not None:
        query = query.where(events.c.version < before)
    rows = list(conn.execute(query))
    shown = rows[:PAGE]
    entries = [Entry(str(lazy_gettext(TEXTS[r.type])), r.recorded_at) for r in shown]
    more = len(rows) > PAGE
    return Page(entries, shown[-1].version if more else None)
