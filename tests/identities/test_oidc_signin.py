"""Sign-up, sign-in, linking and unlinking through a real OpenID Provider
(idpyoidc's, tests/identities/op.py): the code flow with PKCE, `state` and
`nonce`, the id_token checked by the provider's JWKS."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.identities.conftest import authorize, round_trip
from tests.identities.op import Provider
from tests.support.accounts import PASSWORD, link_in, login, mails, register, user_row
from tests.support.web import post
from webapp.accounts import change_password
from webapp.accounts.identities import store
from webapp.accounts.users import find_by_email
from webapp.core import db
from webapp.mail.outbox.tables import mail_outbox


def identities(address: str) -> list[store.Identity]:
    u = user_row(address)
    with db.reading() as conn:
        return store.identities_of(conn, u.tenant_id, u.id)


def outbox_kinds(address: str) -> list[str]:
    u = user_row(address)
    with db.reading() as conn:
        rows = conn.execute(select(mail_outbox.c.kind).where(mail_outbox.c.user_id == u.id))
        return [r.kind for r in rows]


def profile_of(client: FlaskClient) -> str | None:
    """The profile page when this client is signed in, else None."""
    resp = client.get("/profile")
    return resp.get_data(as_text=True) if resp.status_code == 200 else None


def test_sign_in_page_offers_each_provider_without_javascript(client: FlaskClient) -> None:
    html = client.get("/login?next=/privacy").get_data(as_text=True)
    for name, label in (("acme", "Acme"), ("other", "Other")):
        assert f'action="/login/with/{name}"' in html
        assert f"Continue with {label}" in html
    assert '<input type="hidden" name="next" value="/privacy">' in html
    # An unsafe `next` is dropped by the same rule as the password form's.
    html = client.get("/login?next=//evil.example/").get_data(as_text=True)
    assert 'name="next"' not in html


def test_sign_up_with_a_verified_address_then_sign_in(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    op.add_user("alice", "alice@example.com")
    op.user = "alice"
    resp = round_trip(client, next="/privacy")
    assert resp.status_code == 302 and resp.headers["Location"] == "/privacy"
    assert "alice@example.com" in (profile_of(client) or "")
    row = user_row("alice@example.com")
    assert row.email_verified and row.password_hash == ""  # no password: the provider is the way in
    # ... so no password opens it (the same answer as a wrong one).
    refused = login(app.test_client(), "alice@example.com", "")
    assert refused.status_code == 422
    refused = login(app.test_client(), "alice@example.com", PASSWORD)
    assert "The email address or password is not correct." in refused.get_data(as_text=True)
    [linked] = identities("alice@example.com")
    assert (linked.provider, linked.email, linked.last_used_at) == (
        "acme",
        "alice@example.com",
        None,
    )
    # The same identity later signs in to that account (and nobody else's).
    again = app.test_client()
    assert round_trip(again).headers["Location"] == "/profile"
    assert "alice@example.com" in (profile_of(again) or "")
    assert identities("alice@example.com")[0].last_used_at is not None
    assert user_row("alice@example.com").id == row.id


def test_sign_up_without_a_verified_address_confirms_it_by_our_mail_first(
    app: Flask, client: FlaskClient, op: Provider, work: Any
) -> None:
    op.add_user("bob", "bob@example.com", verified=False)
    op.user = "bob"
    page = round_trip(client)
    assert page.status_code == 200 and "Which address should we use?" in page.get_data(as_text=True)
    done = post(client, "/login/with/acme/address", email="bob@example.com")
    assert done.status_code == 200 and "We sent a link to bob@example.com" in done.get_data(
        as_text=True
    )
    assert not user_row("bob@example.com").email_verified
    assert profile_of(client) is None  # not signed in
    # Before the address is confirmed, the provider does not sign in to it.
    second = round_trip(app.test_client())
    assert second.status_code == 200 and "We sent a link" in second.get_data(as_text=True)
    work()
    verify = link_in(mails(app)[-1], "/verify-email/")
    assert post(client, verify).status_code == 200
    assert user_row("bob@example.com").email_verified
    assert round_trip(client).headers["Location"] == "/profile"
    assert "bob@example.com" in (profile_of(client) or "")


def test_an_existing_accounts_address_never_signs_in_to_it(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    """The linking rule: the provider vouches for ada's address, yet this is
    not ada's account's identity: nobody is signed in, nothing is linked."""
    assert register(client, "ada@example.com").status_code == 200
    before = user_row("ada@example.com")
    op.add_user("mallory", "ada@example.com")
    op.user = "mallory"
    stranger = app.test_client()
    resp = round_trip(stranger)
    body = resp.get_data(as_text=True)
    assert resp.status_code == 409
    assert "An account with the address ada@example.com exists already" in body
    assert "Connect Acme" in body and "/login?next=/profile" in body
    assert profile_of(stranger) is None
    assert identities("ada@example.com") == []
    assert user_row("ada@example.com").version == before.version


def test_link_from_the_profile_sign_in_with_it_and_unlink(
    app: Flask, client: FlaskClient, op: Provider, work: Any
) -> None:
    assert register(client, "ada@example.com").status_code == 200
    assert login(client, "ada@example.com").status_code == 302  # a fresh proof
    op.add_user("ada-at-acme", "ada.work@example.com")
    op.user = "ada-at-acme"
    resp = post(client, "/profile/connected/connect", provider="acme")
    assert resp.status_code == 302 and resp.headers["Location"].startswith(op.issuer)
    back = client.get(authorize(resp.headers["Location"]))
    assert back.headers["Location"] == "/profile#profile-connected"
    page = profile_of(client) or ""
    assert "Acme connected. You can now sign in with it." in page
    assert "ada.work@example.com" in page
    [linked] = identities("ada@example.com")
    assert "identity-linked" in outbox_kinds("ada@example.com")
    # The linked identity now signs in to ada's account (it has no second step).
    other = app.test_client()
    assert round_trip(other).headers["Location"] == "/profile"
    assert "ada@example.com" in (profile_of(other) or "")
    # Disconnect (htmx): only the section comes back.
    gone = post(client, "/profile/connected/disconnect", htmx=True, identity=linked.id)
    html = gone.get_data(as_text=True)
    assert gone.status_code == 200 and "Acme disconnected." in html
    assert html.lstrip().startswith('<section id="profile-connected"')
    assert identities("ada@example.com") == []
    assert "identity-unlinked" in outbox_kinds("ada@example.com")
    # ... and no longer signs in to ada's account: its (new) address signs up anew.
    later = app.test_client()
    assert round_trip(later).status_code == 302
    assert "ada.work@example.com" in (profile_of(later) or "")
    assert user_row("ada.work@example.com").id != user_row("ada@example.com").id


def test_linking_needs_a_fresh_proof(
    app: Flask, client: FlaskClient, op: Provider, clock: Any
) -> None:
    assert register(client, "ada@example.com").status_code == 200
    assert login(client, "ada@example.com").status_code == 302
    clock.advance(301)
    resp = post(client, "/profile/connected/connect", htmx=True, provider="acme")
    assert resp.status_code == 403
    assert "Confirm it" in resp.get_data(as_text=True)
    ok = post(client, "/profile/connected/confirm-identity", htmx=True, password=PASSWORD)
    assert ok.status_code == 200 and 'data-testid="connect-acme"' in ok.get_data(as_text=True)
    resp = post(client, "/profile/connected/connect", htmx=True, provider="acme")
    assert resp.status_code == 200 and resp.headers["HX-Redirect"].startswith(op.issuer)


def test_the_last_way_to_sign_in_is_not_disconnected(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    op.add_user("carol", "carol@example.com")
    op.user = "carol"
    assert round_trip(client).status_code == 302
    [linked] = identities("carol@example.com")
    resp = post(client, "/profile/connected/disconnect", htmx=True, identity=linked.id)
    assert resp.status_code == 422
    assert "Acme is the only way to sign in to your account" in resp.get_data(as_text=True)
    assert identities("carol@example.com") == [linked]


def test_an_identity_linked_to_one_account_is_not_linked_to_another(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    op.add_user("dave", "dave@example.com")
    op.user = "dave"
    assert round_trip(app.test_client()).status_code == 302  # dave's account, by acme
    assert register(client, "ada@example.com").status_code == 200
    assert login(client, "ada@example.com").status_code == 302
    resp = post(client, "/profile/connected/connect", provider="acme")
    client.get(authorize(resp.headers["Location"]))
    page = client.get("/profile")
    assert page.status_code == 422
    assert "connected to another account already" in page.get_data(as_text=True)
    assert identities("ada@example.com") == []


def test_a_password_set_by_the_reset_link_lets_the_provider_go(
    app: Flask, client: FlaskClient, op: Provider, work: Any
) -> None:
    """What the refusal tells a provider-only account to do, done: "Forgot
    password?" sets a password, and then the provider can be disconnected."""
    op.add_user("frank", "frank@example.com")
    op.user = "frank"
    assert round_trip(client).status_code == 302
    anon = app.test_client()  # "Forgot password?" is asked signed out
    assert post(anon, "/reset-password", email="frank@example.com").status_code == 200
    work()
    link = link_in(mails(app)[-1], "/reset-password/")
    new = "tangerine submarine umbrella"
    done = post(anon, link, new_password=new, confirm_password=new)
    assert done.status_code == 303
    assert user_row("frank@example.com").password_hash != ""
    assert login(client, "frank@example.com", new).status_code == 302  # the reset signed it out
    [linked] = identities("frank@example.com")
    resp = post(client, "/profile/connected/disconnect", htmx=True, identity=linked.id)
    assert resp.status_code == 200 and "Acme disconnected." in resp.get_data(as_text=True)


def test_a_provider_only_account_confirms_its_identity_at_the_provider(
    app: Flask, client: FlaskClient, op: Provider, clock: Any
) -> None:
    """No password to confirm with: "Confirm with Acme" is a round trip that
    must come back with an identity linked to this very account."""
    op.add_user("gina", "gina@example.com")
    op.user = "gina"
    assert round_trip(client).status_code == 302
    clock.advance(301)
    stale = post(client, "/profile/connected/connect", htmx=True, provider="acme")
    assert stale.status_code == 403 and 'data-testid="confirm-with-acme"' in stale.get_data(
        as_text=True
    )
    # Someone else's Acme identity is no proof.
    op.add_user("mallory", "mallory@example.com")
    op.user = "mallory"
    go = post(client, "/profile/connected/confirm-with", provider="acme")
    assert client.get(authorize(go.headers["Location"])).status_code == 302
    page = client.get("/profile")
    assert page.status_code == 422
    assert "That Acme account is not connected to your account." in page.get_data(as_text=True)
    assert post(client, "/profile/connected/connect", htmx=True, provider="acme").status_code == 403
    # Gina's own is.
    op.user = "gina"
    go = post(client, "/profile/connected/confirm-with", provider="acme")
    assert client.get(authorize(go.headers["Location"])).status_code == 302
    assert client.get("/profile").status_code == 200
    fresh = post(client, "/profile/connected/connect", htmx=True, provider="acme")
    assert fresh.status_code == 200 and fresh.headers["HX-Redirect"].startswith(op.issuer)


def test_a_look_alike_address_is_not_taken_from_the_provider(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    """The registration's address rules hold for a provider's address too:
    a Cyrillic "а" in "аda@example.com" is asked for again, never an account."""
    assert register(app.test_client(), "ada@example.com").status_code == 200
    op.add_user("homoglyph", "\u0430da@example.com")
    op.user = "homoglyph"
    page = round_trip(client)
    assert page.status_code == 200 and "Which address should we use?" in page.get_data(as_text=True)
    assert profile_of(client) is None
    assert identities("ada@example.com") == []


def test_a_provider_only_account_sets_its_first_password_on_the_profile(
    app: Flask, client: FlaskClient, op: Provider, clock: Any, work: Any
) -> None:
    """*Set a password* in the password section: no current password to give,
    a fresh proof instead (the provider sign-in itself, or Confirm with Acme);
    then the password signs in, other sessions end and the owner is told."""
    op.add_user("hana", "hana@example.com")
    op.user = "hana"
    assert round_trip(client).status_code == 302
    other = app.test_client()
    assert round_trip(other).status_code == 302  # a second session, ended by the change
    page = profile_of(client) or ""
    assert (
        "Set a password" in page
        and 'name="current_password"'
        not in page.split('id="profile-password"')[1].split("</section>")[0]
    )
    # Every rule of a new password holds; nothing is set.
    bad = post(client, "/profile/password", htmx=True, new_password="short", confirm_password="x")
    assert bad.status_code == 422
    assert user_row("hana@example.com").password_hash == ""
    # Past the proof's age the section asks for one, with the provider, first.
    clock.advance(301)
    new = "tangerine submarine umbrella"
    stale = post(client, "/profile/password", htmx=True, new_password=new, confirm_password=new)
    body = stale.get_data(as_text=True)
    assert stale.status_code == 403 and "with the provider you sign in with, then set" in body
    assert 'data-testid="password-confirm-with-acme"' in body
    assert user_row("hana@example.com").password_hash == ""
    go = post(client, "/profile/connected/confirm-with", provider="acme")
    assert client.get(authorize(go.headers["Location"])).status_code == 302
    assert "Set password" in (profile_of(client) or "")  # fresh now: the form shows
    done = post(client, "/profile/password", htmx=True, new_password=new, confirm_password=new)
    text = done.get_data(as_text=True)
    assert done.status_code == 200 and "Password set." in text
    assert "Change password" in text and 'name="current_password"' in text  # a change from now on
    assert profile_of(client) is not None  # this session goes on
    assert profile_of(other) is None  # the other one ended
    assert login(app.test_client(), "hana@example.com", new).status_code == 302
    work()
    assert "A password was set for your account" in [m["Subject"] for m in mails(app)]
    # Once set, the first-password way is closed: the form wants the current one.
    again = post(
        client, "/profile/password", htmx=True, new_password=new + "!", confirm_password=new + "!"
    )
    assert again.status_code == 422 and user_row("hana@example.com").password_hash != ""
    assert login(app.test_client(), "hana@example.com", new).status_code == 302


def test_a_first_password_is_set_once_even_from_a_stale_read(
    app: Flask, client: FlaskClient, op: Provider
) -> None:
    """Two submits of *Set a password* that both read the account without one:
    the account decides on the row it reads in its own transaction, so the
    second finds the first one's password and is refused."""
    op.add_user("ivo", "ivo@example.com")
    op.user = "ivo"
    assert round_trip(client).status_code == 302
    with db.reading() as conn:
        before = find_by_email(conn, "ivo@example.com")
    assert before is not None and before.password_hash == ""
    first = change_password.set_password(before, "tangerine submarine umbrella")
    second = change_password.set_password(before, "another long passphrase here")  # stale row
    assert first.ok and not second.ok and second.key == "profile.password.alreadySet"
    assert (
        login(app.test_client(), "ivo@example.com", "tangerine submarine umbrella").status_code
        == 302
    )
