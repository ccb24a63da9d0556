"""The second factors' read models. The schema is created by
migrations/versions/0012_factors.py; keep both in step.

The rows are written by the inline projection of the factor events
(projection.py), except a set-up not yet confirmed (a row with no
`confirmed_at`, written when the set-up starts) and the sign-in's own
bookkeeping: `last_step`/`last_used_at`, a passkey's `sign_count`, and a
recovery code's `used_at` through its event. `webauthn_challenges` is
written by passkeys' ceremonies only (challenges.py)."""

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from webapp.core.db import UTCDateTime, metadata

TOTP = "totp"  # the kind of an authenticator app
PASSKEY = "passkey"  # a WebAuthn credential (passkeys.py)

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
    # A passkey's (migration 0013_passkeys.py; `secret` is empty: a passkey has
    # none here, only its public key). The credential id and the user handle
    # are base64url; the handle is the account's opaque WebAuthn id (random,
    # the same for each of its passkeys, never the email or the user id).
    Column("credential_id", String(1400), nullable=True),
    Column("public_key", Text, nullable=True),  # COSE, base64url
    Column("sign_count", BigInteger, nullable=True),
    Column("transports", String(200), nullable=True),  # space-separated
    Column("user_handle", String(100), nullable=True),
)
Index("ix_user_factors_user", user_factors.c.tenant_id, user_factors.c.user_id)
Index("ux_user_factors_credential", user_factors.c.credential_id, unique=True)

# A WebAuthn challenge handed out and not yet answered: single-use (the answer
# deletes the row), for one purpose, bound to the browser session that asked
# (`binding`: the sha256 of a random value kept in that session), and good
# until `expires_at` (5 minutes). For registration it also holds the user
# handle the new passkey gets.
webauthn_challenges = Table(
    "webauthn_challenges",
    metadata,
    Column("challenge", String(100), primary_key=True),  # base64url
    Column("binding", String(64), nullable=False),
    Column("purpose", String(16), nullable=False),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=True),  # None: passwordless sign-in
    Column("user_handle", String(100), nullable=True),
    Column("expires_at", UTCDateTime(), nullable=False),
)
Index("ix_webauthn_challenges_expiry", webauthn_challenges.c.expires_at)

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
