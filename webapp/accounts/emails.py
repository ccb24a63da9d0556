"""Email address normalisation: validated by email-validator (no DNS), lower-cased."""

from __future__ import annotations

from email_validator import EmailNotValidError, validate_email

MAX_LENGTH = 254


def normalize(address: str) -> str | None:
    """The canonical lower-case form, or None when the address is not valid."""
    address = (address or "").strip()
    if not address or len(address) > MAX_LENGTH:
        return None
    try:
        result = validate_email(address, check_deliverability=False)
    except EmailNotValidError:
        return None
    return result.normalized.lower()
