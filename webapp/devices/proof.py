"""The one hook point where signing out devices asks for a fresh proof of the
user's identity (issue 21, point 3).

Until the generic re-authentication check exists, the proof is the current
password typed into the Your devices form. When it lands, `require_fresh_proof`
answers success for a session with a proof younger than `REAUTH_SECONDS`
(and the form stops showing the password field when `needs_password` is
False); nothing else in webapp/devices changes."""

from __future__ import annotations

from webapp.accounts.credentials import check_password
from webapp.accounts.result import INVALID_CREDENTIALS, Result
from webapp.accounts.users import User

PROVEN = Result(True, "")


def needs_password(user: User) -> bool:
    """Whether the form must ask for the current password (always, for now)."""
    return True


def require_fresh_proof(user: User, password: str | None) -> Result:
    """Success when `user` proved who they are just now; else the error for the
    form's current-password field (counted by `sections.password_checked`)."""
    if password and check_password(user, password):
        return PROVEN
    return Result.error(INVALID_CREDENTIALS, "current_password")
