"""The one place where signing out devices asks for a fresh proof of the
user's identity (issue 21, point 3): a proof younger than `REAUTH_SECONDS`
in this browser (`accounts.reauth`: the sign-in itself, or "Confirm it's
you") is enough; else the Your devices form asks for the current password,
which then counts as a new proof."""

from __future__ import annotations

from webapp.accounts import reauth
from webapp.accounts.credentials import check_password
from webapp.accounts.result import INVALID_CREDENTIALS, Result
from webapp.accounts.users import User

PROVEN = Result(True, "")


def needs_password(user: User) -> bool:
    """Whether the form must ask for the current password: the proof is stale."""
    return not reauth.is_fresh()


def require_fresh_proof(user: User, password: str | None) -> Result:
    """Success when `user` proved who they are recently, or does now with the
    password; else the error for the form's current-password field (counted by
    `sections.password_checked`)."""
    if reauth.is_fresh():
        return PROVEN
    if password and check_password(user, password):
        reauth.record_proof()
        return PROVEN
    return Result.error(INVALID_CREDENTIALS, "current_password")
