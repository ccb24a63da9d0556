"""What an identity the provider vouched for does to accounts: sign in to the
account it is linked to, sign up (a new account, its address verified when
the provider verified it, else confirmed by our own mail first), link to the
signed-in account, unlink. Never automatic: an identity whose address is an
existing account's does not sign in to it (the page offers to sign in to
that account and link from its profile).

Linking and unlinking are events on the user's stream (the subject and the
address sealed), decided by the `Account`, with a mail to the account's
address in the same transaction."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from webapp.accounts import addresses, crypto, notices, registration
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.factors.passkey_store import passkeys_of
from webapp.accounts.identities import store
from webapp.accounts.identities.protocol import Claims
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.stream import append, append_to, fresh
from webapp.accounts.users import User, find_by_email, get_user
from webapp.core import db
from webapp.core.identity_providers import ProviderSettings
from webapp.eventstore import NewEvent
from webapp.tenants import DEFAULT_TENANT

LINKED_MAIL = "identity-linked"  # outbox kinds
UNLINKED_MAIL = "identity-unlinked"

TAKEN = "identities.errors.taken"  # linked to another account
KNOWN = "identities.errors.known"  # linked to this account already
GONE = "identities.errors.gone"


@dataclass(frozen=True)
class Outcome:
    """What a sign-in through a provider leads to."""

    kind: str  # SIGN_IN, SIGNED_UP, EXISTS, ASK_ADDRESS, UNVERIFIED, REFUSED
    user: User | None = None
    email: str | None = None
    key: str | None = None  # REFUSED: why


SIGN_IN, SIGNED_UP, EXISTS, ASK_ADDRESS, UNVERIFIED, REFUSED = (
    "sign-in", "signed-up", "exists", "ask-address", "unverified", "refused",
)  # fmt: skip


def _linked(p: ProviderSettings, claims: Claims, email: str | None) -> NewEvent:
    return NewEvent(
        ev.IDENTITY_LINKED,
        {
            "identity_id": str(uuid.uuid4()),
            "provider": p.name,
            "subject": claims.subject,
            "email": email,
        },
    )


def sign_in(p: ProviderSettings, claims: Claims) -> Outcome:
    """The account linked to this identity, or what to do instead."""
    with db.transaction() as conn:
        linked = store.by_subject(conn, DEFAULT_TENANT, p.name, claims.subject)
        if linked is not None:
            user = get_user(conn, linked.user_id, linked.tenant_id)
            if user is None:
                return Outcome(REFUSED, key="auth.login.failed")
            refused = Account(user).sign_in()
            if refused:
                return Outcome(REFUSED, key=refused.key)
            # Made through a provider without a verified address: our mail first.
            if not user.email_verified and not user.password_hash:
                return Outcome(UNVERIFIED, user, user.email)
            store.record_use(conn, linked)
            return Outcome(SIGN_IN, user)
    # The same address rules as registration (look-alike characters refused).
    checked = addresses.check(claims.email) if claims.email else None
    email = checked.address if checked and not checked.error else None
    if email is None or not claims.email_verified:
        return Outcome(ASK_ADDRESS, email=email)
    with db.reading() as conn:
        if find_by_email(conn, email) is not None:
            return Outcome(EXISTS, email=email)  # never signs in to it: link from its profile
    return sign_up(p, claims, email, verified=True)


def sign_up(
    p: ProviderSettings, claims: Claims, email: str, verified: bool, language: str | None = None
) -> Outcome:
    """A new account with this identity linked and no password. `verified`:
    the provider verified `email`; else our verification mail goes to it and
    the account signs in only once it is confirmed. A taken address (a race,
    or typed) tells its owner by mail and answers as if it was sent."""
    user_id = str(uuid.uuid4())
    decision = Account(None).register(email, "", secrets.token_urlsafe(24), language)
    assert not isinstance(decision, Refusal)
    changes = (*decision, _linked(p, claims, claims.email))
    if verified:
        changes += (
            NewEvent(ev.EMAIL_VERIFIED, {"email": email, "user_id": user_id, "address_version": 1}),
        )
    try:
        with db.transaction() as conn:
            existing = find_by_email(conn, email)
            if existing is not None:
                if verified:
                    return Outcome(EXISTS, email=email)
                registration.record_registration_attempt(conn, DEFAULT_TENANT, existing.id)
                return Outcome(UNVERIFIED, email=email)
            if store.by_subject(conn, DEFAULT_TENANT, p.name, claims.subject) is not None:
                return Outcome(REFUSED, key=TAKEN)
            crypto.create_key(conn, DEFAULT_TENANT, user_id)
            append(conn, DEFAULT_TENANT, user_id, 0, changes, actor="anonymous")
            if not verified:
                registration.record_verification(conn, DEFAULT_TENANT, user_id)
            user = get_user(conn, user_id)
    except IntegrityError:  # a concurrent sign-up with this address or identity
        return Outcome(REFUSED, key="identities.errors.retry")
    return Outcome(SIGNED_UP if verified else UNVERIFIED, user, email)


def link(user: User, p: ProviderSettings, claims: Claims) -> Result:
    """Connect this identity to the signed-in account (after a fresh proof)."""

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            known = store.by_subject(conn, row.tenant_id, p.name, claims.subject)
            if known is not None:
                return Result.error(KNOWN if known.user_id == row.id else TAKEN, label=p.label)
            decision = Account(row).link_identity(_linked(p, claims, claims.email).payload)
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
            _mail(conn, row, LINKED_MAIL, "mail.identityLinked", p.label)
        return Result(True, "identities.linked", {"label": p.label})

    try:
        return retry_on_conflict(attempt)
    except IntegrityError:
        return Result.error(TAKEN, label=p.label)


def is_linked(user: User, p: ProviderSettings, claims: Claims) -> bool:
    """Whether this identity is one of `user`'s (a proof of identity)."""
    with db.reading() as conn:
        found = store.by_subject(conn, user.tenant_id, p.name, claims.subject)
    return found is not None and found.user_id == user.id


def other_ways(conn: Connection, user: User, identity_id: str) -> int:
    """How many ways to sign in the account keeps without this identity."""
    others = [i for i in store.identities_of(conn, user.tenant_id, user.id) if i.id != identity_id]
    return len(others) + len(passkeys_of(conn, user)) + (1 if user.password_hash else 0)


def unlink(user: User, identity_id: str, labels: dict[str, str]) -> Result:
    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            found = next(
                (
                    i
                    for i in store.identities_of(conn, row.tenant_id, row.id)
                    if i.id == identity_id
                ),
                None,
            )
            if found is None:
                return Result.error(GONE)
            label = labels.get(found.provider, found.provider)
            decision = Account(row).unlink_identity(
                found.id, found.provider, other_ways(conn, row, found.id)
            )
            if isinstance(decision, Refusal):
                return Result.error(decision.key, label=label)
            append_to(conn, row, decision)
            _mail(conn, row, UNLINKED_MAIL, "mail.identityUnlinked", label)
        return Result(True, "identities.unlinked", {"label": label})

    return retry_on_conflict(attempt)


def _mail(conn: Connection, user: User, kind: str, keys: str, label: str) -> None:
    notices.record(
        conn, notices.user_of(conn, user.tenant_id, user.id), kind, keys, "/profile", label=label
    )
