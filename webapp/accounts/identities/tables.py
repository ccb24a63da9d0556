"""The linked identities' read model. The schema is created by
migrations/versions/0019_identities.py; keep both in step.

Written by the inline projection of `user.identity-linked` / `-unlinked`
(projection.py) and, for `last_used_at` only, by a sign-in through the
provider (store.record_use). Erasure deletes the rows; the events' subject
and address are sealed with the user's key, so they go with it."""

from sqlalchemy import Column, Index, String, Table

from webapp.core.db import UTCDateTime, metadata

user_identities = Table(
    "user_identities",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=False),
    Column("provider", String(32), nullable=False),  # the configured name (OIDC_<NAME>_*)
    Column("subject", String(255), nullable=False),  # `sub` (GitHub: the user's numeric id)
    Column("email", String(320), nullable=True),  # the address the provider gave, if any
    Column("linked_at", UTCDateTime(), nullable=False),
    Column("last_used_at", UTCDateTime(), nullable=True),
)
Index("ix_user_identities_user", user_identities.c.tenant_id, user_identities.c.user_id)
# One account per identity of a provider.
Index(
    "ux_user_identities_subject",
    user_identities.c.tenant_id,
    user_identities.c.provider,
    user_identities.c.subject,
    unique=True,
)
