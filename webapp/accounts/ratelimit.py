"""Rate limits (the `limits` library's storage and moving-window strategy, which
Flask-Limiter is built on).

Checked explicitly in the views rather than by decorators, because the
interesting keys (the account being signed in to, the signed-in user) come
from the form or the session, and because a limited request must answer with
the form it came from (429 with a banner), not a generic error page. So no
per-request hook is installed: Flask-Limiter's before/after-request handlers
(which look for decorator and default limits we never declare) cost every
request, including /healthz and static files, for nothing. The limit strings
are parsed once, at import.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from flask import Flask, current_app, request
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from webapp.core.config import Config
from webapp.metrics.instruments import RATE_LIMIT_HITS

log = logging.getLogger(__name__)

# name -> (limit, what it protects)
LIMITS = {
    "login-ip": "30 per minute",  # sign-in attempts per client address
    "login-account": "5 per 5 minutes",  # failed sign-ins per account (address typed)
    "password-check": "5 per minute",  # failed current-password checks per signed-in user
    "second-factor": "5 per 5 minutes",  # failed second-factor codes per account
    "register-ip": "20 per minute",  # registrations per client address
    "reset-ip": "20 per hour",  # "Forgot password?" requests per client address
    "reset-account": "3 per hour",  # reset links per address typed (more: no mail)
    "signin-code-account": "3 per 15 minutes",  # sign-in codes mailed per address typed
    "passkey-autofill-ip": "60 per minute",  # passkey autofill requests per client address
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


_parsed: dict[str, RateLimitItem] = {}


def _limit(name: str) -> RateLimitItem:
    """`LIMITS[name]` parsed (once per value: the bench raises LIMITS before start-up)."""
    text = LIMITS[name]
    item = _parsed.get(text)
    if item is None:
        item = _parsed[text] = parse(text)
    return item


def init_app(app: Flask) -> None:
    cfg: Config = app.config["APP_CONFIG"]
    storage = storage_from_string(storage_uri(cfg))
    app.extensions["accounts.limiter"] = MovingWindowRateLimiter(storage)
    # While the shared storage (Redis) is unreachable, limits are counted in
    # this process instead: sign-in keeps working and keeps being limited.
    app.extensions["accounts.limiter_fallback"] = MovingWindowRateLimiter(MemoryStorage())


def _check(method: str, name: str, key: str) -> bool:
    ok = bool(_ask(method, name, key))
    if not ok:
        RATE_LIMIT_HITS.labels(name).inc()
    return ok


def _ask(method: str, name: str, key: str, limit: RateLimitItem | None = None) -> Any:
    limit = limit or _limit(name)
    try:
        return getattr(current_app.extensions["accounts.limiter"], method)(limit, name, key)
    except Exception as exc:  # storage down: never fail the request because of it
        log.warning(
            "rate-limit storage unreachable; counting in this process",
            extra={"limit": name, "error_class": type(exc).__name__},
        )
        fallback = current_app.extensions["accounts.limiter_fallback"]
        return getattr(fallback, method)(limit, name, key)


def hit_limit(limit: RateLimitItem, name: str, key: str) -> int | None:
    """Count one request against a limit of the caller's own (the API's per
    token, from its setting), in the same storage: None when allowed, else the
    seconds until the next request would be (at least 1)."""
    if _ask("hit", name, key, limit):
        return None
    RATE_LIMIT_HITS.labels(name).inc()
    stats = _ask("get_window_stats", name, key, limit)
    return max(1, math.ceil(stats.reset_time - time.time()))


def hit(name: str, key: str) -> bool:
    """Count one attempt; False when the limit is already used up."""
    return _check("hit", name, key)


def allowed(name: str, key: str) -> bool:
    """Whether one more attempt would be allowed, without counting it."""
    return _check("test", name, key)


def count(name: str, key: str) -> None:
    """Count one failed attempt, for a limit that counts failures only (asked
    with `allowed` first). The storage adds it atomically (a Lua script in
    Redis, a lock in memory), so failures at the same moment all count; one
    that finds the window already full adds nothing, as it is full anyway."""
    _ask("hit", name, key)


def client_ip() -> str:
    return request.remote_addr or "unknown"
