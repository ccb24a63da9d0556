"""The daily `erase-accounts` job (03:00 UTC): accounts whose deletion grace
period has run out, and accounts never verified within `UNVERIFIED_ACCOUNT_DAYS`
of sign-up. Erasing one appends `user.erased` (the `users` row goes with it),
destroys the user's key (crypto-shredding: the personal data left in the
events cannot be read), and deletes spent links, sign-ins and unsent mail."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import Connection, and_, delete, exists, select

from webapp.accounts import crypto, signins
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.stream import append_to
from webapp.accounts.tables import used_tokens, users
from webapp.accounts.users import get_user
from webapp.core import clock, db
from webapp.eventstore import VersionConflict
from webapp.eventstore.tables import events
from webapp.jobs import job
from webapp.mail import outbox
from webapp.tenants import DEFAULT_TENANT

log = logging.getLogger(__name__)


def erase(
    tenant_id: str,
    user_id: str,
    due_by: datetime | None = None,
    unverified_before: datetime | None = None,
) -> bool:
    """Erase one account: event, read-model row and spent tokens gone, key destroyed.
    With `due_by`, only when a deletion request for it has run out by then; with
    `unverified_before`, only when it was created before then and never verified."""
    with db.transaction() as conn:
        user = get_user(conn, user_id, tenant_id)
        ever_verified = unverified_before is not None and _ever_verified(conn, tenant_id, user_id)
        decision = Account(user).erase(due_by, unverified_before, ever_verified)
        if user is None or isinstance(decision, Refusal):
            return False
        actor = "system:erase-accounts" if unverified_before is None else "system:expire-unverified"
        append_to(conn, user, decision, actor=actor)
        crypto.destroy_key(conn, tenant_id, user_id)
        outbox.erase_user(conn, tenant_id, user_id)  # addresses and links in unsent mail
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
    return _erase_each(tenant_id, due, "erase", due_by=now)


# An address counts as proven once a link sent to it was used: verification,
# a revert of an email change, or a password reset (which verifies).
_PROOF = (ev.EMAIL_VERIFIED, ev.EMAIL_CHANGE_REVERTED)


def _proven(tenant_id: str) -> Any:
    return exists().where(
        events.c.tenant_id == tenant_id,
        events.c.aggregate_type == ev.AGGREGATE,
        events.c.aggregate_id == users.c.id,
        events.c.type.in_(_PROOF),
    )


def _ever_verified(conn: Connection, tenant_id: str, user_id: str) -> bool:
    found = conn.execute(
        select(events.c.position)
        .where(
            events.c.tenant_id == tenant_id,
            events.c.aggregate_type == ev.AGGREGATE,
            events.c.aggregate_id == user_id,
            events.c.type.in_(_PROOF),
        )
        .limit(1)
    ).first()
    return found is not None


def erase_unverified(tenant_id: str, now: datetime, days: int) -> int:
    """Erase accounts whose address was never verified within `days` of sign-up,
    so an address registered by someone else is free again."""
    cutoff = now - timedelta(days=days)
    with db.reading() as conn:
        due = list(
            conn.execute(
                select(users.c.id).where(
                    users.c.tenant_id == tenant_id,
                    users.c.email_verified.is_(False),
                    users.c.created_at <= cutoff,
                    ~_proven(tenant_id),
                )
            ).scalars()
        )
    return _erase_each(tenant_id, due, "expiry", unverified_before=cutoff)


@job("erase-accounts", cron="0 3 * * *", per_tenant=True, concurrency="skip")
def erase_accounts(tenant_id: str | None, tick: datetime) -> None:
    # Erase what is due by now (not by the tick), so a late run is never too early.
    tenant, now = tenant_id or DEFAULT_TENANT, clock.now()
    erased = erase_due(tenant, now)
    expired = erase_unverified(
        tenant, now, current_app.config["APP_CONFIG"].unverified_account_days
    )
    signins.purge_expired(tenant, now)
    if erased or expired:
        db.shred_freed_pages()  # no readable copy left in the database files
    log.info("accounts erased", extra={"tenant": tenant_id, "count": erased, "unverified": expired})


def _erase_each(tenant_id: str, user_ids: list[str], what: str, **why: Any) -> int:
    """Erase each account in its own transaction (`why`: the condition `erase`
    checks again there); one that changed meanwhile is left to the next run."""
    erased = 0
    for user_id in user_ids:
        try:
            erased += erase(tenant_id, user_id, **why)
        except VersionConflict:
            log.info(
                f"{what} skipped: concurrent change; next run retries", extra={"user": user_id}
            )
    return erased
