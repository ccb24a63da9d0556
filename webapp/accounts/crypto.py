"""Crypto-shredding: personal data in user events is sealed with a per-user key.

Each user gets a random AES-256-GCM key in `user_keys`. Fields are stored as
`enc:v1:<base64(nonce || ciphertext)>`, authenticated with the user id as
associated data (a field copied into another user's event does not decrypt).
Erasing a user deletes the key; the ciphertext left in the events is noise.
"""

from __future__ import annotations

import base64
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection, delete, insert, select

from webapp.accounts.tables import user_keys
from webapp.core import clock

PREFIX = "enc:v1:"


class KeyDestroyed(LookupError):
    """The user's key is gone (erased): their personal data cannot be read."""


def create_key(conn: Connection, tenant_id: str, user_id: str) -> bytes:
    key = AESGCM.generate_key(bit_length=256)
    conn.execute(
        insert(user_keys).values(
            tenant_id=tenant_id,
            user_id=user_id,
            key=base64.b64encode(key).decode(),
            created_at=clock.now(),
        )
    )
    return key


def load_key(conn: Connection, tenant_id: str, user_id: str) -> bytes:
    raw = conn.execute(
        select(user_keys.c.key).where(
            user_keys.c.tenant_id == tenant_id, user_keys.c.user_id == user_id
        )
    ).scalar()
    if raw is None:
        raise KeyDestroyed(user_id)
    return base64.b64decode(raw)


def destroy_key(conn: Connection, tenant_id: str, user_id: str) -> None:
    conn.execute(
        delete(user_keys).where(user_keys.c.tenant_id == tenant_id, user_keys.c.user_id == user_id)
    )


def seal(key: bytes, user_id: str, value: str) -> str:
    nonce = os.urandom(12)
    ct = AESGCM(key).encrypt(nonce, value.encode(), user_id.encode())
    return PREFIX + base64.urlsafe_b64encode(nonce + ct).decode()


def unseal(key: bytes, user_id: str, token: str) -> str:
    if not token.startswith(PREFIX):
        raise ValueError("not a sealed value")
    blob = base64.urlsafe_b64decode(token[len(PREFIX) :])
    try:
        return AESGCM(key).decrypt(blob[:12], blob[12:], user_id.encode()).decode()
    except InvalidTag:
        raise ValueError("sealed value does not belong to this user or was altered") from None


def seal_for(conn: Connection, tenant_id: str, user_id: str, value: str) -> str:
    return seal(load_key(conn, tenant_id, user_id), user_id, value)


def unseal_for(conn: Connection, tenant_id: str, user_id: str, token: str) -> str:
    return unseal(load_key(conn, tenant_id, user_id), user_id, token)
