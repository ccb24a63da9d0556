"""The factor commands: set up the authenticator app (confirmed by one code,
then 10 recovery codes), turn it off (password and a code), new recovery
codes, and checking a code or a recovery code (sign-in, re-authentication).

Each change is an event on the user's stream, decided by the `Account`
(refused while the account is restricted); the secret and the code hashes
travel sealed (events.py). Freshness of the user's proof is the views'
business (accounts/reauth.py): these commands trust their caller for it."""

from __future__ import annotations

import uuid

from flask import current_app
from sqlalchemy import Connection

from webapp.accounts import crypto
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.credentials import check_password
from webapp.accounts.factors import recovery, store, totp
from webapp.accounts.result import INVALID_CREDENTIALS, Result, retry_on_conflict
from webapp.accounts.stream import append_to, fresh
from webapp.accounts.users import User
from webapp.core import clock, db
from webapp.core.config import Config
from webapp.eventstore import NewEvent

TOTP_NAME = "Authenticator app"  # shown translated by kind; kept for the export
WRONG_CODE = "factors.errors.wrongCode"
WRONG_RECOVERY = "factors.errors.wrongRecoveryCode"


def cfg() -> Config:
    cfg: Config = current_app.config["APP_CONFIG"]
    return cfg


def _issuer() -> str:
    host = cfg().base_url.split("://", 1)[-1].split("/", 1)[0]
    return host or "webapp"


def begin_setup(user: User) -> Result:
    """A new secret for the app, kept sealed until a code confirms it."""
    with db.transaction() as conn:
        row = fresh(conn, user)
        refused = Account(row).change_factors(())
        if isinstance(refused, Refusal):
            return Result.refused(refused)
        if store.totp_of(conn, row) is not None:
            return Result.error("factors.totp.alreadyOn")
        sealed = crypto.seal_for(conn, row.tenant_id, row.id, totp.new_secret())
        store.start_setup(conn, row, sealed, TOTP_NAME)
    return Result(True, "factors.totp.scan")


def setup_secret(conn: Connection, user: User) -> str | None:
    """The secret of the set-up in progress, opened (to show it), or None."""
    pending = store.pending_totp(conn, user)
    if pending is None:
        return None
    return crypto.unseal_for(conn, user.tenant_id, user.id, pending.secret)


def setup_qr(user: User, secret: str) -> str:
    return totp.qr_svg_data_uri(totp.uri(secret, user.email, _issuer()))


def codes_event(ph_cfg: Config) -> tuple[NewEvent, list[str]]:
    codes = recovery.new_codes()
    ph = recovery.hasher(ph_cfg)
    hashes = " ".join(recovery.hash_code(ph, c) for c in codes)
    payload = {"batch": str(uuid.uuid4()), "hashes": hashes}
    return NewEvent(ev.RECOVERY_CODES_GENERATED, payload), codes


def confirm_setup(user: User, code: str) -> Result:
    """One code from the app confirms the set-up; the answer carries the
    recovery codes (`params["codes"]`), shown once."""
    codes_made, codes = codes_event(cfg())  # hashed outside the transaction

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            pending = store.pending_totp(conn, row)
            if pending is None:
                return Result.error("factors.totp.noSetup")
            secret = crypto.unseal_for(conn, row.tenant_id, row.id, pending.secret)
            step = totp.matching_step(secret, code, clock.now(), None)
            if step is None:
                return Result.error(WRONG_CODE, "code")
            added = NewEvent(
                ev.TOTP_ADDED, {"factor_id": pending.id, "name": pending.name, "secret": secret}
            )
            decision = Account(row).change_factors((added, codes_made))
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
            store.accept_step(conn, pending.id, step)  # this code cannot sign in again
        return Result(True, "factors.totp.added", {"codes": codes})

    return retry_on_conflict(attempt)


def new_codes(user: User) -> Result:
    """*Generate new codes*: the old ones stop working at once."""
    codes_made, codes = codes_event(cfg())

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            if not store.has_second_factor(conn, row.tenant_id, row.id):
                return Result.error("factors.codes.noFactor")
            decision = Account(row).change_factors((codes_made,))
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
        return Result(True, "factors.codes.generated", {"codes": codes})

    return retry_on_conflict(attempt)


def check_code(user: User, code: str) -> bool:
    """Whether `code` is the app's code now and not used before (its
    time-step is recorded, so the same code is refused the next time)."""
    with db.transaction() as conn:
        factor = store.totp_of(conn, user)
        if factor is None:
            return False
        secret = crypto.unseal_for(conn, user.tenant_id, user.id, factor.secret)
        step = totp.matching_step(secret, code, clock.now(), factor.last_step)
        return step is not None and store.accept_step(conn, factor.id, step)


def use_recovery_code(user: User, raw: str) -> bool:
    """Spend one unused recovery code (an event: it shows in the activity).
    Two requests with the same code meet at the stream's version: one wins."""
    code = recovery.normalized(raw)
    if code is None:
        return False
    ph = recovery.hasher(cfg())

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            found = next(
                (
                    c
                    for c in store.unused_codes(conn, row)
                    if recovery.matches(ph, c.code_hash, code)
                ),
                None,
            )
            if found is None:
                return Result.error(WRONG_RECOVERY)
            decision = Account(row).use_recovery_code(found.batch, found.number)
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
        return Result(True, "")

    return retry_on_conflict(attempt).ok


def turn_off(user: User, password: str, code: str) -> Result:
    """Needs the password and a code (or a recovery code) of this account."""
    if not check_password(user, password):
        return Result.error(INVALID_CREDENTIALS, "current_password")
    if not (check_code(user, code) or use_recovery_code(user, code)):
        return Result.error(WRONG_CODE, "code")

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            factor = store.totp_of(conn, row)
            if factor is None:
                return Result.error("factors.totp.alreadyOff")
            removed = NewEvent(ev.TOTP_REMOVED, {"factor_id": factor.id})
            decision = Account(row).change_factors((removed,))
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
        return Result(True, "factors.totp.removed")

    return retry_on_conflict(attempt)
