"""The mail outbox table. The schema is created by
migrations/versions/0006_mail_outbox.py; keep both in step."""

from sqlalchemy import Column, Index, Integer, String, Table, Text

from webapp.core.db import UTCDateTime, metadata

PENDING = "pending"
SENT = "sent"
FAILED = "failed"

RECIPIENT_MAX = 320  # an address's longest form (RFC 3696)
SUBJECT_MAX = 300

# One row per mail, written in the transaction of the change that causes it.
# `recipient` and `body` are personal data (the body carries the link): they
# are cleared once the mail is sent and the rows go with the account on erasure.
mail_outbox = Table(
    "mail_outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=True),
    Column("kind", String(64), nullable=False),
    Column("recipient", String(RECIPIENT_MAX), nullable=True),
    Column("subject", String(SUBJECT_MAX), nullable=True),
    Column("body", Text, nullable=True),
    # Set for mails that must exist at most once (e.g. a workflow's reminder).
    Column("dedupe_key", String(200), nullable=True, unique=True),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UTCDateTime(), nullable=False),
    # A worker holds the row while it sends; an expired lease means it died.
    Column("lease_owner", String(64), nullable=True),
    Column("lease_until", UTCDateTime(), nullable=True),
    Column("last_error", String(200), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("sent_at", UTCDateTime(), nullable=True),
)
Index("ix_mail_outbox_due", mail_outbox.c.status, mail_outbox.c.next_attempt_at)
Index("ix_mail_outbox_user", mail_outbox.c.tenant_id, mail_outbox.c.user_id, mail_outbox.c.kind)
