"""The API's tables: tokens and idempotency keys. The schema is created by
migrations/versions/0021_api_tokens.py; keep both in step."""

from sqlalchemy import JSON, Column, Index, Integer, String, Table

from webapp.core.db import UTCDateTime, metadata

# One row per token. Only the SHA-256 of the secret is kept: a token is 256
# random bits, so a fast hash is enough (nothing to guess), and a lookup is one
# probe of the unique index.
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("name", String(100), nullable=False),
    Column("tenant_id", String(64), nullable=False),
    Column("scopes", JSON, nullable=False),  # a sorted list of scope names
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("hint", String(12), nullable=False),  # the token's first characters, to recognise it
    Column("created_at", UTCDateTime(), nullable=False),
    Column("created_by", String(200), nullable=True),
    Column("last_used_at", UTCDateTime(), nullable=True),
    Column("revoked_at", UTCDateTime(), nullable=True),
    Column("revoked_by", String(200), nullable=True),
)

# A request made with an `Idempotency-Key`: what it asked (the hash of its
# method, path and body) and what it got. A retry with the same key and body
# gets the stored answer; with another body, 409.
api_idempotency_keys = Table(
    "api_idempotency_keys",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("request_hash", String(64), nullable=False),
    Column("status", Integer, nullable=False),
    Column("response", JSON, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)
Index("ix_api_idempotency_keys_created", api_idempotency_keys.c.created_at)
