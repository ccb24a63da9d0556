"""What operators see and do: failed mails (without their content) and retry."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from webapp.core import clock, db
from webapp.eventstore import ANY, Metadata, NewEvent, StreamId, append
from webapp.mail.outbox.store import kick_after_commit
from webapp.mail.outbox.tables import FAILED, PENDING, mail_outbox

# Never the recipient, subject or body: those are personal data and links.
LISTED = (
    mail_outbox.c.id,
    mail_outbox.c.tenant_id,
    mail_outbox.c.user_id,
    mail_outbox.c.kind,
    mail_outbox.c.attempts,
    mail_outbox.c.last_error,
    mail_outbox.c.created_at,
)


def failed() -> list[Any]:
    with db.reading() as conn:
        return list(
            conn.execute(
                select(*LISTED).where(mail_outbox.c.status == FAILED).order_by(mail_outbox.c.id)
            )
        )


RETRIED = "mail.retried"  # on stream mail/<outbox id>; actor in the metadata


def retry(outbox_id: int | None = None, actor: str | None = None) -> list[int]:
    """Give failed mails (one, or all when `outbox_id` is None) a fresh set of
    attempts, due now; the ids that were reset. Each reset is an event with
    `actor` (no address, no content)."""
    where = [mail_outbox.c.status == FAILED]
    if outbox_id is not None:
        where.append(mail_outbox.c.id == outbox_id)
    with db.transaction() as conn:
        found = list(conn.execute(select(mail_outbox.c.id, mail_outbox.c.tenant_id).where(*where)))
        ids = [int(r.id) for r in found]
        if ids:
            conn.execute(
                update(mail_outbox)
                .where(mail_outbox.c.id.in_(ids))
                .values(status=PENDING, attempts=0, next_attempt_at=clock.now(), last_error=None)
            )
            for r in found:
                stream = StreamId(r.tenant_id, "mail", str(r.id))
                append(conn, stream, [NewEvent(RETRIED, {"outboxId": r.id})], ANY, Metadata(actor))
                kick_after_commit(conn, int(r.id))
    return ids
