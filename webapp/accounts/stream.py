"""The user's stream: reading the account in a command's transaction and
appending what its transition decided, sealed as events.py declares.

`append` is the one way events reach a user stream (accounts, privacy and the
console alike): it seals the declared fields with the user's key and returns
the stored events (their versions name them, e.g. in a revert link).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from webapp.accounts import crypto
from webapp.accounts.account import Account, Decision, Refusal
from webapp.accounts.events import DECLARED
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.users import User, get_user, stream_of
from webapp.core import db
from webapp.eventstore import Event, Metadata, NewEvent
from webapp.eventstore import append as append_events


def fresh(conn: Connection, user: User) -> User:
    """The user's row as this transaction sees it."""
    row = get_user(conn, user.id, user.tenant_id)
    if row is None:
        raise LookupError("user is gone")
    return row


def account(conn: Connection, user_id: str, tenant_id: str) -> Account:
    return Account(get_user(conn, user_id, tenant_id))


def _sealed(conn: Connection, tenant_id: str, user_id: str, event: NewEvent) -> NewEvent:
    declared = DECLARED.get(event.type)
    if declared is None:
        raise ValueError(f"{event.type!r} is not a declared user-stream event (events.py)")
    unknown = set(event.payload) - set(declared.fields)
    if unknown:
        raise ValueError(f"{event.type!r} has undeclared fields {sorted(unknown)}")
    payload = {
        name: crypto.seal_for(conn, tenant_id, user_id, value)
        if name in declared.sealed and value is not None
        else value
        for name, value in event.payload.items()
    }
    return NewEvent(event.type, payload)


def append(
    conn: Connection,
    tenant_id: str,
    user_id: str,
    version: int,
    changes: tuple[NewEvent, ...],
    actor: str | None = None,
) -> list[Event]:
    """Append `changes` (a transition's events) at `version`; the stored events."""
    if not changes:
        return []
    sealed = [_sealed(conn, tenant_id, user_id, e) for e in changes]
    meta = Metadata(actor=actor or f"user:{user_id}")
    return append_events(conn, stream_of(tenant_id, user_id), sealed, version, meta)


def append_to(
    conn: Connection, user: User, changes: tuple[NewEvent, ...], actor: str | None = None
) -> list[Event]:
    """`append` for an existing account's row as this transaction read it."""
    return append(conn, user.tenant_id, user.id, user.version, changes, actor)


def change(
    user: User,
    decide: Callable[[Account], Decision],
    success: Result,
    then: Callable[[Connection, User], None] | None = None,
) -> Result:
    """The usual command of a signed-in user: in one transaction (run once more
    on a concurrent change) read the account, ask its transition, append what
    it decided and do `then` (sessions, mails) with the row as read; answer
    `success`, or the transition's refusal."""

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            decision = decide(Account(row))
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
            if then is not None:
                then(conn, row)
        return success

    return retry_on_conflict(attempt)


# What an event changes in its account's `users` row: the columns and their
# values (projection.py, the table's one writer, adds the version). Each
# capability module lists its own as `ROW_CHANGES`.
RowChange = Callable[[Connection, Event], dict[str, Any]]


def unsealed(conn: Connection, e: Event, name: str) -> str:
    """A sealed payload field of `e`, opened with its user's key."""
    return crypto.unseal_for(conn, e.tenant_id, e.aggregate_id, e.payload[name])
