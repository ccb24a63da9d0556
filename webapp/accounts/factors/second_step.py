"""The sign-in's second step: after the right password, an account with a
second factor is not signed in yet. This browser's session holds the pending
sign-in (whose, with which session token, since when, "Remember me", where
to go next) for at most `PENDING_SECONDS`; a password change or any other
rotation of the session token in between voids it. The code, a passkey or a
recovery code completes it: only then does the session get a user.

`complete` is the one end of every sign-in (the password alone, after the
second step, a passkey without a password): a fresh session with its
server-side row (Your devices, the new-device alert), the proof of identity
just given, the metric, and where to go next."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from flask import Response, redirect, session, url_for

from webapp.accounts import reauth, signins
from webapp.accounts.factors import store
from webapp.accounts.factors.tables import TOTP
from webapp.accounts.session import sign_in
from webapp.accounts.users import User, get_user
from webapp.core import clock, db
from webapp.metrics.instruments import SIGNINS

SESSION_KEY = "second_step"
PENDING_SECONDS = 300


@dataclass(frozen=True)
class Pending:
    user: User
    remember: bool
    next_url: str | None


def needed(user: User) -> bool:
    with db.reading() as conn:
        return store.has_second_factor(conn, user.tenant_id, user.id)


def kinds(user: User) -> set[str]:
    """The kinds of second factor the account has (the ways it is offered)."""
    with db.reading() as conn:
        return {f.kind for f in store.factors_of(conn, user)}


def begin(user: User, remember: bool, next_url: str | None) -> Response:
    """The password was right: ask for the code next, or the passkey when the
    account has no app (a fresh session, as at sign-in, so nothing planted
    before survives)."""
    session.clear()
    session[SESSION_KEY] = {
        "user": user.id,
        "tenant": user.tenant_id,
        "token": user.session_token,
        "at": clock.now().timestamp(),
        "remember": remember,
        "next": next_url,
    }
    first = "factors.code" if TOTP in kinds(user) else "passkeys.second_step"
    return redirect(url_for(first))  # type: ignore[return-value]


def pending() -> Pending | None:
    """The sign-in waiting for its second step in this browser, if it is still
    good: recent, same session token, and the account may still sign in."""
    info = session.get(SESSION_KEY)
    if not isinstance(info, dict):
        return None
    age = clock.now().timestamp() - float(info.get("at") or 0)
    if not 0 <= age <= PENDING_SECONDS:
        return None
    with db.reading() as conn:
        user = get_user(conn, str(info.get("user")), str(info.get("tenant")))
    if user is None or not secrets.compare_digest(user.session_token, str(info.get("token"))):
        return None
    if signins.refusal(user) is not None:
        return None
    return Pending(user, bool(info.get("remember")), info.get("next"))


def expired() -> bool:
    """A second step was begun here, and is no longer good."""
    return SESSION_KEY in session and pending() is None


def complete(user: User, remember: bool, next_url: str | None) -> Response:
    """Sign `user` in here (their sign-in rules were checked by the caller)."""
    sign_in(user, remember=remember)  # a fresh session: the pending step goes too
    reauth.record_proof()  # the password, a code or a passkey, just given
    SIGNINS.labels("succeeded").inc()
    return redirect(next_url or url_for("profile.show"))  # type: ignore[return-value]


def finish(p: Pending) -> Response:
    """The second factor was right: sign in."""
    return complete(p.user, p.remember, p.next_url)
