"""The device cookie: a long-lived, signed, random id that lets the product
recognise a browser it has seen before (the new-device alert), whoever signs in
with it. It says nothing about the person; the server keeps only its sha256 per
account (known.py). Set on each sign-in (the expiry moves on), kept after
signing out, `HttpOnly`, `SameSite=Lax`, and `Secure` by the rule of every
other cookie (`SESSION_COOKIE_SECURE`: on under an https BASE_URL).

A cookie whose signature does not check out, or that holds anything but an id,
counts as none: the browser is new."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta

from flask import Response, after_this_request, current_app, request
from itsdangerous import BadSignature, URLSafeSerializer

NAME = "device"
MAX_AGE = timedelta(days=400)  # the longest a browser keeps a cookie (Chromium's cap)
_SALT = "webapp.devices.cookie"
_ID = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)


def _signer() -> URLSafeSerializer:
    return URLSafeSerializer(current_app.config["SECRET_KEY"], salt=_SALT)


def sign(device_id: str) -> str:
    return str(_signer().dumps(device_id))


def read() -> str | None:
    """This browser's device id, if its cookie is one we signed."""
    raw = request.cookies.get(NAME)
    if not raw or len(raw) > 200:
        return None
    try:
        value = _signer().loads(raw)
    except BadSignature:
        return None
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def new_id() -> str:
    return secrets.token_urlsafe(32)


def keep(device_id: str) -> None:
    """Send the cookie with this request's answer."""
    signed = sign(device_id)

    @after_this_request
    def _set(resp: Response) -> Response:
        config = current_app.config
        resp.set_cookie(
            NAME,
            signed,
            max_age=int(MAX_AGE.total_seconds()),
            path="/",
            secure=bool(config.get("SESSION_COOKIE_SECURE")),
            httponly=True,
            samesite="Lax",
        )
        return resp
