"""Second factors in the privacy center and for operators (issue 21, points 8
and 10): the export lists each factor (type, name, created, last used) and no
secret; "Your activity" says what happened in plain words; erasure removes
every factor row and shreds the sealed secret; `flask users reset-factors`
is recorded with the operator as actor and mails the account holder; a
restricted account cannot change its factors."""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import select

from tests.support.accounts import PASSWORD, body, login, mails, user_row
from tests.support.factors import code, next_step, set_up
from tests.support.web import csrf_token, fetch, post, unzip
from webapp.accounts import crypto, erase_accounts
from webapp.accounts import events as ev
from webapp.accounts.factors import commands
from webapp.accounts.factors.tables import recovery_codes, user_factors
from webapp.core import db
from webapp.eventstore.tables import events
from webapp.privacy.tables import export_jobs

ITEM = re.compile(r'data-testid="privacy-activity-item"[^>]*><span class="activity-what">([^<]+)<')


def activity(client: Any) -> list[str]:
    return ITEM.findall(client.get("/privacy").get_data(as_text=True))


def test_export_lists_factors_and_never_a_secret(
    app: Any, client: Any, clock: Any, user: Any, work: Any
) -> None:
    secret, codes = set_up(client)
    post(client, "/privacy/export", htmx=True)
    work()
    with db.reading() as conn:
        job_id = conn.execute(select(export_jobs.c.id)).scalar_one()
    data = unzip(fetch(client, f"/privacy/exports/{job_id}/download").data)["bundle"]
    (factor,) = data["factors"]
    assert factor["type"] == "totp" and factor["name"] == "Authenticator app"
    assert factor["created_at"] and "last_used_at" in factor
    dumped = json.dumps(data)
    assert secret not in dumped and "$argon2" not in dumped
    assert not any(c.replace("-", "") in dumped or c in dumped for c in codes)
    added = next(e for e in data["events"] if e["type"] == ev.TOTP_ADDED)
    assert added["payload"]["secret"] == "[secret: not exported]"


def test_activity_says_added_regenerated_used_and_removed(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    secret, codes = set_up(client)
    post(client, "/profile/factors/recovery-codes", htmx=True)
    other = app.test_client()
    login(other, "ada@example.com")
    next_step(clock)
    token = csrf_token(other, "/login/recovery")
    fresh_codes = re.findall(
        r"<code>([^<]+)</code>",
        post(client, "/profile/factors/recovery-codes", htmx=True).get_data(as_text=True),
    )
    assert (
        other.post(
            "/login/recovery", data={"recovery_code": fresh_codes[0], "csrf_token": token}
        ).status_code
        == 302
    )
    post(
        client, "/profile/factors/totp/off", htmx=True, current_password=PASSWORD, code=code(secret)
    )
    items = activity(client)
    factor_items = [i for i in items if "uthenticator" in i or "ecovery" in i]
    assert factor_items == [
        "Authenticator app removed",
        "Recovery code used to sign in",
        "Recovery codes generated",
        "Recovery codes generated",
        "Recovery codes generated",  # the first codes, with the app
        "Authenticator app added",
    ]
    assert not any(i.startswith("user.") for i in items)


def test_erasure_removes_every_factor_and_shreds_the_secret(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    set_up(client)
    r = post(client, "/profile/delete", htmx=True, current_password=PASSWORD)
    assert r.status_code == 200
    clock.advance(15 * 86400)
    assert erase_accounts.erase_due("default", clock.now()) == 1
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).first() is None
        assert conn.execute(select(recovery_codes.c.batch)).first() is None
        added = conn.execute(
            select(events.c.payload).where(events.c.type == ev.TOTP_ADDED)
        ).scalar_one()
        sealed = (json.loads(added) if isinstance(added, str) else added)["secret"]
        try:
            crypto.unseal_for(conn, user.tenant_id, user.id, sealed)
            raise AssertionError("the secret can still be read")
        except crypto.KeyDestroyed:
            pass


def test_operator_reset_is_recorded_and_mailed(
    app: Any, client: Any, clock: Any, user: Any, runner: Any, work: Any
) -> None:
    set_up(client)
    result = runner.invoke(args=["users", "reset-factors", "Ada@Example.com"])
    assert result.exit_code == 0 and "second factors removed" in result.output
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).first() is None
        assert conn.execute(select(recovery_codes.c.batch)).first() is None
        reset = conn.execute(
            select(events.c.metadata).where(events.c.type == ev.FACTORS_RESET)
        ).scalar_one()
    meta = json.loads(reset) if isinstance(reset, str) else reset
    assert meta["actor"].startswith("cli:")
    work()
    (sent,) = [m for m in mails(app) if m["Subject"] == "Two-step verification was turned off"]
    assert sent["To"] == "ada@example.com" and "http://localhost/profile" in body(sent)
    assert "Second factors removed by support" in activity(client)
    # Now the password alone signs in.
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    r = login(client, "ada@example.com")
    assert r.status_code == 302 and r.headers["Location"] == "/profile"
    again = runner.invoke(args=["users", "reset-factors", "ada@example.com"])
    assert again.exit_code == 0 and "nothing changed" in again.output
    missing = runner.invoke(args=["users", "reset-factors", "nobody@example.com"])
    assert missing.exit_code != 0 and "no account" in missing.output


def test_a_restricted_account_cannot_change_its_factors(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    set_up(client)
    r = post(client, "/privacy/restrict", htmx=True, current_password=PASSWORD)
    assert r.status_code == 200
    row = user_row("ada@example.com")
    assert row.status == "restricted"
    for refused in (commands.new_codes(row), commands.begin_setup(row)):
        assert not refused.ok and refused.key == "privacy.restrict.restricted"
    with db.reading() as conn:  # the codes of the set-up are still the only ones
        assert len(conn.execute(select(recovery_codes.c.number)).all()) == 10
