"""The passkey commands: the options for adding one and adding it (named by
its owner; the account's first second factor brings 10 recovery codes, as the
app's set-up does), removing one, and checking a passkey's answer: to sign in
without a password, as the second step after it, or to confirm it's you.

Every answer is checked against a challenge this session asked for
(challenges.py) and the relying party of BASE_URL (passkeys.py). Adding and
removing are events on the user's stream, decided by the `Account` (refused
while the account is restricted); a sign-in's new sign count is bookkeeping.
Freshness of the user's proof is the views' business, as for the app."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.factors import challenges, passkeys, store
from webapp.accounts.factors.commands import cfg, codes_event
from webapp.accounts.factors.passkey_store import by_credential, passkeys_of, record_use
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.stream import append_to, fresh
from webapp.accounts.users import User, get_user
from webapp.core import db
from webapp.eventstore import NewEvent
from webapp.tenants import DEFAULT_TENANT

NAME_MAX = 64
EXPIRED = "passkeys.errors.expired"  # no such challenge here: expired, spent, another session's
FAILED = "passkeys.errors.failed"  # the answer does not verify
UNKNOWN = "passkeys.errors.unknown"  # no passkey of this account (or of anyone) has this id
KNOWN = "passkeys.errors.known"  # this passkey is registered already
GONE = "passkeys.errors.gone"
CANCELLED = "passkeys.errors.cancelled"  # the browser gave no answer (cancelled, timed out)
ADDRESS = "passkeys.errors.address"  # the page was not opened at BASE_URL (by an IP address)
IP_SITE = "passkeys.errors.ipSite"  # BASE_URL's host is an IP address: no browser allows it


def _rp() -> passkeys.RelyingParty:
    return passkeys.RelyingParty.of(cfg().base_url)


def unanswered(client_error: str | None) -> tuple[str, dict[str, str]]:
    """Why the browser gave no answer, from its error's name (static/passkeys.js
    posts it), as an i18n key and its parameters. A SecurityError is the
    address: the page's host is an IP address, or is not BASE_URL's host (the
    RP ID); told as "cancelled", it sent people to try again, in vain."""
    if client_error == "SecurityError":
        if _rp().on_ip_address:
            return IP_SITE, {}
        return ADDRESS, {"url": cfg().base_url}
    return CANCELLED, {}


def registration_options(user: User) -> str:
    with db.reading() as conn:
        existing = passkeys_of(conn, user)
    handle = existing[0].user_handle if existing else passkeys.new_user_handle()
    challenge = challenges.issue(challenges.REGISTER, user.tenant_id, user.id, handle)
    return passkeys.registration_options(
        _rp(), challenge, handle, user.email, [p.credential_id for p in existing]
    )


def _read(response: str) -> passkeys.Answer | None:
    try:
        return passkeys.read(response)
    except passkeys.Invalid:
        return None


def add(user: User, name: str, response: str) -> Result:
    """Verify the authenticator's answer to `registration_options` and add the
    passkey; the answer carries the recovery codes when they were made
    (`params["codes"]`, shown once)."""
    answer = _read(response)
    if answer is None:
        return Result.error(FAILED)
    spent = challenges.spend(answer.challenge, challenges.REGISTER)
    if spent is None or spent.user_id != user.id or spent.tenant_id != user.tenant_id:
        return Result.error(EXPIRED)
    try:
        new = passkeys.verify_registration(_rp(), answer)
    except passkeys.Invalid:
        return Result.error(FAILED)
    with db.reading() as conn:
        first = not store.has_second_factor(conn, user.tenant_id, user.id)
    codes_made = codes_event(cfg()) if first else None  # hashed outside the transaction
    payload: dict[str, Any] = {
        "name": name,
        "credential_id": new.credential_id,
        "public_key": new.public_key,
        "sign_count": new.sign_count,
        "transports": new.transports,
        "user_handle": spent.user_handle,
    }

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            if by_credential(conn, new.credential_id) is not None:
                return Result.error(KNOWN)
            added = NewEvent(ev.PASSKEY_ADDED, {"factor_id": str(uuid.uuid4()), **payload})
            with_codes = codes_made is not None and not store.has_second_factor(
                conn, row.tenant_id, row.id
            )
            changes = (added, codes_made[0]) if with_codes and codes_made else (added,)
            decision = Account(row).change_factors(changes)
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
        codes = codes_made[1] if with_codes and codes_made else None
        return Result(True, "passkeys.added", {"name": name, "codes": codes})

    return retry_on_conflict(attempt)


def remove(user: User, factor_id: str) -> Result:
    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            found = next((p for p in passkeys_of(conn, row) if p.id == factor_id), None)
            if found is None:
                return Result.error(GONE)
            removed = NewEvent(ev.PASSKEY_REMOVED, {"factor_id": found.id})
            decision = Account(row).change_factors((removed,))
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
        return Result(True, "passkeys.removed", {"name": found.name})

    return retry_on_conflict(attempt)


def authentication_options(purpose: str, user: User | None = None) -> str:
    """Options for `get()`: any passkey of this site for the passwordless
    sign-in (user verification required), else the account's own passkeys."""
    if user is None:  # SIGN_IN, or AUTOFILL: its own challenge, so the button's never races it
        challenge = challenges.issue(purpose, DEFAULT_TENANT)
        return passkeys.authentication_options(_rp(), challenge, None, verify_user=True)
    with db.reading() as conn:
        allowed = [p.credential_id for p in passkeys_of(conn, user)]
    challenge = challenges.issue(purpose, user.tenant_id, user.id)
    return passkeys.authentication_options(_rp(), challenge, allowed, verify_user=False)


@dataclass(frozen=True)
class Checked:
    user: User | None  # the passkey's owner, when the answer is right
    error: str | None = None


def check(purpose: str, response: str, user: User | None = None) -> Checked:
    """Whether `response` answers this session's challenge for `purpose` with
    a passkey (of `user`, when given) whose signature and sign count hold."""
    answer = _read(response)
    if answer is None:
        return Checked(None, FAILED)
    spent = challenges.spend(answer.challenge, purpose)
    if spent is None or (user is not None and spent.user_id != user.id):
        return Checked(None, EXPIRED)
    with db.reading() as conn:
        found = by_credential(conn, answer.credential_id)
    if (
        found is None
        or found.tenant_id != spent.tenant_id
        or (user is not None and found.user_id != user.id)
    ):
        return Checked(None, UNKNOWN)
    passwordless = purpose in challenges.PASSWORDLESS
    # A discoverable passkey names its account: it must be the one its id says.
    if (passwordless and answer.user_handle is None) or (
        answer.user_handle is not None and answer.user_handle != found.user_handle
    ):
        return Checked(None, FAILED)
    try:
        count = passkeys.verify_authentication(
            _rp(), answer, found.public_key, found.sign_count, verify_user=passwordless
        )
    except passkeys.Invalid:
        return Checked(None, FAILED)
    with db.transaction() as conn:
        if not record_use(conn, found, count):
            return Checked(None, FAILED)
        owner = get_user(conn, found.user_id, found.tenant_id)
    return Checked(owner, None if owner else UNKNOWN)
