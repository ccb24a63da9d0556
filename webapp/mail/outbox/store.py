"""Recording mails in the outbox, inside the caller's transaction.

The row commits or rolls back with the change that causes the mail, so a mail
is never sent for a change that did not happen and never lost for one that
did. After commit the delivery is kicked (Redis down: the minute sweep finds
the row instead).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, delete, func, insert, select
from sqlalchemy.exc import IntegrityError

from webapp import jobs
from webapp.core import clock, db
from webapp.mail.outbox.tables import PENDING, mail_outbox

DELIVER_FUNC = "worker.mail_tasks.deliver"


@dataclass(frozen=True)
class Mail:
    """A rendered mail: who gets it and what it says."""

    to: str
    subject: str
    body: str


def record(
    conn: Connection,
    mail: Mail,
    *,
    tenant_id: str,
    user_id: str | None,
    kind: str,
    dedupe_key: str | None = None,
) -> int | None:
    """Add `mail` to the outbox in `conn`'s transaction; its id, or None when a
    row with the same `dedupe_key` exists already."""
    now = clock.now()
    values = dict(
        tenant_id=tenant_id,
        user_id=user_id,
        kind=kind,
        recipient=mail.to,
        subject=mail.subject,
        body=mail.body,
        dedupe_key=dedupe_key,
        status=PENDING,
        attempts=0,
        next_attempt_at=now,
        created_at=now,
    )
    try:
        with conn.begin_nested():
            inserted = conn.execute(insert(mail_outbox).values(**values))
            outbox_id = int(inserted.inserted_primary_key[0])  # type: ignore[index]
    except IntegrityError:
        if dedupe_key is None:
            raise
        return None
    kick_after_commit(conn, outbox_id)
    return outbox_id


def kick_after_commit(conn: Connection, outbox_id: int) -> None:
    def go() -> None:
        kick(outbox_id)

    db.after_commit(conn, go)


def kick(outbox_id: int, at: datetime | None = None) -> bool:
    """Ask the worker to deliver now (or at `at`); False when Redis is down."""
    return jobs.enqueue(DELIVER_FUNC, outbox_id, at=at)


def recent(
    conn: Connection, tenant_id: str, user_id: str, kinds: Iterable[str], since: datetime
) -> tuple[int, datetime | None]:
    """How many mails of `kinds` were recorded for the user since `since`, and
    when the latest was (any age). Used to limit mails a user can ask for."""
    where = (
        mail_outbox.c.tenant_id == tenant_id,
        mail_outbox.c.user_id == user_id,
        mail_outbox.c.kind.in_(list(kinds)),
    )
    count = conn.execute(
        select(func.count()).where(*where, mail_outbox.c.created_at >= since)
    ).scalar_one()
    latest = conn.execute(
        select(mail_outbox.c.created_at)
        .where(*where)
        .order_by(mail_outbox.c.created_at.desc())
        .limit(1)
    ).scalar()
    return int(count), latest


def erase_user(conn: Connection, tenant_id: str, user_id: str) -> int:
    """Delete every outbox row of the user (addresses and links are personal data)."""
    result = conn.execute(
        delete(mail_outbox).where(
            mail_outbox.c.tenant_id == tenant_id, mail_outbox.c.user_id == user_id
        )
    )
    return int(result.rowcount or 0)
