"""Re-authentication freshness: actions without a password field of their
own (adding or removing a factor, showing or replacing recovery codes, and
later signing out devices) need a proof of the user's identity within the
last `REAUTH_SECONDS` (default 300).

A proof is the password or a second-factor code: the sign-in itself, or the
"Confirm it's you" form a section shows when the proof is stale. Its time is
kept in this browser's session (signed, cleared at every sign-in), so it
proves this browser only; the injected clock decides what is recent."""

from __future__ import annotations

from flask import current_app, session

from webapp.core import clock

SESSION_KEY = "proved_at"


def seconds() -> int:
    return int(current_app.config["APP_CONFIG"].reauth_seconds)


def record_proof() -> None:
    """The user just gave their password or a second-factor code here."""
    session[SESSION_KEY] = clock.now().timestamp()


def is_fresh() -> bool:
    proved = session.get(SESSION_KEY)
    if not isinstance(proved, int | float):
        return False
    age = clock.now().timestamp() - proved
    return 0 <= age <= seconds()
