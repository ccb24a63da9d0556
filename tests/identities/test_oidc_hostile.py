"""Every hostile or broken answer at the callback: a clear message on the
sign-in page, and nobody signed in (no account made, no session).

The provider is real (idpyoidc's); where the attack needs an altered answer,
`op.tamper` stands between it and the app, as an attacker on the wire or a
compromised provider would, and re-signs with the provider's own key where
only the claim is to be wrong."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.identities.conftest import at_provider, authorize, round_trip
from tests.identities.op import Provider
from tests.support.accounts import user_row

ADDRESS = "eve@example.com"


@pytest.fixture
def eve(op: Provider) -> Provider:
    op.add_user("eve", ADDRESS)
    op.user = "eve"
    return op


def refused(client: FlaskClient, resp: Any, message: str) -> None:
    """The answer goes back to the sign-in page, which says `message`; nobody
    is signed in and no account was made."""
    assert resp.status_code == 302, resp.get_data(as_text=True)[:300]
    assert urlsplit(resp.headers["Location"]).path == "/login"
    page = client.get(resp.headers["Location"])
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and message in html, html[:3000]
    assert client.get("/profile").status_code == 302  # not signed in
    assert user_row(ADDRESS) is None


def _query(path: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}


def _with(path: str, **changes: str | None) -> str:
    q = _query(path)
    for k, v in changes.items():
        if v is None:
            q.pop(k, None)
        else:
            q[k] = v
    return f"{urlsplit(path).path}?{urlencode(q)}"


def test_the_round_trip_itself_signs_in(client: FlaskClient, eve: Provider) -> None:
    """The baseline the hostile cases differ from by one thing each."""
    assert round_trip(client).headers["Location"] == "/profile"
    assert user_row(ADDRESS) is not None


def test_a_wrong_state(client: FlaskClient, eve: Provider) -> None:
    callback = authorize(at_provider(client))
    resp = client.get(_with(callback, state="not-the-state-this-browser-sent"))
    refused(client, resp, "does not belong to a sign-in started in this browser")
    # The attempt spent the round trip: the right state does not work after it.
    refused(client, client.get(callback), "does not belong to a sign-in started in this browser")


def test_an_answer_for_another_browser(app: Flask, client: FlaskClient, eve: Provider) -> None:
    """Login CSRF: an attacker's callback (their code, their state) opened in
    the victim's browser, which started no round trip or another one."""
    attackers = authorize(at_provider(app.test_client()))
    at_provider(client)  # the victim's own round trip, pending
    refused(client, client.get(attackers), "does not belong to a sign-in started in this browser")


def test_a_replayed_code(app: Flask, client: FlaskClient, eve: Provider) -> None:
    url = at_provider(client)
    with client.session_transaction() as s:
        pending = dict(s["identity_flow"])
    callback = authorize(url)
    assert client.get(callback).headers["Location"] == "/profile"
    # The same code again, with the very state and verifier it was issued for:
    # the provider spent it.
    replay = app.test_client()
    with replay.session_transaction() as s:
        s["identity_flow"] = pending
    resp = replay.get(callback)
    assert resp.status_code == 302 and urlsplit(resp.headers["Location"]).path == "/login"
    html = replay.get(resp.headers["Location"]).get_data(as_text=True)
    assert "did not confirm this sign-in" in html
    assert replay.get("/profile").status_code == 302


def test_a_leaked_code_in_another_round_trip(
    app: Flask, client: FlaskClient, eve: Provider
) -> None:
    """The code without its PKCE verifier is worth nothing: an attacker who
    read it puts it in their own round trip (their state), and the provider refuses."""
    victims = authorize(at_provider(app.test_client()))
    attacker = client
    own = authorize(at_provider(attacker))
    resp = attacker.get(_with(own, code=_query(victims)["code"]))
    refused(attacker, resp, "did not confirm this sign-in")


def test_an_id_token_with_a_bad_signature(client: FlaskClient, eve: Provider) -> None:
    eve.tamper = lambda body: {
        **body,
        "id_token": eve.foreign_sign(eve.claims_of(body["id_token"])),
    }
    refused(client, round_trip(client), "could not be verified")


def test_an_id_token_altered_after_signing(client: FlaskClient, eve: Provider) -> None:
    def swap_subject(body: dict[str, Any]) -> dict[str, Any]:
        header, _, signature = body["id_token"].split(".")
        claims = {**eve.claims_of(body["id_token"]), "sub": "someone-else"}
        forged = eve.sign(claims).split(".")[1]  # a well-formed payload, the old signature
        return {**body, "id_token": f"{header}.{forged}.{signature}"}

    eve.tamper = swap_subject
    refused(client, round_trip(client), "could not be verified")


def test_an_id_token_for_another_audience(client: FlaskClient, eve: Provider) -> None:
    eve.tamper = lambda body: {
        **body,
        "id_token": eve.sign({**eve.claims_of(body["id_token"]), "aud": ["another-app"]}),
    }
    refused(client, round_trip(client), "could not be verified")


def test_an_expired_id_token(client: FlaskClient, eve: Provider) -> None:
    now = int(time.time())
    eve.tamper = lambda body: {
        **body,
        "id_token": eve.sign(
            {**eve.claims_of(body["id_token"]), "iat": now - 7200, "exp": now - 3600}
        ),
    }
    refused(client, round_trip(client), "has expired")


def test_a_wrong_nonce(client: FlaskClient, eve: Provider) -> None:
    eve.tamper = lambda body: {
        **body,
        "id_token": eve.sign({**eve.claims_of(body["id_token"]), "nonce": "another-sign-in"}),
    }
    refused(client, round_trip(client), "was not made for this sign-in")


def test_an_answer_after_the_round_trips_time(
    client: FlaskClient, eve: Provider, clock: Any
) -> None:
    callback = authorize(at_provider(client))
    clock.advance(601)
    refused(client, client.get(callback), "took too long")


def test_denied_at_the_provider(client: FlaskClient, eve: Provider) -> None:
    state = _query(at_provider(client))["state"]
    resp = client.get(
        f"/login/with/acme/callback?{urlencode({'error': 'access_denied', 'state': state})}"
    )
    refused(client, resp, "was cancelled or refused there")


def test_an_issuer_mix_up(ops: dict[str, Provider], client: FlaskClient, eve: Provider) -> None:
    """The browser started at Acme; the answer comes from the other configured
    provider (which plays along, answering to Acme's callback): refused by the
    `iss` of the answer, and without it by Acme, which never issued that code."""
    other = ops["other"]
    other.add_user("eve", ADDRESS)
    other.user = "eve"
    for strip_iss, message in (
        (False, "did not come from Acme"),
        (True, "did not confirm this sign-in"),
    ):
        url = urlsplit(at_provider(client, "acme"))
        q = _query(f"?{url.query}")
        q["redirect_uri"] = "http://localhost/login/with/acme/callback"
        at_other = f"{other.issuer}{url.path}?{urlencode(q)}"
        callback = authorize(at_other)
        assert _query(callback)["iss"] == other.issuer
        refused(client, client.get(_with(callback, iss=None) if strip_iss else callback), message)


def test_an_answer_at_the_other_providers_callback(
    ops: dict[str, Provider], client: FlaskClient, eve: Provider
) -> None:
    callback = authorize(at_provider(client, "acme"))
    resp = client.get(callback.replace("/login/with/acme/", "/login/with/other/"))
    refused(client, resp, "does not belong to a sign-in started in this browser")
