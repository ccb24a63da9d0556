"""One round trip through a provider, held in this browser's session: which
provider, why (sign in, or link to the signed-in account), the `state`,
`nonce` and PKCE verifier the answer must match, where to go next, and since
when (an answer after `LIFETIME` is refused). A new round trip replaces the
one pending; the answer spends it, right or wrong, so a code or a state is
never taken twice."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from flask import current_app, session

from webapp.accounts.identities import protocol
from webapp.accounts.identities.protocol import STATE, Claims, ProviderError
from webapp.core import clock
from webapp.core.identity_providers import ProviderSettings

SESSION_KEY = "identity_flow"
LIFETIME = 600  # seconds for the person to answer at the provider
SIGN_IN, LINK, REAUTH = "sign-in", "link", "reauth"  # REAUTH: "Confirm it's you"


def providers() -> tuple[ProviderSettings, ...]:
    return tuple(current_app.config["APP_CONFIG"].identity_providers)


def provider(name: str) -> ProviderSettings | None:
    return next((p for p in providers() if p.name == name), None)


def redirect_uri(p: ProviderSettings) -> str:
    """Exactly as registered at the provider: BASE_URL/login/with/<name>/callback."""
    return f"{current_app.config['APP_CONFIG'].base_url}/login/with/{p.name}/callback"


def begin(
    p: ProviderSettings, purpose: str, next_url: str | None, user_id: str | None = None
) -> str:
    """The provider's URL to send the browser to."""
    req = protocol.authorization_request(p, redirect_uri(p))
    session[SESSION_KEY] = {
        "p": p.name,
        "purpose": purpose,
        "state": req.state,
        "nonce": req.nonce,
        "verifier": req.verifier,
        "next": next_url,
        "user": user_id,
        "at": clock.now().timestamp(),
    }
    return req.url


@dataclass(frozen=True)
class Answer:
    claims: Claims
    purpose: str
    next_url: str | None
    user_id: str | None


def pending_purpose() -> str | None:
    info = session.get(SESSION_KEY)
    return info.get("purpose") if isinstance(info, dict) else None


def finish(p: ProviderSettings, args: dict[str, str]) -> Answer:
    """The answer at `p`'s callback, checked; `ProviderError` otherwise."""
    info: Any = session.pop(SESSION_KEY, None)
    if not isinstance(info, dict) or info.get("p") != p.name:
        raise ProviderError(STATE, "no round trip of this provider pending here")
    state = args.get("state") or ""
    if not secrets.compare_digest(state.encode(), str(info.get("state")).encode()):
        raise ProviderError(STATE, "state does not match")
    age = clock.now().timestamp() - float(info.get("at") or 0)
    if not 0 <= age <= LIFETIME:
        raise ProviderError(protocol.EXPIRED, f"answered after {age:.0f} s")
    claims = protocol.finish(p, args, redirect_uri(p), str(info["nonce"]), str(info["verifier"]))
    return Answer(claims, str(info.get("purpose")), info.get("next"), info.get("user"))
