"""WebAuthn challenges, kept server-side (the database is the truth): each is
random (32 bytes), for one purpose, bound to the browser session that asked
for it, good for 5 minutes, and spent by its first answer.

The binding is a random value kept in this browser's signed session; the row
holds only its sha256. An answer is looked up by its challenge *and* this
session's binding and purpose, and deleted in the same statement that finds
it, so a challenge from another session is unknown here and a replayed one is
gone. Handing out a challenge drops this session's older one of the same
purpose, and every expired row: the table stays small."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from flask import session
from sqlalchemy import delete, insert, select

from webapp.accounts.factors.passkeys import b64
from webapp.accounts.factors.tables import webauthn_challenges as t
from webapp.core import clock, db

LIFETIME = timedelta(minutes=5)
SESSION_KEY = "webauthn_binding"

REGISTER = "register"
SIGN_IN = "signin"  # passwordless, on /login
AUTOFILL = "autofill"  # passwordless, offered in the email field's autofill on /login
SECOND_STEP = "second"  # after the password
REAUTH = "reauth"  # *Confirm it's you*
PASSWORDLESS = (SIGN_IN, AUTOFILL)  # the passkey names its account


@dataclass(frozen=True)
class Challenge:
    challenge: str  # base64url
    tenant_id: str
    user_id: str | None
    user_handle: str | None


def _binding(create: bool) -> str | None:
    value = session.get(SESSION_KEY)
    if not isinstance(value, str):
        if not create:
            return None
        value = secrets.token_urlsafe(32)
        session[SESSION_KEY] = value
    return hashlib.sha256(value.encode()).hexdigest()


def issue(
    purpose: str, tenant_id: str, user_id: str | None = None, user_handle: str | None = None
) -> bytes:
    """A new challenge for this session (its bytes, for the options)."""
    binding = _binding(create=True)
    raw = secrets.token_bytes(32)
    now = clock.now()
    with db.transaction() as conn:
        conn.execute(delete(t).where(t.c.expires_at <= now))
        conn.execute(delete(t).where(t.c.binding == binding, t.c.purpose == purpose))
        conn.execute(
            insert(t).values(
                challenge=b64(raw),
                binding=binding,
                purpose=purpose,
                tenant_id=tenant_id,
                user_id=user_id,
                user_handle=user_handle,
                expires_at=now + LIFETIME,
            )
        )
    return raw


def spend(challenge: str, purpose: str) -> Challenge | None:
    """The challenge `challenge` of this session for `purpose`, spent now; None
    when there is none (another session's, replayed, never issued) or it
    expired. Two answers with the same challenge: one DELETE wins."""
    binding = _binding(create=False)
    if binding is None or len(challenge) > 100:
        return None
    mine = (t.c.challenge == challenge, t.c.binding == binding, t.c.purpose == purpose)
    with db.transaction() as conn:
        row = conn.execute(select(t).where(*mine)).first()
        if row is None or not conn.execute(delete(t).where(*mine)).rowcount:
            return None
    if row.expires_at <= clock.now():
        return None
    return Challenge(row.challenge, row.tenant_id, row.user_id, row.user_handle)
