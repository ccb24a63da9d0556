"""Rate limits (Flask-Limiter's storage and moving-window strategy).

Checked explicitly in the views rather than by decorators, because the
interesting keys (the account being signed in to, the signed-in user) come
from the form or the session, and because a limited request must answer with
the form it came from (429 with a banner), not a generic error page.
"""

from __future__ import annotations

from flask import Flask, current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import parse

from webapp.config import Config

# name -> (limit, what it protects)
LIMITS = {
    "login-ip": "30 per minute",  # sign-in attempts per client address
    "login-account": "5 per 5 minutes",  # failed sign-ins per account (address typed)
    "password-check": "5 per minute",  # current-password checks per signed-in user
    "register-ip": "20 per minute",  # registrations per client address
}


def storage_uri(cfg: Config) -> str:
    if cfg.ratelimit_storage:
        return cfg.ratelimit_storage
    if cfg.testing:
        return "memory://"
    if cfg.redis_url.startswith("unix://"):
        return "redis+unix://" + cfg.redis_url[len("unix://") :]
    return cfg.redis_url


def init_app(app: Flask) -> None:
    cfg: Config = app.config["APP_CONFIG"]
    limiter = Limiter(
        key_func=get_remote_address,
        app=app,
        storage_uri=storage_uri(cfg),
        strategy="moving-window",
        default_limits=[],
        headers_enabled=False,
    )
    app.extensions["accounts.limiter"] = limiter


def _strategy():  # type: ignore[no-untyped-def]
    return current_app.extensions["accounts.limiter"].limiter


def hit(name: str, key: str) -> bool:
    """Count one attempt; False when the limit is already used up."""
    return bool(_strategy().hit(parse(LIMITS[name]), name, key))


def allowed(name: str, key: str) -> bool:
    """Whether one more attempt would be allowed, without counting it."""
    return bool(_strategy().test(parse(LIMITS[name]), name, key))


def client_ip() -> str:
    return request.remote_addr or "unknown"
