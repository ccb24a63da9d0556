"""Talking to an identity provider: the authorization request (code flow,
PKCE S256, `state`, `nonce`), the code exchange, and what the answer proves.

OpenID Connect: the provider's metadata by discovery (`<issuer>/.well-known/
openid-configuration`, kept an hour), the `id_token` validated by Authlib's
JOSE library (joserfc): its signature by a key of the provider's JWKS (fetched
again once when a `kid` is unknown: the provider rotated its keys), `iss` the
configured issuer exactly, `aud` our client id (`azp` too when there are
several), `exp` and `iat` by the app's clock, `nonce` the one this browser
sent. GitHub (OAuth 2, no id_token): its user and emails API, where only the
verified primary address counts. Nothing is stored: the tokens are used for
these calls and dropped."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import errors as jose_errors
from joserfc import jwt
from joserfc.jwk import KeySet

from webapp.core import clock
from webapp.core.identity_providers import GITHUB, ProviderSettings

log = logging.getLogger(__name__)

TIMEOUT = 5.0
METADATA_SECONDS = 3600
LEEWAY = 60  # seconds of clock difference allowed on exp/iat
ID_TOKEN_ALGS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
GITHUB_SCOPE = "read:user user:email"
OIDC_SCOPE = "openid email profile"

# Why a round trip failed (i18n keys of the sign-in page's message).
DENIED = "identities.errors.denied"
STATE = "identities.errors.state"
EXPIRED = "identities.errors.expired"
REFUSED = "identities.errors.refused"  # the provider refused the code (spent, expired)
TOKEN = "identities.errors.token"  # the id_token does not verify, or is not for us
TOKEN_EXPIRED = "identities.errors.tokenExpired"
NONCE = "identities.errors.nonce"
ISSUER = "identities.errors.issuer"  # an answer from another provider (mix-up)
UNAVAILABLE = "identities.errors.unavailable"
NO_SUBJECT = "identities.errors.token"


class ProviderError(Exception):
    def __init__(self, key: str, detail: str = "") -> None:
        super().__init__(detail or key)
        self.key = key


@dataclass(frozen=True)
class Claims:
    """Who the provider says this is."""

    subject: str
    email: str | None
    email_verified: bool


@dataclass(frozen=True)
class Request:
    """One authorization request: where to send the browser, and what this
    browser's session keeps to check the answer."""

    url: str
    state: str
    nonce: str
    verifier: str


# --- metadata and keys (kept per issuer, shared by the app's threads) -----------
_lock = threading.Lock()
_metadata: dict[str, tuple[float, dict[str, Any]]] = {}
_jwks: dict[str, KeySet] = {}


def _httpx() -> Any:
    """httpx, imported at the first round trip (a `flask ...` command never pays for it)."""
    import httpx

    return httpx


def _get(url: str, **kwargs: Any) -> Any:
    httpx = _httpx()
    try:
        resp = httpx.get(url, timeout=TIMEOUT, follow_redirects=False, **kwargs)
    except httpx.HTTPError as exc:
        raise ProviderError(UNAVAILABLE, f"{url}: {exc}") from exc
    if resp.status_code != 200:
        raise ProviderError(UNAVAILABLE, f"{url}: HTTP {resp.status_code}")
    return resp


def metadata(p: ProviderSettings) -> dict[str, Any]:
    now = time.monotonic()
    with _lock:
        kept = _metadata.get(p.issuer)
    if kept and now - kept[0] < METADATA_SECONDS:
        return kept[1]
    meta = _get(p.issuer.rstrip("/") + "/.well-known/openid-configuration").json()
    # The document must name the issuer it was fetched for (OpenID Connect Discovery 4.3).
    if not isinstance(meta, dict) or meta.get("issuer") != p.issuer:
        raise ProviderError(UNAVAILABLE, f"discovery of {p.issuer} names {meta.get('issuer')!r}")
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(meta.get(key), str):
            raise ProviderError(UNAVAILABLE, f"discovery of {p.issuer} has no {key}")
    with _lock:
        _metadata[p.issuer] = (now, meta)
    return meta


def _keys(p: ProviderSettings, refresh: bool = False) -> KeySet:
    with _lock:
        kept = _jwks.get(p.issuer)
    if kept is not None and not refresh:
        return kept
    keys = KeySet.import_key_set(_get(metadata(p)["jwks_uri"]).json())
    with _lock:
        _jwks[p.issuer] = keys
    return keys


def known_endpoints(p: ProviderSettings) -> list[str]:
    """The authorization endpoint discovery named, if it did already (no request)."""
    with _lock:
        kept = _metadata.get(p.issuer)
    return [kept[1]["authorization_endpoint"]] if kept else []


def forget(p: ProviderSettings) -> None:
    """Drop what is kept of `p` (tests; a provider reconfigured)."""
    with _lock:
        _metadata.pop(p.issuer, None)
        _jwks.pop(p.issuer, None)


# --- the authorization request ---------------------------------------------------
def authorization_request(p: ProviderSettings, redirect_uri: str) -> Request:
    state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
    if p.kind == GITHUB:
        endpoint, scope, extra = p.web_url + "/login/oauth/authorize", GITHUB_SCOPE, {}
    else:
        endpoint, scope = metadata(p)["authorization_endpoint"], OIDC_SCOPE
        extra = {"nonce": nonce}
    url = prepare_grant_uri(
        endpoint,
        p.client_id,
        "code",
        redirect_uri=redirect_uri,
        scope=scope,
        state=state,
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
        **extra,
    )
    return Request(url, state, nonce, verifier)


# --- the answer ------------------------------------------------------------------
def _token(
    p: ProviderSettings, endpoint: str, code: str, redirect_uri: str, verifier: str
) -> dict[str, Any]:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    }
    # GitHub takes the client's secret in the body; OpenID providers in the
    # Authorization header (client_secret_basic, the one every provider supports).
    if p.kind == GITHUB:
        data.update(client_id=p.client_id, client_secret=p.client_secret)
    auth = None if p.kind == GITHUB else (p.client_id, p.client_secret)
    httpx = _httpx()
    try:
        resp = httpx.post(
            endpoint, data=data, auth=auth, headers={"Accept": "application/json"}, timeout=TIMEOUT
        )
    except httpx.HTTPError as exc:
        raise ProviderError(UNAVAILABLE, f"{endpoint}: {exc}") from exc
    try:
        body = resp.json()
    except ValueError:
        body = {}
    if resp.status_code != 200 or not isinstance(body, dict) or "error" in body:
        error = body.get("error") if isinstance(body, dict) else None
        raise ProviderError(REFUSED, f"token endpoint: HTTP {resp.status_code} {error}")
    return body


def _id_token(p: ProviderSettings, raw: object, nonce: str) -> dict[str, Any]:
    if not isinstance(raw, str) or len(raw) > 16384:
        raise ProviderError(TOKEN, "no id_token")
    try:
        try:
            token = jwt.decode(raw, _keys(p), algorithms=list(ID_TOKEN_ALGS))
        except (jose_errors.InvalidKeyIdError, jose_errors.MissingKeyError):
            token = jwt.decode(raw, _keys(p, refresh=True), algorithms=list(ID_TOKEN_ALGS))
    except jose_errors.JoseError as exc:
        raise ProviderError(TOKEN, f"id_token: {exc}") from exc
    except ValueError as exc:
        raise ProviderError(TOKEN, f"id_token: {exc}") from exc
    claims = dict(token.claims)
    if claims.get("iss") != p.issuer:
        raise ProviderError(ISSUER, f"id_token from {claims.get('iss')!r}")
    registry = jwt.JWTClaimsRegistry(
        now=lambda: int(clock.now().timestamp()),
        leeway=LEEWAY,
        iss={"essential": True, "value": p.issuer},
        aud={"essential": True, "value": p.client_id},
        sub={"essential": True},
        exp={"essential": True},
        iat={"essential": True},
    )
    try:
        registry.validate(claims)
    except jose_errors.ExpiredTokenError as exc:
        raise ProviderError(TOKEN_EXPIRED, f"id_token: {exc}") from exc
    except jose_errors.JoseError as exc:
        raise ProviderError(TOKEN, f"id_token: {exc}") from exc
    aud = claims["aud"]
    if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != p.client_id:
        raise ProviderError(TOKEN, "id_token: azp is not ours")
    if claims.get("nonce") != nonce:
        raise ProviderError(NONCE, "id_token: another nonce")
    return claims


def _address(claims: dict[str, Any]) -> tuple[str | None, bool]:
    email = claims.get("email")
    if not isinstance(email, str) or not email or len(email) > 320:
        return None, False
    verified = claims.get("email_verified")
    return email, verified is True or verified == "true"


def _oidc(
    p: ProviderSettings, args: dict[str, str], redirect_uri: str, nonce: str, verifier: str
) -> Claims:
    meta = metadata(p)
    # RFC 9207: an `iss` in the answer must be this provider's (a mix-up otherwise).
    if "iss" in args and args["iss"] != p.issuer:
        raise ProviderError(ISSUER, f"answer from {args['iss']!r}")
    body = _token(p, meta["token_endpoint"], args["code"], redirect_uri, verifier)
    claims = _id_token(p, body.get("id_token"), nonce)
    email, verified = _address(claims)
    if (
        email is None
        and isinstance(meta.get("userinfo_endpoint"), str)
        and body.get("access_token")
    ):
        info = _get(
            meta["userinfo_endpoint"], headers={"Authorization": f"Bearer {body['access_token']}"}
        ).json()
        # The userinfo's `sub` must be the id_token's (OpenID Connect Core 5.3.2).
        if isinstance(info, dict) and info.get("sub") == claims["sub"]:
            email, verified = _address(info)
    return Claims(str(claims["sub"])[:255], email, verified)


def _github(p: ProviderSettings, args: dict[str, str], redirect_uri: str, verifier: str) -> Claims:
    body = _token(p, p.web_url + "/login/oauth/access_token", args["code"], redirect_uri, verifier)
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise ProviderError(REFUSED, "no access_token")
    headers = {"Authorization": f"Bearer {access}", "Accept": "application/vnd.github+json"}
    user = _get(p.api_url + "/user", headers=headers).json()
    if not isinstance(user, dict) or not isinstance(user.get("id"), int):
        raise ProviderError(UNAVAILABLE, "GitHub user without id")
    emails = _get(p.api_url + "/user/emails", headers=headers).json()
    primary = next(
        (
            e.get("email")
            for e in (emails if isinstance(emails, list) else [])
            if isinstance(e, dict) and e.get("primary") is True and e.get("verified") is True
        ),
        None,
    )
    email = primary if isinstance(primary, str) and 0 < len(primary) <= 320 else None
    return Claims(str(user["id"]), email, email is not None)


def finish(
    p: ProviderSettings, args: dict[str, str], redirect_uri: str, nonce: str, verifier: str
) -> Claims:
    """Who the provider's answer (`args`: the callback's query, its `state`
    already checked against this browser's) says this is; `ProviderError`
    with the reason otherwise."""
    if "error" in args or "code" not in args:
        raise ProviderError(DENIED, f"provider answered {args.get('error')!r}")
    if len(args["code"]) > 4096:
        raise ProviderError(REFUSED, "code too long")
    if p.kind == GITHUB:
        return _github(p, args, redirect_uri, verifier)
    return _oidc(p, args, redirect_uri, nonce, verifier)
