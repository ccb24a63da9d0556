"""Passkeys in the privacy center and for operators (issue 21, points 8 and
10): the export lists each passkey (type, name, created, last used) and never
its key material; "Your activity" says "Passkey added" / "Passkey removed"
(en and de); erasure deletes the rows and shreds the sealed name and keys;
`flask users reset-factors` removes passkeys too; the console says only
whether an account has a second factor; a restricted account cannot add one."""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import select

from tests.support.accounts import PASSWORD, PLAIN, user_row
from tests.support.authenticator import Authenticator
from tests.support.passkeys import REMOVE, add, sign_in
from tests.support.web import csrf_token, fetch, post, unzip
from webapp.accounts import crypto, erase_accounts
from webapp.accounts import events as ev
from webapp.accounts.factors import passkey_commands
from webapp.accounts.factors.tables import recovery_codes, user_factors
from webapp.core import db
from webapp.eventstore.tables import events
from webapp.privacy.tables import export_jobs

ITEM = re.compile(r'data-testid="privacy-activity-item"[^>]*><span class="activity-what">([^<]+)<')


def activity(client: Any) -> list[str]:
    return ITEM.findall(client.get("/privacy").get_data(as_text=True))


def payload(conn: Any, event_type: str) -> dict[str, Any]:
    raw = conn.execute(select(events.c.payload).where(events.c.type == event_type)).scalar_one()
    return json.loads(raw) if isinstance(raw, str) else raw  # type: ignore[no-any-return]


def test_export_lists_passkeys_and_never_their_keys(
    app: Any, client: Any, user: Any, work: Any
) -> None:
    auth = Authenticator()
    add(client, auth, "Laptop")
    with db.reading() as conn:
        row = conn.execute(select(user_factors)).one()
    post(client, "/privacy/export", htmx=True)
    work()
    with db.reading() as conn:
        job_id = conn.execute(select(export_jobs.c.id)).scalar_one()
    data = unzip(fetch(client, f"/privacy/exports/{job_id}/download").data)["bundle"]
    (factor,) = data["factors"]
    assert factor["type"] == "passkey" and factor["name"] == "Laptop"
    assert factor["created_at"] and factor["last_used_at"] is None
    dumped = json.dumps(data)
    for material in (row.credential_id, row.public_key, row.user_handle):
        assert material not in dumped
    added = next(e for e in data["events"] if e["type"] == ev.PASSKEY_ADDED)
    assert added["payload"]["name"] == "Laptop"
    assert added["payload"]["public_key"] == "[secret: not exported]"


def test_activity_says_passkey_added_and_removed_in_english_and_german(
    app: Any, client: Any, user: Any
) -> None:
    add(client, Authenticator(), "Laptop")
    with db.reading() as conn:
        factor_id = conn.execute(select(user_factors.c.id)).scalar_one()
    post(client, REMOVE, htmx=True, passkey=factor_id)
    items = activity(client)
    assert items[:3] == ["Passkey removed", "Recovery codes generated", "Passkey added"]
    post(client, "/profile/language", htmx=True, language="de")
    items = activity(client)
    assert "Passkey entfernt" in items and "Passkey hinzugefügt" in items


def test_erasure_deletes_passkeys_and_shreds_their_names_and_keys(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    add(client, Authenticator(), "Ada's laptop")
    r = post(client, "/profile/delete", htmx=True, current_password=PASSWORD)
    assert r.status_code == 200
    clock.advance(15 * 86400)
    assert erase_accounts.erase_due("default", clock.now()) == 1
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).first() is None
        assert conn.execute(select(recovery_codes.c.batch)).first() is None
        added = payload(conn, ev.PASSKEY_ADDED)
        for name in ("name", "credential_id", "public_key", "user_handle"):
            try:
                crypto.unseal_for(conn, user.tenant_id, user.id, added[name])
                raise AssertionError(f"{name} can still be read")
            except crypto.KeyDestroyed:
                pass


def test_operator_reset_removes_passkeys_and_the_console_says_only_yes(
    app: Any, admin: Any, plain: Any, runner: Any
) -> None:
    auth = Authenticator()
    assert add(plain, auth).status_code == 200
    page = admin.get(f"/admin/accounts?email={PLAIN}").get_data(as_text=True)
    assert 'data-testid="admin-second-factor">Yes<' in page and "asskey" not in page
    result = runner.invoke(args=["users", "reset-factors", PLAIN])
    assert result.exit_code == 0 and "second factors removed" in result.output
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).first() is None
        assert conn.execute(select(recovery_codes.c.batch)).first() is None
    plain.post("/logout", data={"csrf_token": csrf_token(plain, "/profile")})
    r = sign_in(plain, auth)
    assert r.status_code == 422 and "not registered here" in r.get_data(as_text=True)
    page = admin.get(f"/admin/accounts?email={PLAIN}").get_data(as_text=True)
    assert 'data-testid="admin-second-factor">No<' in page


def test_a_restricted_account_cannot_change_its_passkeys(app: Any, client: Any, user: Any) -> None:
    add(client, Authenticator(), "Laptop")
    r = post(client, "/privacy/restrict", htmx=True, current_password=PASSWORD)
    assert r.status_code == 200
    row = user_row("ada@example.com")
    assert row.status == "restricted"
    with db.reading() as conn:
        factor_id = conn.execute(select(user_factors.c.id)).scalar_one()
    refused = passkey_commands.remove(row, factor_id)
    assert not refused.ok and refused.key == "privacy.restrict.restricted"
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).scalar_one() == factor_id
