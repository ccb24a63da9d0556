"""The second factors' read models. The schema is created by
migrations/versions/0012_factors.py; keep both in step.

The rows are written by the inline projection of the factor events
(projection.py), except a set-up not yet confirmed (a row with no
`confirmed_at`, written when the set-up starts) and the sign-in's own
bookkeeping: `last_step`/`last_used_at` and a recovery code's `used_at`
through its event."""

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from webapp.db import UTCDateTime, metadata

TOTP = "totp"  # the kind of an authenticator app (passkeys will add theirs)

# One row per factor. `secret` is sealed with the user's key (accounts/crypto.py):
# erasure destroys the key, and deletes the row too.
user_factors = Table(
    "user_factors",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("name", String(100), nullable=False),
    Column("secret", Text, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("confirmed_at", UTCDateTime(), nullable=True),  # None: set-up not confirmed
    Column("last_used_at", UTCDateTime(), nullable=True),
    # The TOTP time-step of the last accepted code: a code of this step or an
    # earlier one is refused (a replay within its window).
    Column("last_step", BigInteger, nullable=True),
)
Index("ix_user_factors_user", user_factors.c.tenant_id, user_factors.c.user_id)

# The current batch of recovery codes: only an argon2id hash of each.
recovery_codes = Table(
    "recovery_codes",
    metadata,
    Column("batch", String(36), primary_key=True),
    Column("number", Integer, primary_key=True, autoincrement=False),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=False),
    Column("code_hash", String(255), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime(), nullable=True),
)
Index("ix_recovery_codes_user", recovery_codes.c.tenant_id, recovery_codes.c.user_id)
