"""Change email, from the profile's form to the revert link.

1. `change_email`: the current password and a new address; the address becomes
   unverified, the verification mail goes to the new one (registration.py) and
   a notice with the revert link to the old one, all in the change's transaction.
2. The old address's revert link (valid 7 days, single use) names the change's
   event: `check_revert` (GET, changes nothing) and `revert_email_change` (the
   page's button) restore the old address, verified, end every session, and
   offer a new password at once (a fresh reset link, reset.py).

The rules are the account's (account.py: `change_email`, `revert_email_change`);
the `users` columns they change are `ROW_CHANGES` below.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from webapp.accounts import addresses, crypto, notices, reset, signed_links, signins
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.credentials import check_password, config
from webapp.accounts.registration import record_verification
from webapp.accounts.result import INVALID_CREDENTIALS, Result, retry_on_conflict
from webapp.accounts.stream import RowChange, append_to, fresh, unsealed
from webapp.accounts.users import User, find_by_email, get_user, stream_of
from webapp.core import db
from webapp.eventstore import Event, read_stream

EMAIL_CHANGED = "email-changed-notice"  # outbox kind of the mail to the old address
REVERT_ACTOR = "email-revert-link"


def change_email(user: User, new_raw: str, password: str) -> Result:
    if not check_password(user, password):
        return Result.error(INVALID_CREDENTIALS, "current_password")
    checked = addresses.check(new_raw)
    if checked.error:
        return Result.error(checked.error, "new_email")
    email = checked.address
    early = Account(user).change_email(email, taken=False)
    if isinstance(early, Refusal):
        return Result.refused(early)

    def attempt() -> Result:
        try:
            with db.transaction() as conn:
                row = fresh(conn, user)
                taken = find_by_email(conn, email) is not None
                decision = Account(row).change_email(email, taken)
                if isinstance(decision, Refusal):
                    return Result.refused(decision)
                (changed,) = append_to(conn, row, decision)
                record_verification(conn, row.tenant_id, row.id)
                # The old address hears about it, with a link that undoes the change.
                record_email_changed_notice(conn, row.tenant_id, row.id, changed.version)
        except IntegrityError:
            return Result.error("user.errors.emailAlreadyExists", "new_email")
        return Result(True, "profile.email.success")

    return retry_on_conflict(attempt)


# --- the revert link -------------------------------------------------------------
def revert_token(user_id: str, version: int) -> str:
    return signed_links.make(
        config().secret_key, signed_links.REVERT_EMAIL, {"u": user_id, "v": version}
    )


def _change_at(conn: Connection, tenant_id: str, user_id: str, version: int) -> Event | None:
    """The email change at `version` of the user's stream, if that is one."""
    found = next(
        (
            e
            for e in read_stream(conn, stream_of(tenant_id, user_id), version - 1)
            if e.version == version
        ),  # fmt: skip
        None,
    )
    return found if found is not None and found.type == ev.EMAIL_CHANGED else None


def _previous(conn: Connection, change: Event) -> str:
    return crypto.unseal_for(
        conn, change.tenant_id, change.aggregate_id, change.payload["previous_email"]
    )


def _revert(conn: Connection, token: str, session_token: str = "") -> tuple[User, str, Any]:
    """The link's user, the address to restore and the account's decision;
    `TokenError` when the link is void."""
    data = signed_links.load(config().secret_key, signed_links.REVERT_EMAIL, token)
    user = get_user(conn, str(data.get("u", "")))
    if signed_links.is_spent(conn, token):
        raise signed_links.TokenError("used")
    if user is None or not isinstance(data.get("v"), int):
        raise signed_links.TokenError("invalid")
    change = _change_at(conn, user.tenant_id, user.id, data["v"])
    if change is None:
        raise signed_links.TokenError("invalid")
    previous = _previous(conn, change)
    taken = find_by_email(conn, previous)
    decision = Account(user).revert_email_change(
        previous, change.version, session_token, taken is not None and taken.id != user.id
    )
    if isinstance(decision, Refusal) and decision.key.startswith("verify.errors."):
        raise signed_links.TokenError(decision.key.rsplit(".", 1)[-1])
    return user, previous, decision


def check_revert(token: str) -> Result:
    try:
        with db.reading() as conn:
            _user, previous, _decision = _revert(conn, token)
    except signed_links.TokenError as e:
        return Result.error(f"verify.errors.{e.reason}")
    return Result(True, "revert.confirm", {"email": previous})


def revert_email_change(token: str) -> Result:
    """Restore the address from before the change, verified (the link proved it),
    and end every session: whoever made the change is signed out."""

    def attempt() -> Result:
        with db.transaction() as conn:
            user, previous, decision = _revert(conn, token, secrets.token_urlsafe(24))
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            signed_links.spend(conn, token, user.tenant_id, user.id)
            append_to(conn, user, decision, actor=REVERT_ACTOR)
            signins.end_all(conn, user.tenant_id, user.id)
            # Whoever changed the address may also have changed the password:
            # the page offers a new one at once, with a fresh reset link.
            reset_token = reset.issue(conn, fresh(conn, user), actor=REVERT_ACTOR)
        return Result(True, "revert.success", {"email": previous, "reset_token": reset_token})

    try:
        return retry_on_conflict(attempt)
    except signed_links.TokenError as e:
        return Result.error(f"verify.errors.{e.reason}")


# --- the mail to the old address ----------------------------------------------------
def record_email_changed_notice(
    conn: Connection, tenant_id: str, user_id: str, version: int
) -> None:
    """To the address from before the change at `version`, with the revert link."""
    user = notices.user_of(conn, tenant_id, user_id)
    change = _change_at(conn, tenant_id, user_id, version)
    if change is None:
        raise LookupError("no email change at that version")
    notices.record(
        conn,
        user,
        EMAIL_CHANGED,
        "mail.emailChanged",
        f"/email-change/revert/{revert_token(user.id, version)}",
        to=_previous(conn, change),
        duration=signed_links.LIFETIMES[signed_links.REVERT_EMAIL],
    )


# --- the `users` row (written by projection.py) -------------------------------------
def _reverted_row(conn: Connection, e: Event) -> dict[str, Any]:
    return {
        "email": unsealed(conn, e, "email"),
        "email_verified": True,
        "session_token": unsealed(conn, e, "session_token"),
    }


ROW_CHANGES: dict[str, RowChange] = {
    ev.EMAIL_CHANGED: lambda conn, e: {
        "email": unsealed(conn, e, "email"),
        "email_verified": False,
    },
    ev.EMAIL_CHANGE_REVERTED: _reverted_row,
}
