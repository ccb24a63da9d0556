"""Passkeys as the tests use them: asking the server for options as
static/passkeys.js does (a POST with the page's CSRF token), answering them
with the software authenticator, and posting the answer as the form would."""

from __future__ import annotations

import json
from typing import Any

from flask.testing import FlaskClient

from tests.support.authenticator import Authenticator
from tests.support.web import csrf_token

ADD_OPTIONS = "/profile/factors/passkeys/options"
ADD = "/profile/factors/passkeys/add"
REMOVE = "/profile/factors/passkeys/remove"
REAUTH_OPTIONS = "/profile/factors/passkeys/confirm-identity/options"
REAUTH = "/profile/factors/passkeys/confirm-identity"
SIGNIN_OPTIONS = "/login/passkey/options"
SIGNIN = "/login/passkey"
STEP_OPTIONS = "/login/passkey-step/options"
STEP = "/login/passkey-step"


def page_of(path: str) -> str:
    if path.startswith("/profile"):
        return "/profile"
    return STEP if path.startswith(STEP) else "/login"


def options(client: FlaskClient, path: str, **form: str) -> Any:
    """The options answer (a response: its JSON when 200)."""
    token = csrf_token(client, page_of(path))
    return client.post(path, data=form, headers={"X-CSRFToken": token})


def options_json(client: FlaskClient, path: str, **form: str) -> dict[str, Any]:
    r = options(client, path, **form)
    assert r.status_code == 200, r.get_data(as_text=True)[:500]
    return r.get_json()  # type: ignore[no-any-return]


def send(client: FlaskClient, path: str, answer: Any, htmx: bool = False, **form: str) -> Any:
    """Post an answer (a dict, or text as it is) as the passkey form does."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    data = {"credential": text, "client_error": "", **form}
    data["csrf_token"] = csrf_token(client, page_of(path))
    return client.post(path, data=data, headers={"HX-Request": "true"} if htmx else {})


def add(client: FlaskClient, auth: Authenticator, name: str = "Laptop") -> Any:
    """Add a passkey through the profile (the proof of identity must be fresh)."""
    answer = auth.create(options_json(client, ADD_OPTIONS, name=name))
    return send(client, ADD, answer, htmx=True, name=name)


def sign_in(client: FlaskClient, auth: Authenticator, **query: str) -> Any:
    """ "Sign in with a passkey" on /login."""
    answer = auth.get(options_json(client, SIGNIN_OPTIONS))
    suffix = f"?next={query['next']}" if "next" in query else ""
    return send(client, SIGNIN + suffix, answer)
