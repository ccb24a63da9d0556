"""The user aggregate's event types. Personal data in payloads is sealed (crypto.py)."""

from __future__ import annotations

AGGREGATE = "user"

REGISTERED = "user.registered"  # email, password_hash, session_token (sealed); language
EMAIL_CHANGED = "user.email-changed"  # email, previous_email (sealed)
EMAIL_VERIFIED = "user.email-verified"  # email (sealed): the address that was verified
EMAIL_CHANGE_REVERTED = (
    "user.email-change-reverted"  # email, session_token (sealed); reverted_version
)
PASSWORD_CHANGED = "user.password-changed"  # password_hash, session_token (sealed)
PASSWORD_REHASHED = "user.password-rehashed"  # password_hash (sealed): new cost parameters
LANGUAGE_CHANGED = "user.language-changed"  # language
SESSIONS_REVOKED = "user.sessions-revoked"  # session_token (sealed)
PASSWORD_RESET_REQUESTED = "user.password-reset-requested"  # (no payload): voids older links
PASSWORD_RESET = "user.password-reset"  # password_hash, session_token (sealed): by a link
DELETION_REQUESTED = "user.deletion-requested"  # due_at (ISO 8601); session_token (sealed)
DELETION_CANCELLED = "user.deletion-cancelled"
ERASED = "user.erased"

ALL = (
    REGISTERED,
    EMAIL_CHANGED,
    EMAIL_VERIFIED,
    EMAIL_CHANGE_REVERTED,
    PASSWORD_CHANGED,
    PASSWORD_REHASHED,
    LANGUAGE_CHANGED,
    SESSIONS_REVOKED,
    PASSWORD_RESET_REQUESTED,
    PASSWORD_RESET,
    DELETION_REQUESTED,
    DELETION_CANCELLED,
    ERASED,
)

ACTIVE = "active"
DELETION_REQUESTED_STATUS = "deletionRequested"
# Processing restricted (Art. 18, webapp/privacy): sign-in refused until an operator lifts it.
RESTRICTED_STATUS = "restricted"
