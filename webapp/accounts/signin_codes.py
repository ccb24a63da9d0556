"""Sign-in by emailed code: "Email me a sign-in code" on /login.

A code is 8 characters from a 30-symbol alphabet without look-alikes (39
random bits), good for 10 minutes, single use, and bound to the browser
session that asked for it: the session keeps a random binding value, the row
(`signin_codes`) holds only its sha256, and the code only as an HMAC keyed
with `SECRET_KEY` and the binding. A code typed in another browser finds no
row; three wrong codes void the code (a new one must be asked for); the views
add the per-address and per-client limits of password sign-ins.

No enumeration: asking does the same work for every address. A row is written
for an unknown address too (with no user: no code can match it), and its mail
is composed and recorded in the outbox in a savepoint that is rolled back (the
worker is asked to deliver it, and finds nothing); the answer is the same page. Only the known address gets the mail, recorded in
the outbox in the same transaction (bench/signin_code.py compares the two).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app, session
from flask_babel import force_locale, gettext
from sqlalchemy import (
    Column,
    Connection,
    Index,
    Integer,
    String,
    Table,
    delete,
    insert,
    select,
    update,
)

from webapp.accounts import addresses, notices
from webapp.accounts import events as ev
from webapp.accounts.account import Account
from webapp.accounts.i18n import duration
from webapp.accounts.users import User, find_by_email, get_user
from webapp.core import clock, db
from webapp.core.db import UTCDateTime, metadata
from webapp.eventstore import Event, register_inline
from webapp.mail import outbox
from webapp.tenants import DEFAULT_TENANT

LIFETIME = timedelta(minutes=10)
LENGTH = 8
ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"  # no 0/O, 1/I/L, U
MAX_ATTEMPTS = 3  # wrong codes before this code is void
SESSION_KEY = "signin_code"
SIGNIN_CODE = "signin-code"  # outbox kind of the mail with the code

WRONG = "signinCode.errors.wrong"
EXPIRED = "signinCode.errors.expired"

# The schema is created by migrations/versions/0020_signin_codes.py; keep both in step.
signin_codes = Table(
    "signin_codes",
    metadata,
    Column("binding", String(64), primary_key=True),  # sha256 of the session's value
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=True),  # None: nobody has this address
    Column("code_hash", String(64), nullable=False),  # HMAC(SECRET_KEY, binding + code)
    Column("attempts", Integer, nullable=False, default=0),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
)
Index("ix_signin_codes_expiry", signin_codes.c.expires_at)
Index("ix_signin_codes_user", signin_codes.c.tenant_id, signin_codes.c.user_id)
_t = signin_codes


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def normalized(value: str) -> str | None:
    """The code as typed (any case, spaces or hyphens between), or None when
    it cannot be one: wrong length or a symbol that no code has."""
    if len(value) > 40:
        return None
    code = "".join(value.split()).replace("-", "").upper()
    if len(code) != LENGTH or any(c not in ALPHABET for c in code):
        return None
    return code


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _code_hash(binding: str, code: str) -> str:
    key = str(current_app.config["APP_CONFIG"].secret_key).encode()
    return hmac.new(key, f"{binding}:{code}".encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Pending:
    """The code this browser asked for: the address typed and where to go next."""

    email: str
    next_url: str | None


def pending() -> Pending | None:
    info = session.get(SESSION_KEY)
    if not isinstance(info, dict) or not isinstance(info.get("b"), str):
        return None
    next_url = info.get("next")
    return Pending(str(info.get("email") or ""), next_url if isinstance(next_url, str) else None)


def forget() -> None:
    session.pop(SESSION_KEY, None)


def issue(email_raw: str, next_url: str | None) -> None:
    """Hand this browser a new code for the address typed, and mail it when
    an account has that address. Any earlier code of this browser is void."""
    email = addresses.normalize(email_raw) or email_raw.strip().lower()[:320]
    previous = session.get(SESSION_KEY)
    value = secrets.token_urlsafe(32)
    binding = _digest(value)
    code = new_code()
    now = clock.now()
    with db.transaction() as conn:
        conn.execute(delete(_t).where(_t.c.expires_at <= now))
        if isinstance(previous, dict) and isinstance(previous.get("b"), str):
            conn.execute(delete(_t).where(_t.c.binding == _digest(previous["b"])))
        user = find_by_email(conn, email)
        conn.execute(
            insert(_t).values(
                binding=binding,
                tenant_id=user.tenant_id if user else DEFAULT_TENANT,
                user_id=user.id if user else None,
                code_hash=_code_hash(binding, code),
                attempts=0,
                created_at=now,
                expires_at=now + LIFETIME,
            )
        )
        if user is None or not Account(user).accepts_mail(SIGNIN_CODE):  # restricted: no mail
            _record_for_nobody(conn, email, code)
        else:
            record_code_mail(conn, user, code)
    session[SESSION_KEY] = {"b": value, "email": email, "next": next_url}


def keep(email_raw: str, next_url: str | None) -> None:
    """No new code (the address had enough lately): this browser keeps the
    code it has when it asked for the same address, else none works here."""
    email = addresses.normalize(email_raw) or email_raw.strip().lower()[:320]
    info = session.get(SESSION_KEY)
    if isinstance(info, dict) and info.get("email") == email:
        session[SESSION_KEY] = {**info, "next": next_url}
        return
    session[SESSION_KEY] = {"b": secrets.token_urlsafe(32), "email": email, "next": next_url}


@dataclass(frozen=True)
class Checked:
    user: User | None  # the code's account, when the code was right
    error: str | None = None  # WRONG, or EXPIRED (none here: expired, used, void, never asked)


def check(code_raw: str) -> Checked:
    """Spend this browser's code if `code_raw` is it. A wrong code counts;
    the third voids it. Of two requests with the right code, one wins."""
    info = session.get(SESSION_KEY)
    if not isinstance(info, dict) or not isinstance(info.get("b"), str):
        return Checked(None, EXPIRED)
    binding = _digest(info["b"])
    code = normalized(code_raw)
    mine = _t.c.binding == binding
    with db.transaction() as conn:
        row = conn.execute(select(_t).where(mine)).first()
        if row is None or row.expires_at <= clock.now():
            conn.execute(delete(_t).where(mine))
            return Checked(None, EXPIRED)
        right = code is not None and hmac.compare_digest(row.code_hash, _code_hash(binding, code))
        if right and row.user_id is not None:
            spent = conn.execute(delete(_t).where(mine, _t.c.code_hash == row.code_hash))
            if not spent.rowcount:  # another request spent it first
                return Checked(None, EXPIRED)
            user = get_user(conn, row.user_id, row.tenant_id)
            return Checked(user, None if user else EXPIRED)
        conn.execute(update(_t).where(mine).values(attempts=_t.c.attempts + 1))
        conn.execute(delete(_t).where(mine, _t.c.attempts >= MAX_ATTEMPTS))
    return Checked(None, WRONG)


# --- the mail ----------------------------------------------------------------------
def _compose(language: str, code: str) -> tuple[str, str]:
    with force_locale(language):
        return gettext("mail.signinCode.subject"), gettext(
            "mail.signinCode.body", code=code, duration=duration(LIFETIME)
        )


def _record_for_nobody(conn: Connection, email: str, code: str) -> None:
    """The mail's work for an address nobody has, so that it answers as fast
    as a known one: composed and recorded in the outbox, and the record rolled
    back (a savepoint). The worker, asked after commit as for any mail, finds
    no row and sends nothing."""
    subject, text = _compose("en", code)
    with conn.begin_nested() as nobody:
        outbox.record(
            conn,
            outbox.Mail(email, subject, text),
            tenant_id=DEFAULT_TENANT,
            user_id=None,
            kind=SIGNIN_CODE,
        )
        nobody.rollback()


def record_code_mail(conn: Connection, user: User, code: str) -> None:
    notices.record(conn, user, SIGNIN_CODE, "mail.signinCode", code=code, duration=LIFETIME)


# --- erasure -------------------------------------------------------------------------
def _forget_user(conn: Connection, e: Event) -> None:
    conn.execute(delete(_t).where(_t.c.tenant_id == e.tenant_id, _t.c.user_id == e.aggregate_id))


def register() -> None:
    register_inline(ev.ERASED, _forget_user)
