"""Erasure: the account's event, read-model row and spent tokens gone, its key
destroyed (crypto-shredding), once a deletion request's grace period has run out."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import and_, delete, select

from webapp import db
from webapp.accounts import crypto, signins
from webapp.accounts import events as ev
from webapp.accounts.commands import append_to
from webapp.accounts.tables import used_tokens, users
from webapp.accounts.users import get_user
from webapp.eventstore import NewEvent, VersionConflict

log = logging.getLogger(__name__)


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
        append_to(conn, user, NewEvent(ev.ERASED, {}), actor="system:erase-accounts")
        crypto.destroy_key(conn, tenant_id, user_id)
        signins.end_all(conn, tenant_id, user_id)
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
