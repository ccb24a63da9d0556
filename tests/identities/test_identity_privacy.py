"""Linked identities and the person's data rights: sealed in the events (as
addresses are), listed in the export (provider, address, dates; never a
token: none is kept), in "Your activity", deleted and shredded on erasure,
and left alone by an operator's `flask users reset-factors`."""

from __future__ import annotations

import json
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.identities.conftest import authorize
from tests.identities.op import Provider
from tests.support.accounts import PASSWORD, login, register, user_row
from tests.support.authenticator import Authenticator
from tests.support.passkeys import add
from tests.support.web import fetch, post, unzip
from webapp.accounts import crypto, erase_accounts
from webapp.accounts import events as ev
from webapp.accounts.identities.tables import user_identities
from webapp.core import db
from webapp.eventstore.tables import events
from webapp.privacy.tables import export_jobs

ADA = "ada@example.com"
AT_ACME = "ada.acme@example.com"


def linked(app: Flask, client: FlaskClient, op: Provider) -> None:
    """ada, signed in with her password, connects her Acme identity."""
    assert register(client, ADA).status_code == 200
    assert login(client, ADA).status_code == 302
    op.add_user("ada-acme", AT_ACME)
    op.user = "ada-acme"
    resp = post(client, "/profile/connected/connect", provider="acme")
    assert client.get(authorize(resp.headers["Location"])).status_code == 302


def payload(conn: Any, event_type: str) -> dict[str, Any]:
    raw = conn.execute(select(events.c.payload).where(events.c.type == event_type)).scalar_one()
    return json.loads(raw) if isinstance(raw, str) else raw  # type: ignore[no-any-return]


def test_export_lists_identities_and_no_token(
    app: Flask, client: FlaskClient, op: Provider, work: Any
) -> None:
    linked(app, client, op)
    post(client, "/privacy/export", htmx=True)
    work()
    with db.reading() as conn:
        job_id = conn.execute(select(export_jobs.c.id)).scalar_one()
    data = unzip(fetch(client, f"/privacy/exports/{job_id}/download").data)["bundle"]
    (identity,) = data["identities"]
    assert identity["provider"] == "acme" and identity["email"] == AT_ACME
    assert identity["linked_at"] and identity["last_used_at"] is None
    added = next(e for e in data["events"] if e["type"] == ev.IDENTITY_LINKED)
    assert added["payload"]["email"] == AT_ACME  # opened for its owner
    dumped = json.dumps(data)
    for word in ("access_token", "id_token", "refresh_token", "client_secret"):
        assert word not in dumped


def test_activity_lists_connect_and_disconnect_and_their_mails(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    linked(app, client, op)
    with db.reading() as conn:
        identity_id = conn.execute(select(user_identities.c.id)).scalar_one()
    assert (
        post(client, "/profile/connected/disconnect", htmx=True, identity=identity_id).status_code
        == 200
    )
    page = client.get("/privacy").get_data(as_text=True)
    for text in (
        "Sign-in provider connected",
        "Sign-in provider disconnected",
        "Connected provider notice sent",
        "Disconnected provider notice sent",
    ):
        assert text in page


def test_the_events_seal_the_subject_and_address(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    linked(app, client, op)
    with db.reading() as conn:
        stored = payload(conn, ev.IDENTITY_LINKED)
    assert stored["provider"] == "acme"
    assert AT_ACME not in json.dumps(stored)
    for name in ("subject", "email"):
        assert str(stored[name]).startswith(crypto.PREFIX)


def test_erasure_deletes_identities_and_shreds_them(
    app: Flask, client: FlaskClient, op: Provider, clock: Any
) -> None:
    linked(app, client, op)
    row = user_row(ADA)
    assert post(client, "/profile/delete", htmx=True, current_password=PASSWORD).status_code == 200
    clock.advance(15 * 86400)
    assert erase_accounts.erase_due("default", clock.now()) == 1
    with db.reading() as conn:
        assert conn.execute(select(user_identities.c.id)).first() is None
        stored = payload(conn, ev.IDENTITY_LINKED)
        for name in ("subject", "email"):
            try:
                crypto.unseal_for(conn, row.tenant_id, row.id, stored[name])
                raise AssertionError(f"{name} can still be read")
            except crypto.KeyDestroyed:
                pass


def test_reset_factors_leaves_identities(
    app: Flask, client: FlaskClient, op: Provider, runner: Any
) -> None:
    linked(app, client, op)
    assert add(client, Authenticator()).status_code == 200  # a second factor to reset
    result = runner.invoke(args=["users", "reset-factors", ADA])
    assert result.exit_code == 0 and "second factors removed" in result.output
    with db.reading() as conn:
        rows = conn.execute(select(user_identities.c.provider, user_identities.c.email)).all()
    assert [tuple(r) for r in rows] == [("acme", AT_ACME)]
