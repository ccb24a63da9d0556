"""Signed, expiring, single-use links (itsdangerous), timed by the app clock.

A token names its purpose (the salt), the user, and a digest of what it is
bound to (the address to verify, or the email-change event to revert); it is
spent by recording its sha256 in `used_tokens`, in the same transaction as the
change it makes.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, TimestampSigner, URLSafeTimedSerializer
from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from webapp.accounts.tables import used_tokens
from webapp.core import clock

VERIFY_EMAIL = "verify-email"
REVERT_EMAIL = "revert-email-change"
RESET_PASSWORD = "reset-password"
DELETE_ACCOUNT = "delete-account"  # the signed-out deletion link (deletion.py)
LIFETIMES = {
    VERIFY_EMAIL: timedelta(hours=48),
    REVERT_EMAIL: timedelta(days=7),
    RESET_PASSWORD: timedelta(hours=1),
    DELETE_ACCOUNT: timedelta(minutes=60),
}


class _ClockSigner(TimestampSigner):
    def get_timestamp(self) -> int:
        return int(clock.now().timestamp())


class TokenError(Exception):
    def __init__(self, reason: str) -> None:  # "expired" | "invalid" | "used"
        super().__init__(reason)
        self.reason = reason


def _serializer(secret_key: str, purpose: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt=purpose, signer=_ClockSigner)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def make(secret_key: str, purpose: str, payload: dict[str, Any]) -> str:
    return str(_serializer(secret_key, purpose).dumps(payload))


def load(secret_key: str, purpose: str, token: str) -> dict[str, Any]:
    max_age = int(LIFETIMES[purpose].total_seconds())
    try:
        data = _serializer(secret_key, purpose).loads(token, max_age=max_age)
    except SignatureExpired:
        raise TokenError("expired") from None
    except BadSignature:
        raise TokenError("invalid") from None
    if not isinstance(data, dict):
        raise TokenError("invalid")
    return data


def is_spent(conn: Connection, token: str) -> bool:
    return (
        conn.execute(
            select(used_tokens.c.digest).where(used_tokens.c.digest == digest(token))
        ).first()
        is not None
    )


def spend(conn: Connection, token: str, tenant_id: str, user_id: str) -> None:
    try:
        with conn.begin_nested():
            conn.execute(
                insert(used_tokens).values(
                    digest=digest(token), tenant_id=tenant_id, user_id=user_id, used_at=clock.now()
                )
            )
    except IntegrityError:
        raise TokenError("used") from None
