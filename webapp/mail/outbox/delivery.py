"""Delivering outbox rows: claim with a lease, send, record the outcome.

A row is claimed by one compare-and-set UPDATE (due, not leased, attempts
left), so two workers never send the same mail at once; the lease outlives
any send (SMTP timeout), and a worker killed mid-send leaves a lease that
expires, after which the sweep hands the row to another worker. A failed
attempt is retried with backoff (10 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h,
6 h, ...) until `MAIL_MAX_ATTEMPTS`; then the row is `failed` and shows in
`flask mail failed`. Logs name the row and the error class only: never an
address, a body or a link.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import Connection, and_, or_, select, update

from webapp import mail
from webapp.core import clock, db
from webapp.core.config import Config
from webapp.mail.outbox.store import kick
from webapp.mail.outbox.tables import FAILED, PENDING, SENT, mail_outbox

log = logging.getLogger(__name__)

BACKOFF_SECONDS = (10, 30, 120, 600, 1800, 3600, 3 * 3600, 6 * 3600)
SWEEP_BATCH = 500


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed attempt."""
    return timedelta(seconds=BACKOFF_SECONDS[min(attempts, len(BACKOFF_SECONDS)) - 1])


def _config() -> Config:
    cfg: Config = current_app.config["APP_CONFIG"]
    return cfg


def lease_length(cfg: Config) -> timedelta:
    # Longer than any send can take: connect + each SMTP command may use the timeout.
    return timedelta(seconds=cfg.smtp_timeout * 6 + 60)


def _claimable(now: datetime, max_attempts: int) -> Any:
    return and_(
        mail_outbox.c.status == PENDING,
        mail_outbox.c.next_attempt_at <= now,
        mail_outbox.c.attempts < max_attempts,
        or_(mail_outbox.c.lease_until.is_(None), mail_outbox.c.lease_until <= now),
    )


def claim(outbox_id: int, owner: str) -> Any | None:
    """The row, leased to `owner` and with the attempt counted, or None when it
    is sent, failed, not due or held by another worker."""
    cfg = _config()
    now = clock.now()
    with db.transaction() as conn:
        result = conn.execute(
            update(mail_outbox)
            .where(mail_outbox.c.id == outbox_id, _claimable(now, cfg.mail_max_attempts))
            .values(
                lease_owner=owner,
                lease_until=now + lease_length(cfg),
                attempts=mail_outbox.c.attempts + 1,
            )
        )
        if result.rowcount != 1:
            return None
        return conn.execute(select(mail_outbox).where(mail_outbox.c.id == outbox_id)).one()


def _finish(conn: Connection, outbox_id: int, owner: str, **values: Any) -> bool:
    result = conn.execute(
        update(mail_outbox)
        .where(mail_outbox.c.id == outbox_id, mail_outbox.c.lease_owner == owner)
        .values(lease_owner=None, lease_until=None, **values)
    )
    return result.rowcount == 1


def deliver(outbox_id: int) -> str:
    """Try to send one outbox row: "sent", "retry", "failed" or "skipped"."""
    owner = uuid.uuid4().hex
    row = claim(outbox_id, owner)
    if row is None:
        return "skipped"
    try:
        mail.send(row.recipient, row.subject, row.body)
    except Exception as exc:  # any failure: keep the mail, try again later
        return _failed(row, owner, _describe(exc))
    with db.transaction() as conn:
        # Sent: the address and the link are no longer needed.
        if not _finish(
            conn, row.id, owner, status=SENT, sent_at=clock.now(), recipient=None, body=None
        ):
            log.warning("mail sent after its lease ran out", extra={"outbox_id": row.id})
    log.info("mail sent", extra={"outbox_id": row.id, "kind": row.kind, "attempt": row.attempts})
    return "sent"


def _describe(exc: Exception) -> str:
    # MailError's text is ours and names only the cause's class; other errors
    # may carry anything (an address), so only their class is kept.
    if isinstance(exc, mail.MailError):
        return f"MailError: {exc}"[:200]
    return type(exc).__name__


def _failed(row: Any, owner: str, error: str) -> str:
    cfg = _config()
    final = row.attempts >= cfg.mail_max_attempts
    next_at = clock.now() + backoff(row.attempts)
    with db.transaction() as conn:
        if final:
            _finish(conn, row.id, owner, status=FAILED, last_error=error)
        else:
            _finish(conn, row.id, owner, next_attempt_at=next_at, last_error=error)
    extra = {"outbox_id": row.id, "kind": row.kind, "attempt": row.attempts, "error_class": error}
    if final:
        log.error("mail failed after the last attempt; see `flask mail failed`", extra=extra)
        return "failed"
    log.warning("mail not sent; will retry", extra={**extra, "retry_at": next_at.isoformat()})
    kick(row.id, at=next_at)
    return "retry"


def release_claims() -> int:
    """Drop every claim on a pending row: after a restore, the workers that
    held them belong to the database that was replaced (a restore refuses
    while any process runs), so nothing will finish those sends. Whether such
    a mail went out before the backup's world ended cannot be known: it is
    sent (again) rather than never. Returns how many claims were dropped."""
    with db.transaction() as conn:
        released = conn.execute(
            update(mail_outbox)
            .where(mail_outbox.c.status == PENDING, mail_outbox.c.lease_until.is_not(None))
            .values(lease_owner=None, lease_until=None)
        )
        return int(released.rowcount)


def sweep(now: datetime | None = None) -> list[int]:
    """Mark rows whose last attempt died with its worker as failed, and return
    the ids that are due (the caller queues their delivery)."""
    cfg = _config()
    now = now or clock.now()
    with db.transaction() as conn:
        lost = conn.execute(
            update(mail_outbox)
            .where(
                mail_outbox.c.status == PENDING,
                mail_outbox.c.attempts >= cfg.mail_max_attempts,
                or_(mail_outbox.c.lease_until.is_(None), mail_outbox.c.lease_until <= now),
            )
            .values(status=FAILED, lease_owner=None, lease_until=None)
        )
        if lost.rowcount:
            log.error("mails failed: attempts used up", extra={"count": lost.rowcount})
        due = conn.execute(
            select(mail_outbox.c.id)
            .where(_claimable(now, cfg.mail_max_attempts))
            .order_by(mail_outbox.c.next_attempt_at)
            .limit(SWEEP_BATCH)
        ).scalars()
        return [int(i) for i in due]
