"""Accounts tables: the user read model, the per-user keys, spent one-time tokens.

The schema is created by migrations/versions/0003_accounts.py; keep both in step.
"""

from sqlalchemy import (
    Boolean,
    Column,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from webapp.core.db import UTCDateTime, metadata

# Read model of the user aggregate, kept by inline projections (projection.py).
users = Table(
    "users",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("id", String(36), primary_key=True),
    Column("email", String(320), nullable=False),
    Column("email_verified", Boolean, nullable=False, default=False),
    Column("password_hash", String(255), nullable=False),
    Column("session_token", String(64), nullable=False),
    Column("language", String(8), nullable=True),
    Column("status", String(32), nullable=False, default="active"),
    Column("deletion_due_at", UTCDateTime(), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("version", Integer, nullable=False),
    # May enter the operations console (webapp/admin; migration 0007_admin).
    Column("is_admin", Boolean, nullable=False, default=False, server_default=false()),
    # Second factors, as the profile shows them (accounts/factors; migration 0012_factors).
    Column("totp_since", UTCDateTime(), nullable=True),
    Column("recovery_codes_left", Integer, nullable=False, default=0, server_default="0"),
    # How many passkeys (migration 0013_passkeys): the profile reads their list only then.
    Column("passkeys", Integer, nullable=False, default=0, server_default="0"),
    # How many identities at sign-in providers (migration 0019_identities): the
    # profile reads their list only then.
    Column("identities", Integer, nullable=False, default=0, server_default="0"),
    UniqueConstraint("tenant_id", "email", name="uq_users_tenant_email"),
)
Index("ix_users_status_due", users.c.status, users.c.deletion_due_at)

# One AES-256 key per user. Erasing the user deletes the row, which makes every
# encrypted field in that user's events unreadable (crypto-shredding).
user_keys = Table(
    "user_keys",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("user_id", String(36), primary_key=True),
    Column("key", Text, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)

# Single-use links: the sha256 of every spent token.
used_tokens = Table(
    "used_tokens",
    metadata,
    Column("digest", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=False),
    Column("used_at", UTCDateTime(), nullable=False),
)
Index("ix_used_tokens_user", used_tokens.c.tenant_id, used_tokens.c.user_id)

# One row per sign-in (the sha256 of the secret the browser holds in its session
# and remember-me cookie); signing out deletes it. Created by
# migrations/versions/0005_accounts_sessions.py; what "Your devices" shows of it
# (webapp/devices) by 0011_devices.py: browser and system as read from the user
# agent (never the agent string), the shortened address, and when it was last
# active (moved at most once a minute).
user_sessions = Table(
    "user_sessions",
    metadata,
    Column("digest", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("browser", String(64), nullable=True),
    Column("system", String(64), nullable=True),
    Column("address", String(64), nullable=True),
    Column("last_active_at", UTCDateTime(), nullable=True),
)
Index("ix_user_sessions_user", user_sessions.c.tenant_id, user_sessions.c.user_id)
Index("ix_user_sessions_expires", user_sessions.c.expires_at)
