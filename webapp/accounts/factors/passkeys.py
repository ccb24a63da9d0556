"""Passkeys' WebAuthn ceremonies, with the `webauthn` package: the options a
browser passes to `navigator.credentials.create()`/`.get()`, and checking
what the authenticator answered (origin, RP ID, challenge, signature, sign
count). The relying party is `BASE_URL`: its origin, and its host as RP ID.
Pure: no database, no request (challenges.py keeps the challenges).

Choices (NIST SP 800-63B, and what allauth and Kratos do):
- discoverable credentials (resident keys) are required, so "Sign in with
  a passkey" needs no address typed;
- user verification is *required* where the passkey is the only factor
  (passwordless sign-in) and *preferred* elsewhere (after the password, or to
  confirm it's you, it is a possession factor like the app's code);
- attestation "none": the product does not restrict which authenticators
  people use, so it asks for no proof of their make."""

from __future__ import annotations

import base64
import ipaddress
import json
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

import webauthn
from webauthn.helpers import parse_client_data_json
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    AuthenticatorTransport,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

TIMEOUT_MS = 300_000  # as long as a challenge is good (challenges.py)
MAX_RESPONSE = 16_384  # longer answers are refused before any parsing
TRANSPORTS = {t.value for t in AuthenticatorTransport}
# What a malformed answer makes parsing raise, besides the package's own
# WebAuthnException (which every refusal of a well-formed one is).
BROKEN = (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError)


class Invalid(ValueError):
    """The answer is not a valid WebAuthn response for what was asked."""


@dataclass(frozen=True)
class RelyingParty:
    id: str  # the host of BASE_URL
    origin: str  # scheme://host[:port] of BASE_URL
    name: str

    @classmethod
    def of(cls, base_url: str) -> RelyingParty:
        parts = urlsplit(base_url)
        host = parts.hostname or "localhost"
        return cls(host, f"{parts.scheme}://{parts.netloc}", host)

    @property
    def on_ip_address(self) -> bool:
        """Its host is an IP address: browsers refuse it as an RP ID (a
        SecurityError), so no passkey can be added or used there."""
        try:
            ipaddress.ip_address(self.id)
        except ValueError:
            return False
        return True


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_user_handle() -> str:
    """An account's opaque WebAuthn id: 32 random bytes (never the email or id)."""
    return b64(secrets.token_bytes(32))


def _descriptors(credential_ids: list[str]) -> list[PublicKeyCredentialDescriptor]:
    return [PublicKeyCredentialDescriptor(id=unb64(c)) for c in credential_ids]


def registration_options(
    rp: RelyingParty,
    challenge: bytes,
    user_handle: str,
    account_name: str,
    existing: list[str],
) -> str:
    """The JSON for `create()`; `existing`: the account's passkeys, not to
    be registered twice on one authenticator."""
    options = webauthn.generate_registration_options(
        rp_id=rp.id,
        rp_name=rp.name,
        user_id=unb64(user_handle),
        user_name=account_name,
        challenge=challenge,
        timeout=TIMEOUT_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            require_resident_key=True,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=_descriptors(existing),
    )
    return str(webauthn.options_to_json(options))


def authentication_options(
    rp: RelyingParty, challenge: bytes, allowed: list[str] | None, verify_user: bool
) -> str:
    """The JSON for `get()`: `allowed` None lets the authenticator offer any
    passkey of this site (passwordless sign-in)."""
    options = webauthn.generate_authentication_options(
        rp_id=rp.id,
        challenge=challenge,
        timeout=TIMEOUT_MS,
        allow_credentials=_descriptors(allowed) if allowed is not None else None,
        user_verification=(
            UserVerificationRequirement.REQUIRED
            if verify_user
            else UserVerificationRequirement.PREFERRED
        ),
    )
    return str(webauthn.options_to_json(options))


@dataclass(frozen=True)
class Answer:
    """What a browser posted, read just enough to find its challenge and key."""

    raw: dict[str, object]
    challenge: str  # base64url, as handed out
    credential_id: str  # base64url
    user_handle: str | None  # base64url; sign-in answers of discoverable passkeys


def read(text: str) -> Answer:
    """Parse a posted response; Invalid when it is not even shaped like one."""
    if not text or len(text) > MAX_RESPONSE:
        raise Invalid("missing or too long")
    try:
        raw = json.loads(text)
        response = raw["response"]
        client_data = parse_client_data_json(unb64(response["clientDataJSON"]))
        credential_id = str(raw["rawId"])
        handle = response.get("userHandle")
        unb64(credential_id)
    except (WebAuthnException, *BROKEN) as exc:
        raise Invalid("malformed") from exc
    if not isinstance(raw, dict) or not credential_id:
        raise Invalid("malformed")
    return Answer(raw, b64(client_data.challenge), credential_id, handle or None)


@dataclass(frozen=True)
class NewPasskey:
    credential_id: str
    public_key: str
    sign_count: int
    transports: str


def verify_registration(rp: RelyingParty, answer: Answer) -> NewPasskey:
    try:
        verified = webauthn.verify_registration_response(
            credential=answer.raw,
            expected_challenge=unb64(answer.challenge),
            expected_rp_id=rp.id,
            expected_origin=rp.origin,
        )
    except (WebAuthnException, *BROKEN) as exc:
        raise Invalid(str(exc)) from exc
    response = answer.raw.get("response")
    listed = response.get("transports") if isinstance(response, dict) else None
    transports = [t for t in listed if t in TRANSPORTS] if isinstance(listed, list) else []
    return NewPasskey(
        b64(verified.credential_id),
        b64(verified.credential_public_key),
        verified.sign_count,
        " ".join(sorted(set(transports))),
    )


def verify_authentication(
    rp: RelyingParty, answer: Answer, public_key: str, sign_count: int, verify_user: bool
) -> int:
    """The new sign count; Invalid on a wrong signature, origin, RP ID or
    challenge, without user verification where it is required, or when the
    sign count went back (a cloned authenticator)."""
    try:
        verified = webauthn.verify_authentication_response(
            credential=answer.raw,
            expected_challenge=unb64(answer.challenge),
            expected_rp_id=rp.id,
            expected_origin=rp.origin,
            credential_public_key=unb64(public_key),
            credential_current_sign_count=sign_count,
            require_user_verification=verify_user,
        )
    except (WebAuthnException, *BROKEN) as exc:
        raise Invalid(str(exc)) from exc
    return int(verified.new_sign_count)
