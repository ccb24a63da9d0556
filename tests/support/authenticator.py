"""A software passkey authenticator (ES256, "none" attestation), built with
`cryptography` and the CBOR encoder the `webauthn` package ships: it answers
the options the server hands out as a browser and a platform authenticator
would, so the server's checks run end to end without a browser. Each answer
can be tampered with afterwards (tests of hostile input)."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from webauthn.helpers import encode_cbor

from webapp.accounts.factors.passkeys import b64, unb64

UP, UV, AT = 0x01, 0x04, 0x40


@dataclass
class Credential:
    id: bytes
    key: ec.EllipticCurvePrivateKey
    rp_id: str
    user_handle: bytes
    sign_count: int = 0

    def cose_public_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        x, y = numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")
        return bytes(encode_cbor({1: 2, 3: -7, -1: 1, -2: x, -3: y}))


def client_data(kind: str, challenge: str, origin: str) -> bytes:
    return json.dumps(
        {"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False}
    ).encode()


@dataclass
class Authenticator:
    origin: str = "http://localhost"
    verify_user: bool = True
    credentials: list[Credential] = field(default_factory=list)
    counts: bool = True  # False: the sign count stays 0, as many passkeys do

    def _auth_data(self, rp_id: str, flags: int, count: int, attested: bytes = b"") -> bytes:
        rp_hash = hashlib.sha256(rp_id.encode()).digest()
        return rp_hash + bytes([flags]) + struct.pack(">I", count) + attested

    def _flags(self) -> int:
        return UP | (UV if self.verify_user else 0)

    def create(self, options: dict[str, Any]) -> dict[str, Any]:
        """The answer to `navigator.credentials.create()` with these options."""
        rp_id = options["rp"]["id"]
        cred = Credential(
            os.urandom(32), ec.generate_private_key(ec.SECP256R1()), rp_id,
            unb64(options["user"]["id"]),
        )  # fmt: skip
        self.credentials.append(cred)
        attested = bytes(16) + struct.pack(">H", len(cred.id)) + cred.id + cred.cose_public_key()
        auth_data = self._auth_data(rp_id, self._flags() | AT, 0, attested)
        attestation = encode_cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})
        data = client_data("webauthn.create", options["challenge"], self.origin)
        return {
            "id": b64(cred.id),
            "rawId": b64(cred.id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(data),
                "attestationObject": b64(bytes(attestation)),
                "transports": ["internal", "hybrid"],
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }

    def get(self, options: dict[str, Any], cred: Credential | None = None) -> dict[str, Any]:
        """The answer to `navigator.credentials.get()`: with `cred`, or the one
        the options allow (or, with none listed, this site's first)."""
        if cred is None:
            allowed = {unb64(c["id"]) for c in options.get("allowCredentials") or []}
            cred = next(
                c
                for c in self.credentials
                if c.rp_id == options["rpId"] and (not allowed or c.id in allowed)
            )
        if self.counts:
            cred.sign_count += 1
        auth_data = self._auth_data(cred.rp_id, self._flags(), cred.sign_count)
        data = client_data("webauthn.get", options["challenge"], self.origin)
        return self.sign(cred, auth_data, data)

    def sign(self, cred: Credential, auth_data: bytes, data: bytes) -> dict[str, Any]:
        signed = auth_data + hashlib.sha256(data).digest()
        signature = cred.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return {
            "id": b64(cred.id),
            "rawId": b64(cred.id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(data),
                "authenticatorData": b64(auth_data),
                "signature": b64(signature),
                "userHandle": b64(cred.user_handle),
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }
