"""The authenticator app's codes (RFC 6238 TOTP, with `pyotp`): a new secret,
the `otpauth://` URI and its QR code (an SVG image, `segno`), and checking a
code against the time-steps around now. Pure: no database, no request."""

from __future__ import annotations

import hmac
from datetime import datetime

import pyotp

DIGITS = 6
INTERVAL = 30  # seconds per time-step
# Steps accepted around now: the previous one too (a code typed as it turns
# over, a phone's clock a little behind), and the next (a clock ahead).
DRIFT = 1
MAX_INPUT = 20  # longer input is refused before any comparison


def new_secret() -> str:
    """160 random bits, base32 (RFC 4226's recommended length)."""
    return pyotp.random_base32(32)


def grouped(secret: str) -> str:
    """The secret as a person types it: groups of four."""
    return " ".join(secret[i : i + 4] for i in range(0, len(secret), 4))


def uri(secret: str, account: str, issuer: str) -> str:
    return pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL).provisioning_uri(
        name=account, issuer_name=issuer
    )


def qr_svg_data_uri(text: str) -> str:
    """The QR code as an SVG `data:` URI, for an `<img>` (the CSP allows
    `img-src data:`; no inline style or script). segno is imported here: its
    encoder builds its tables at import, which every process (each `flask ...`
    command) would pay for a page few people open."""
    import segno

    return str(segno.make(text, error="m").svg_data_uri(scale=4, border=4))


def normalized(code: str) -> str | None:
    """The code's digits (spaces and dashes people type are dropped), or None
    when it cannot be a code at all (too long, not digits, wrong length)."""
    if len(code) > MAX_INPUT:
        return None
    digits = code.replace(" ", "").replace("-", "")
    if len(digits) != DIGITS or not digits.isascii() or not digits.isdigit():
        return None
    return digits


def step_at(now: datetime) -> int:
    return int(now.timestamp()) // INTERVAL


def matching_step(secret: str, code: str, now: datetime, after: int | None) -> int | None:
    """The time-step `code` belongs to (within DRIFT of now), if it is later
    than `after` (the step of the last accepted code); else None. Every
    candidate step is compared, in constant time, so the answer's timing says
    nothing about which step nearly matched."""
    digits = normalized(code)
    if digits is None:
        return None
    otp = pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL)
    now_step = step_at(now)
    found = None
    for step in range(now_step - DRIFT, now_step + DRIFT + 1):
        if hmac.compare_digest(otp.generate_otp(step), digits) and found is None:
            found = step
    if found is None or (after is not None and found <= after):
        return None
    return found


def code_at(secret: str, now: datetime) -> str:
    """The code an app shows at `now` (tests, docs)."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL).at(now)
