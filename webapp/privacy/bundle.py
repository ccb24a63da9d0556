"""The export bundle: `bundle.json` (the user's data, sealed fields opened) and
`README.txt` (what each part means), written as one ZIP under EXPORT_DIR.

The ZIP is written to a temporary name and renamed when complete, so a worker
killed half way leaves no file that looks finished; building again overwrites.
"""

from __future__ import annotations

import json
import os
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

from flask_babel import force_locale, gettext
from sqlalchemy import Connection, select

from webapp.accounts import crypto
from webapp.accounts.factors import store as factor_store
from webapp.accounts.identities import store as identity_store
from webapp.accounts.tables import user_sessions
from webapp.accounts.users import User, stream_of
from webapp.core import clock
from webapp.devices import known
from webapp.eventstore import Event, read_stream
from webapp.workflows.store import queries as run_queries
from webapp.workflows.store import runs as run_streams

UNAVAILABLE = "[encrypted:unavailable]"
SECRET = "[secret: not exported]"
# Credentials are never exported, not even to their owner: a stolen ZIP must
# not sign anyone in.
# The authenticator app's secret, the recovery codes' hashes and a passkey's
# key material neither.
SECRET_FIELDS = frozenset(
    {"password_hash", "session_token", "secret", "hashes"}
    | {"credential_id", "public_key", "user_handle"}
)


def file_name(job_id: str) -> str:
    return f"{job_id}.zip"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _open(conn: Connection, user: User, value: Any) -> Any:
    if isinstance(value, str) and value.startswith(crypto.PREFIX):
        try:
            return crypto.unseal_for(conn, user.tenant_id, user.id, value)
        except (LookupError, ValueError):
            return UNAVAILABLE
    if isinstance(value, dict):
        return {k: SECRET if k in SECRET_FIELDS else _open(conn, user, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_open(conn, user, v) for v in value]
    return value


def _event(conn: Connection, user: User, e: Event) -> dict[str, Any]:
    return {
        "version": e.version,
        "type": e.type,
        "recorded_at": _iso(e.recorded_at),
        "actor": e.metadata.get("actor"),
        "payload": _open(conn, user, e.payload),
    }


def _runs(conn: Connection, user: User) -> list[dict[str, Any]]:
    out = []
    for r in run_queries.runs_of_subject(conn, user.tenant_id, user.id):
        stream = run_streams.stream(user.tenant_id, r.run_id)
        out.append(
            {
                "run_id": r.run_id,
                "workflow": r.workflow_name,
                "status": r.status,
                "started_at": _iso(r.started_at),
                "updated_at": _iso(r.updated_at),
                "events": [_event(conn, user, e) for e in read_stream(conn, stream)],
            }
        )
    return out


def _sessions(conn: Connection, user: User) -> list[dict[str, Any]]:
    """The browsers signed in now, as Your devices lists them (no secret)."""
    s = user_sessions.c
    rows = conn.execute(
        select(s.created_at, s.expires_at, s.last_active_at, s.browser, s.system, s.address)
        .where(s.tenant_id == user.tenant_id, s.user_id == user.id)
        .where(s.expires_at > clock.now())
        .order_by(s.created_at)
    )
    return [
        {
            "signed_in_at": _iso(r.created_at),
            "expires_at": _iso(r.expires_at),
            "last_active_at": _iso(r.last_active_at),
            "browser": r.browser,
            "system": r.system,
            "address": r.address,
        }
        for r in rows
    ]


def _factors(conn: Connection, user: User) -> list[dict[str, Any]]:
    """Each second factor: its type, name, when added and last used; never its secret."""
    return [
        {
            "type": f.kind,
            "name": f.name,
            "created_at": _iso(f.created_at),
            "last_used_at": _iso(f.last_used_at),
        }
        for f in factor_store.factors_of(conn, user)
    ]


def _identities(conn: Connection, user: User) -> list[dict[str, Any]]:
    """Each connected account at a provider: which, the address it gave, when
    connected and last used. No token: none is kept."""
    return [
        {
            "provider": i.provider,
            "subject": i.subject,
            "email": i.email,
            "linked_at": _iso(i.linked_at),
            "last_used_at": _iso(i.last_used_at),
        }
        for i in identity_store.identities_of(conn, user.tenant_id, user.id)
    ]


def bundle(conn: Connection, user: User) -> dict[str, Any]:
    """Everything the product keeps about `user`, readable."""
    return {
        "format": 1,
        "generated_at": _iso(clock.now()),
        "profile": {
            "id": user.id,
            "email": user.email,
            "language": user.language,
            "email_verified": user.email_verified,
            "status": user.status,
            "created_at": _iso(user.created_at),
        },
        "events": [
            _event(conn, user, e) for e in read_stream(conn, stream_of(user.tenant_id, user.id))
        ],
        "workflow_runs": _runs(conn, user),
        "sessions": _sessions(conn, user),
        "devices": known.of_user(conn, user),
        "factors": _factors(conn, user),
        "identities": _identities(conn, user),
    }


def readme(language: str | None) -> str:
    with force_locale(language or "en"):
        return gettext("privacy.bundle.readme")


def write_zip(folder: Path, job_id: str, data: dict[str, Any], language: str | None) -> int:
    """Write the ZIP; its size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / file_name(job_id)
    partial = folder / f"{job_id}.partial"
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bundle.json", json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True))
        zf.writestr("README.txt", readme(language))
    os.replace(partial, final)
    return final.stat().st_size
