"""At each sign-in (in its transaction, `signins.on_start`): note what the
device list shows of this browser, recognise it by its device cookie, and when
the account has never used it, record "Signed in on a new device" and mail
"New sign-in to your account" through the outbox (so the mail survives an
outage and commits with the sign-in, or not at all).

The account's first sign-in ever (the one after registration, or the first
after this feature was installed) makes its browser known and sends nothing.
While processing is restricted nobody can sign in, and the outbox takes no
alert for the account either (`Account.accepts_mail`)."""

from __future__ import annotations

from datetime import UTC, datetime

from babel.dates import format_datetime
from flask_babel import force_locale, gettext
from sqlalchemy import Connection, update

from webapp.accounts import notices
from webapp.accounts.account import Account, Refusal
from webapp.accounts.stream import append_to, fresh
from webapp.accounts.tables import user_sessions
from webapp.accounts.users import User
from webapp.core import clock
from webapp.devices import cookie, known
from webapp.devices.seen import Seen, of_request

NEW_DEVICE_MAIL = "new-device"  # its outbox kind
DEVICES_PATH = "/profile#profile-devices"
RESET_PATH = "/reset-password"


def on_sign_in(conn: Connection, user: User, session_digest: str) -> None:
    seen = of_request()
    conn.execute(
        update(user_sessions)
        .where(user_sessions.c.digest == session_digest)
        .values(browser=seen.browser, system=seen.system, address=seen.address)
    )
    now = clock.now()
    device_id = cookie.read()
    recognised = device_id is not None and known.knows(conn, user, known.digest(device_id))
    first = not recognised and not known.any_known(conn, user)
    device_id = device_id or cookie.new_id()
    known.remember(conn, user, known.digest(device_id), now)
    cookie.keep(device_id)
    if not recognised and not first:
        _new_device(conn, fresh(conn, user), seen, now)


def _words(seen: Seen, language: str | None) -> dict[str, str]:
    with force_locale(language or "en"):
        return {
            "browser": seen.browser or gettext("devices.unknownBrowser"),
            "system": seen.system or gettext("devices.unknownSystem"),
            "address": seen.address or gettext("devices.unknownAddress"),
        }


def _new_device(conn: Connection, user: User, seen: Seen, now: datetime) -> None:
    words = _words(seen, user.language)
    decision = Account(user).sign_in_on_new_device(**words)
    if isinstance(decision, Refusal):
        return
    append_to(conn, user, decision)
    when = format_datetime(now, "medium", tzinfo=UTC, locale=user.language or "en") + " UTC"
    notices.record(
        conn,
        user,
        NEW_DEVICE_MAIL,
        "devices.mail.newDevice",
        DEVICES_PATH,
        time=when,
        reset_link=notices.base_url() + RESET_PATH,
        **words,
    )
