"""API tokens: created by an operator (`flask api-tokens create`, the console),
shown once, stored as a SHA-256 hash, bound to one tenant with a set of
scopes, listed with their last use, and revoked at once: every request looks
its token up in the database (one probe of a unique index), so a revoked token
is refused on its next request by every process."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, or_, select, update

from webapp import tenants
from webapp.api.tables import api_tokens
from webapp.core import clock

SCOPES = {
    "events:write": "publish events",
    "runs:read": "list and read runs",
    "runs:write": "cancel, retry, pause, resume and rerun runs",
    "workflows:write": "pause and resume whole workflows (of every tenant)",
}
PREFIX = "wfk_"  # every token starts so: secret scanners can find a leaked one
MAX_NAME = 100
# A token's last use is written at most this often (a write per request would
# cost more than the request).
LAST_USE_EVERY = timedelta(minutes=1)


class TokenError(ValueError):
    """A token cannot be created or revoked as asked (the message says why)."""


@dataclass(frozen=True)
class Token:
    id: str
    name: str
    tenant_id: str
    scopes: frozenset[str]
    hint: str
    created_at: datetime
    created_by: str | None
    last_used_at: datetime | None
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


def _token(row: Any) -> Token:
    return Token(
        row.id,
        row.name,
        row.tenant_id,
        frozenset(row.scopes or ()),
        row.hint,
        row.created_at,
        row.created_by,
        row.last_used_at,
        row.revoked_at,
    )


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def check_scopes(scopes: Iterable[str]) -> list[str]:
    given = sorted(set(scopes))
    unknown = [s for s in given if s not in SCOPES]
    if unknown:
        raise TokenError(f"unknown scope {unknown[0]!r}: one of {', '.join(SCOPES)}")
    if not given:
        raise TokenError(f"give at least one scope: {', '.join(SCOPES)}")
    return given


def create(
    conn: Connection, name: str, scopes: Iterable[str], tenant: str, actor: str | None
) -> tuple[Token, str]:
    """A new token and its secret (shown once: only its hash is kept)."""
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise TokenError(f"the name must be 1 to {MAX_NAME} characters")
    wanted = check_scopes(scopes)
    if tenant not in tenants.all_ids(conn):
        raise TokenError(f"no tenant {tenant!r} (flask tenants list)")
    secret = PREFIX + secrets.token_urlsafe(32)
    values = dict(
        id=str(uuid.uuid4()),
        name=name,
        tenant_id=tenant,
        scopes=wanted,
        secret_hash=secret_hash(secret),
        hint=secret[: len(PREFIX) + 4],
        created_at=clock.now(),
        created_by=actor,
    )
    conn.execute(insert(api_tokens).values(**values))
    row = conn.execute(select(api_tokens).where(api_tokens.c.id == values["id"])).one()
    return _token(row), secret


def all_tokens(conn: Connection) -> list[Token]:
    """Every token, newest first (revoked ones too: they say when)."""
    q = select(api_tokens).order_by(api_tokens.c.created_at.desc(), api_tokens.c.id)
    return [_token(r) for r in conn.execute(q)]


def get(conn: Connection, token_id: str) -> Token | None:
    row = conn.execute(select(api_tokens).where(api_tokens.c.id == token_id)).first()
    return _token(row) if row is not None else None


def revoke(conn: Connection, token_id: str, actor: str | None) -> Token:
    found = get(conn, token_id)
    if found is None:
        raise TokenError(f"no API token {token_id!r}")
    if found.revoked:
        raise TokenError(f"API token {token_id} is already revoked")
    conn.execute(
        update(api_tokens)
        .where(api_tokens.c.id == token_id, api_tokens.c.revoked_at.is_(None))
        .values(revoked_at=clock.now(), revoked_by=actor)
    )
    revoked = get(conn, token_id)
    assert revoked is not None
    return revoked


def authenticate(conn: Connection, secret: str) -> Token | None:
    """The live token of this secret, or None (unknown or revoked)."""
    if not secret.startswith(PREFIX) or len(secret) > 100:
        return None
    digest = secret_hash(secret)
    row = conn.execute(select(api_tokens).where(api_tokens.c.secret_hash == digest)).first()
    # The index found it by its hash; comparing again in constant time costs nothing.
    if row is None or not hmac.compare_digest(row.secret_hash, digest) or row.revoked_at:
        return None
    return _token(row)


def last_use_due(token: Token, now: datetime) -> bool:
    return token.last_used_at is None or now - token.last_used_at >= LAST_USE_EVERY


def record_use(conn: Connection, token_id: str, now: datetime) -> None:
    """Mark the token used now, unless another request did within LAST_USE_EVERY."""
    c = api_tokens.c
    conn.execute(
        update(api_tokens)
        .where(
            c.id == token_id,
            or_(c.last_used_at.is_(None), c.last_used_at <= now - LAST_USE_EVERY),
        )
        .values(last_used_at=now)
    )
