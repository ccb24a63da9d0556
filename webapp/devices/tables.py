"""The browsers each account has signed in from: the sha256 of the random id in
the browser's device cookie (cookie.py), never the address. Created by
migrations/versions/0011_devices.py; keep both in step. Erasure deletes an
account's rows (known.py); "Your devices" itself lists the sign-ins
(`user_sessions`, webapp/accounts/tables.py)."""

from sqlalchemy import Column, String, Table

from webapp.core.db import UTCDateTime, metadata

known_devices = Table(
    "known_devices",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("user_id", String(36), primary_key=True),
    Column("digest", String(64), primary_key=True),
    Column("first_seen_at", UTCDateTime(), nullable=False),
    Column("last_seen_at", UTCDateTime(), nullable=False),
)
