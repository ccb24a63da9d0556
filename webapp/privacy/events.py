"""The privacy center's event types, on the user's own stream (`user/<id>`).
Payloads carry ids and dates only; the session token is sealed."""

from __future__ import annotations

EXPORT_REQUESTED = "user.export-requested"  # job_id
EXPORT_COMPLETED = "user.export-completed"  # job_id, expires_at, bytes
EXPORT_FAILED = "user.export-failed"  # job_id, reason (a word, never personal data)
RESTRICTED = "user.restricted"  # session_token (sealed): every session ends
RESTRICTION_LIFTED = "user.restriction-lifted"  # by an operator (the event's actor)
DELETION_LINK_REQUESTED = "user.deletion-link-requested"  # request_id: binds the link
# Confirming the link appends the accounts' `user.deletion-requested` with via="link".

ALL = (
    EXPORT_REQUESTED,
    EXPORT_COMPLETED,
    EXPORT_FAILED,
    RESTRICTED,
    RESTRICTION_LIFTED,
    DELETION_LINK_REQUESTED,
)
