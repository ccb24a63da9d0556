"""Rate limits (Flask-Limiter's storage and moving-window strategy).

Checked explicitly in the views rather than by decorators, because the
interesting keys (the account being signed in to, the signed-in user) come
from the form or the session, and because a limited request must answer with
the form it came from (429 with a banner), not a generic error page.
"""

from __future__ import annotations

import logging

from flask import Flask, current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from webapp.config import Config

log = logging.getLogger(__name__)

# name -> (limit, what it protects)
LIMITS = {
    "login-ip": "30 per minute",  # sign-in attempts per client address
    "login-account": "5 per 5 minutes",  # failed sign-ins per account (address typed)
    "password-check": "5 per minute",  # current-password checks per signed-in user
    "register-ip": "20 per minute",  # registrations per client address
    "reset-ip": "20 per hour",  # "Forgot password?" requests per client address
    "reset-account": "3 per hour",  # reset links per address typed (more: no mail)
    "export-download-ip": "30 per minute",  # export downloads by the mail's link
    "deletion-link-ip": "10 per minute",  # signed-out deletion: requests and confirms
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
    # While the shared storage (Redis) is unreachable, limits are counted in
    # this process instead: sign-in keeps working and keeps being limited.
    app.extensions["accounts.limiter_fallback"] = MovingWindowRateLimiter(MemoryStorage())


def _check(method: str, name: str, key: str) -> bool:
    limit = parse(LIMITS[name])
    try:
        return bool(
            getattr(current_app.extensions["accounts.limiter"].limiter, method)(limit, name, key)
        )
    except Exception as exc:  # storage down: never fail the request because of it
        log.warning(
            "rate-limit storage unreachable; counting in this process",
            extra={"limit": name, "error_class": type(exc).__name__},
        )
        fallback = current_app.extensions["accounts.limiter_fallback"]
        return bool(getattr(fallback, method)(limit, name, key))


def hit(name: str, key: str) -> bool:
    """Count one attempt; False when the limit is already used up."""
    return _check("hit", name, key)


def allowed(name: str, key: str) -> bool:
    """Whether one more attempt would be allowed, without counting it."""
    return _check("test", name, key)


def client_ip() -> str:
    return request.remote_addr or "unknown"
