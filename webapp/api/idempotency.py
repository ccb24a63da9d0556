"""`Idempotency-Key`: a write retried with the same key never happens twice.

The key is claimed first thing in the write's own transaction (an insert
that does nothing when the key is there), so two requests with one key
serialise on it: the second waits for the first to commit, then finds the
key taken. Taken with the same request (method, path and body, compared as
JSON: spacing and key order do not count): the stored answer again, with
`Idempotent-Replayed: true`. Taken with another request: 409. A request that
fails (400, 409 of a version conflict, ...) rolls back with its transaction
and keeps no key: fixed and sent again, it runs. Keys are kept for
KEPT_FOR; the sweep job deletes older ones."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from flask import request
from sqlalchemy import Connection, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from webapp.api.problems import Problem
from webapp.api.tables import api_idempotency_keys
from webapp.core import clock, db

HEADER = "Idempotency-Key"
MAX_KEY = 200
KEY = re.compile(r"^[\x21-\x7e]{1,200}$")  # visible ASCII: a UUID, a ULID, your own id
KEPT_FOR = timedelta(hours=24)
PENDING = -1


def key_from_request() -> str | None:
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    if not KEY.match(raw):
        raise Problem(
            "invalid-request",
            f"{HEADER} must be 1 to {MAX_KEY} visible ASCII characters",
            [{"parameter": HEADER, "detail": "1 to 200 visible ASCII characters"}],
        )
    return raw


def request_hash(body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    text = f"{request.method} {request.path}\n{canonical}"
    return hashlib.sha256(text.encode()).hexdigest()


def _claim(conn: Connection, tenant: str, key: str, digest: str) -> bool:
    dialect = postgresql if not db.is_sqlite(conn) else sqlite
    values = dict(
        tenant_id=tenant,
        key=key,
        request_hash=digest,
        status=PENDING,
        response={},
        created_at=clock.now(),
    )
    stmt = dialect.insert(api_idempotency_keys).values(**values).on_conflict_do_nothing()
    # RETURNING, not rowcount: the drivers as set up here do not all count it
    return conn.execute(stmt.returning(api_idempotency_keys.c.key)).first() is not None


def once(
    tenant: str, key: str | None, body: Any, write: Callable[[Connection], tuple[int, Any]]
) -> tuple[int, Any, bool]:
    """Run `write` in a transaction, at most once per key: (status, response
    body, replayed). Without a key it simply runs."""
    if key is None:
        with db.transaction() as conn:
            return (*write(conn), False)
    digest = request_hash(body)
    with db.transaction() as conn:
        if _claim(conn, tenant, key, digest):
            status, data = write(conn)
            conn.execute(
                update(api_idempotency_keys)
                .where(
                    api_idempotency_keys.c.tenant_id == tenant, api_idempotency_keys.c.key == key
                )
                .values(status=status, response=data)
            )
            return status, data, False
        row = conn.execute(
            select(api_idempotency_keys).where(
                api_idempotency_keys.c.tenant_id == tenant, api_idempotency_keys.c.key == key
            )
        ).one()
    if row.request_hash != digest:
        raise Problem(
            "idempotency-key-reused",
            f"this {HEADER} was used with another request; use a new key for a new request",
        )
    return int(row.status), row.response, True


def sweep(_tenant: str | None, now: datetime) -> None:
    """Forget keys older than KEPT_FOR (a scheduled job)."""
    with db.transaction() as conn:
        conn.execute(
            delete(api_idempotency_keys).where(api_idempotency_keys.c.created_at < now - KEPT_FOR)
        )
