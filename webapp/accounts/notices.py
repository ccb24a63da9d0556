"""Account mail: composed in the user's language and recorded in the mail
outbox in the transaction of the change that causes it (webapp/mail/outbox
delivers it: retried with backoff, never lost). Each capability module holds
its own mails and calls `record`; the account decides what may go out while
processing is restricted (`Account.accepts_mail`).

Every mail reads the user as the change's transaction sees them (after the
change's event), so the mail says what the change did.
"""

from __future__ import annotations

from datetime import timedelta

from flask import current_app
from flask_babel import force_locale, gettext
from sqlalchemy import Connection

from webapp.accounts.account import Account
from webapp.accounts.i18n import duration
from webapp.accounts.users import User, get_user
from webapp.core import clock
from webapp.mail import outbox

# Mails anyone can make us send to an address (resend, a sign-up with a taken
# address, the signed-out deletion link): at most this many per hour per
# account, and one per cooldown.
PER_HOUR = 3
COOLDOWN = timedelta(seconds=60)


def base_url() -> str:
    return str(current_app.config["APP_CONFIG"].base_url)


def user_of(conn: Connection, tenant_id: str, user_id: str) -> User:
    user = get_user(conn, user_id, tenant_id)
    if user is None:
        raise LookupError("no such user")
    return user


def record(
    conn: Connection,
    user: User,
    kind: str,
    keys: str,
    path: str | None = None,
    *,
    to: str | None = None,
    dedupe_key: str | None = None,
    body: str | None = None,
    **params: object,
) -> int | None:
    """Record one mail of `kind` (its outbox kind) to `to` (default: the user's
    address): subject `<keys>.subject`, body `<keys>.body` (or `body`), with the
    link to `path` on this site; a timedelta in `params` is stated in words in
    the user's language (`i18n.duration`). None when nothing was recorded
    (restricted, or `dedupe_key` seen before)."""
    if not Account(user).accepts_mail(kind):
        return None
    if path is not None:
        params["link"] = base_url() + path
    with force_locale(user.language or "en"):
        params = {k: duration(v) if isinstance(v, timedelta) else v for k, v in params.items()}
        subject = gettext(f"{keys}.subject")
        text = gettext(body or f"{keys}.body", **params)  # type: ignore[arg-type]
    return outbox.record(
        conn,
        outbox.Mail(to or user.email, subject, text),
        tenant_id=user.tenant_id,
        user_id=user.id,
        kind=kind,
        dedupe_key=dedupe_key,
    )


def limit_reached(
    conn: Connection, user: User, kind: str, cooldown_after: tuple[str, ...] = ()
) -> str | None:
    """ "cooldown" or "hourly" when one more mail of `kind` would be too many:
    `PER_HOUR` of `kind` an hour, and none within `COOLDOWN` of the latest mail
    of `kind` or of `cooldown_after`."""
    now = clock.now()
    hour_ago = now - timedelta(hours=1)
    count, latest = outbox.recent(conn, user.tenant_id, user.id, (kind,), hour_ago)
    _, latest_other = outbox.recent(conn, user.tenant_id, user.id, cooldown_after, hour_ago)
    if any(t is not None and now - t < COOLDOWN for t in (latest, latest_other)):
        return "cooldown"
    if count >= PER_HOUR:
        return "hourly"
    return None
