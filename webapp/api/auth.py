"""Who is asking: the bearer token of an API request, its scope and its rate.

Only `Authorization: Bearer <token>` authenticates an API request. A session
cookie never does (nothing here reads the session), so a page that makes a
signed-in browser post to the API gets 401: that is why the API needs no
CSRF token. The token is looked up on every request: a revoked one is
refused on its next request, by every process."""

from __future__ import annotations

from flask import current_app, request
from limits import RateLimitItem, parse

from webapp.accounts import ratelimit
from webapp.api import tokens
from webapp.api.problems import Problem
from webapp.core import clock, db

CHALLENGE = 'Bearer realm="api"'
LIMIT_NAME = "api-token"
_parsed: dict[str, RateLimitItem] = {}


def _rate() -> RateLimitItem:
    text = current_app.config["APP_CONFIG"].api_rate_limit
    item = _parsed.get(text)
    if item is None:
        item = _parsed[text] = parse(text)
    return item


def bearer_secret() -> str:
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Problem(
            "unauthorized",
            "send the API token as `Authorization: Bearer <token>`",
            headers={"WWW-Authenticate": CHALLENGE},
        )
    return secret.strip()


def authenticate(scope: str | None) -> tokens.Token:
    """The request's live token, counted against its rate and holding `scope`;
    else Problem 401, 429 or 403."""
    secret = bearer_secret()
    with db.reading() as conn:
        token = tokens.authenticate(conn, secret)
    if token is None:
        raise Problem(
            "unauthorized",
            "the token is unknown or revoked",
            headers={"WWW-Authenticate": CHALLENGE + ', error="invalid_token"'},
        )
    wait = ratelimit.hit_limit(_rate(), LIMIT_NAME, token.id)
    if wait is not None:
        raise Problem(
            "rate-limited",
            f"at most {current_app.config['APP_CONFIG'].api_rate_limit} per token",
            headers={"Retry-After": str(wait)},
        )
    if scope is not None and scope not in token.scopes:
        raise Problem(
            "forbidden",
            f"this needs a token with the scope {scope}",
            headers={
                "WWW-Authenticate": f'{CHALLENGE}, error="insufficient_scope", scope="{scope}"'
            },
        )
    now = clock.now()
    if tokens.last_use_due(token, now):
        with db.transaction() as conn:
            tokens.record_use(conn, token.id, now)
    return token
