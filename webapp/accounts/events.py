"""Every event type of the user's stream (`user/<id>`), declared once: its name,
its payload fields, and which of them are sealed with the user's key (crypto.py).

Accounts, the privacy center and the console all append to this stream; they
take the types from here, and `stream.append` seals the fields named here, so
no command seals (or forgets to seal) a field by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

AGGREGATE = "user"


@dataclass(frozen=True)
class EventType:
    name: str
    fields: tuple[str, ...] = ()
    sealed: frozenset[str] = frozenset()  # personal data: sealed with the user's key


def _t(name: str, *fields: str, sealed: tuple[str, ...] = ()) -> EventType:
    return EventType(name, fields, frozenset(sealed))


DECLARED = {
    t.name: t
    for t in (
        _t(
            "user.registered",
            *("email", "password_hash", "session_token", "language"),
            sealed=("email", "password_hash", "session_token"),
        ),
        _t("user.email-changed", "email", "previous_email", sealed=("email", "previous_email")),
        # ids too, so a waiting workflow can match user + address
        _t("user.email-verified", "email", "user_id", "address_version", sealed=("email",)),
        _t(
            "user.email-change-reverted",
            *("email", "session_token", "reverted_version"),
            sealed=("email", "session_token"),
        ),
        _t(
            "user.password-changed",
            "password_hash",
            "session_token",
            sealed=("password_hash", "session_token"),
        ),  # fmt: skip
        _t("user.password-rehashed", "password_hash", sealed=("password_hash",)),  # new cost
        _t("user.language-changed", "language"),
        _t("user.sessions-revoked", "session_token", sealed=("session_token",)),
        _t("user.password-reset-requested"),  # voids older reset links
        _t(
            "user.password-reset",
            "password_hash",
            "session_token",
            sealed=("password_hash", "session_token"),
        ),  # fmt: skip
        # due_at: ISO 8601; via: "link" when confirmed by the signed-out link
        _t("user.deletion-requested", "due_at", "session_token", "via", sealed=("session_token",)),
        _t("user.deletion-cancelled"),
        _t("user.deletion-link-requested", "request_id"),  # binds the signed-out link
        _t("user.restricted", "session_token", sealed=("session_token",)),  # every session ends
        _t("user.restriction-lifted"),  # by an operator (the event's actor)
        _t("user.export-requested", "job_id"),
        _t("user.export-completed", "job_id", "expires_at", "bytes"),
        _t("user.export-failed", "job_id", "reason"),  # a word, never personal data
        _t("user.admin-granted"),  # the console (webapp/admin); actor in the metadata
        _t("user.admin-revoked"),
        # Your devices (webapp/devices): a sign-in from a browser the account never
        # used (not the first one), and a device signed out from the list
        _t(
            "user.new-device-signed-in",
            "browser",
            "system",
            "address",
            sealed=("browser", "system", "address"),
        ),  # fmt: skip
        _t("user.device-signed-out", "browser", "system", sealed=("browser", "system")),
        _t("user.erased"),
        # Second factors (accounts/factors): secrets and code hashes are sealed,
        # so erasure shreds them; the export never shows them.
        _t("user.totp-added", "factor_id", "name", "secret", sealed=("secret",)),
        _t("user.totp-removed", "factor_id"),
        _t("user.recovery-codes-generated", "batch", "hashes", sealed=("hashes",)),
        _t("user.recovery-code-used", "batch", "number"),
        _t("user.factors-reset"),  # by an operator (the event's actor)
        # A passkey (WebAuthn): its key material and the name its owner gave it
        # are sealed (erasure shreds them); the export shows the name only.
        _t(
            "user.passkey-added",
            *("factor_id", "name", "credential_id", "public_key", "sign_count"),
            *("transports", "user_handle"),
            sealed=("name", "credential_id", "public_key", "user_handle"),
        ),
        _t("user.passkey-removed", "factor_id"),
        # An identity at a provider (accounts/identities): its subject and the
        # address it gave are sealed (erasure shreds them); no token is kept.
        _t(
            "user.identity-linked",
            *("identity_id", "provider", "subject", "email"),
            sealed=("subject", "email"),
        ),
        _t("user.identity-unlinked", "identity_id", "provider"),
    )
}

REGISTERED = "user.registered"
EMAIL_CHANGED = "user.email-changed"
EMAIL_VERIFIED = "user.email-verified"
EMAIL_CHANGE_REVERTED = "user.email-change-reverted"
PASSWORD_CHANGED = "user.password-changed"
PASSWORD_REHASHED = "user.password-rehashed"
LANGUAGE_CHANGED = "user.language-changed"
SESSIONS_REVOKED = "user.sessions-revoked"
PASSWORD_RESET_REQUESTED = "user.password-reset-requested"
PASSWORD_RESET = "user.password-reset"
DELETION_REQUESTED = "user.deletion-requested"
DELETION_CANCELLED = "user.deletion-cancelled"
DELETION_LINK_REQUESTED = "user.deletion-link-requested"
RESTRICTED = "user.restricted"
RESTRICTION_LIFTED = "user.restriction-lifted"
EXPORT_REQUESTED = "user.export-requested"
EXPORT_COMPLETED = "user.export-completed"
EXPORT_FAILED = "user.export-failed"
ADMIN_GRANTED = "user.admin-granted"
ADMIN_REVOKED = "user.admin-revoked"
NEW_DEVICE_SIGNED_IN = "user.new-device-signed-in"
DEVICE_SIGNED_OUT = "user.device-signed-out"
ERASED = "user.erased"
TOTP_ADDED = "user.totp-added"
TOTP_REMOVED = "user.totp-removed"
RECOVERY_CODES_GENERATED = "user.recovery-codes-generated"
RECOVERY_CODE_USED = "user.recovery-code-used"
FACTORS_RESET = "user.factors-reset"
PASSKEY_ADDED = "user.passkey-added"
PASSKEY_REMOVED = "user.passkey-removed"
IDENTITY_LINKED = "user.identity-linked"
IDENTITY_UNLINKED = "user.identity-unlinked"

ALL = tuple(DECLARED)

# The `users.status` words (the projection writes them, account.py reads them).
ACTIVE = "active"
DELETION_REQUESTED_STATUS = "deletionRequested"
RESTRICTED_STATUS = "restricted"  # processing restricted (Art. 18): frozen until lifted
