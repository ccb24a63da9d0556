"""Email addresses: one canonical form per mailbox, so one account per address.

Validated by email-validator (syntax only, no DNS). The domain is taken from its
IDNA (`xn--`) form and decoded back to Unicode, so `müller.example` and
`xn--mller-kva.example` are one address whatever the library version does;
the address is lower-cased. Local parts (and domain labels) that mix scripts,
such as a Cyrillic `а` among Latin letters, or that use compatibility forms
such as full-width letters, are refused: they look like another address.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import idna
from confusable_homoglyphs import confusables
from email_validator import EmailNotValidError, validate_email

MAX_LENGTH = 254
INVALID = "auth.errors.invalidEmail"
LOOK_ALIKE = "auth.errors.lookAlikeEmail"


@dataclass(frozen=True)
class Checked:
    address: str  # the canonical form; "" when refused
    error: str | None = None  # the i18n key saying why it was refused


def _looks_like_another(text: str) -> bool:
    return unicodedata.normalize("NFKC", text) != text or bool(confusables.is_mixed_script(text))


def check(address: str) -> Checked:
    address = (address or "").strip()
    if not address or len(address) > MAX_LENGTH:
        return Checked("", INVALID)
    try:
        result = validate_email(address, check_deliverability=False)
        domain = idna.decode(result.ascii_domain)
    except (EmailNotValidError, idna.IDNAError, UnicodeError):
        return Checked("", INVALID)
    local = result.local_part
    if _looks_like_another(local) or any(_looks_like_another(p) for p in domain.split(".")):
        return Checked("", LOOK_ALIKE)
    return Checked(f"{local}@{domain}".lower())


def normalize(address: str) -> str | None:
    """The canonical lower-case form, or None when the address is refused."""
    checked = check(address)
    return None if checked.error else checked.address
