"""The /profile screen: four sections, htmx fragments and full-page answers."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from tests.support.accounts import NEW_PASSWORD, PASSWORD, body, login, mails, register, user_row
from tests.support.web import post


def _section(html: str, testid: str) -> str:
    start = html.index(f'data-testid="{testid}"')
    return html[html.rindex("<section", 0, start) : html.index("</section>", start)]


def test_profile_page_has_four_labelled_sections_each_with_its_own_form(
    client: Any, user: Any
) -> None:
    resp = client.get("/profile")
    html = resp.get_data(as_text=True)
    assert resp.status_code == 200
    assert resp.headers["Cache-Control"] == "no-store"
    assert "HX-Request" in resp.headers["Vary"]
    for testid, heading in (
        ("profile-account", "Account"),
        ("profile-password", "Change password"),
        ("profile-email", "Change email"),
        ("profile-danger", "Danger zone"),
    ):
        section = _section(html, testid)
        labelled_by = re.search(r'aria-labelledby="([^"]+)"', section).group(1)  # type: ignore[union-attr]
        assert f'<h2 id="{labelled_by}">{heading}</h2>' in section
        assert "<form" in section
    assert "Current email: <strong>ada@example.com</strong>" in html
    assert "Not verified" in html and "Resend verification email" in html
    assert "Sign out other sessions" in html and "Deutsch" in html
    # Forms are never nested, and each posts (with and without htmx) to one URL.
    forms = re.findall(r"<form\b[^>]*>", html)
    assert html.count("<form") == html.count("</form>")
    for form in forms:
        action = re.search(r'action="([^"]+)"', form).group(1)  # type: ignore[union-attr]
        assert 'method="post"' in form
        if "hx-post" in form:
            assert f'hx-post="{action}"' in form and 'hx-swap="outerHTML"' in form
            assert "hx-disabled-elt" in form


def test_password_mismatch_is_checked_first(client: Any, user: Any) -> None:
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password="wrong",
        new_password="a",
        confirm_password="b",
    )
    assert r.status_code == 422
    assert "The new passwords do not match." in r.get_data(as_text=True)


def test_htmx_answer_is_only_the_section_fragment(client: Any, user: Any) -> None:
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password="nope nope nope nope",
        new_password=NEW_PASSWORD,
        confirm_password=NEW_PASSWORD,
    )
    html = r.get_data(as_text=True)
    assert r.status_code == 422
    assert html.lstrip().startswith('<section id="profile-password"')
    assert "<html" not in html and "profile-email" not in html
    assert 'role="alert"' in html and "There is a problem" in html
    assert (
        '<a href="#profile-password-current-password">The current password is not correct.</a>'
        in html
    )
    assert r.headers["Vary"].startswith("HX-Request") or "HX-Request" in r.headers["Vary"]
    assert r.headers["Cache-Control"] == "no-store"


def test_without_javascript_the_answer_is_the_whole_page_with_the_banner(
    client: Any, user: Any
) -> None:
    r = post(
        client,
        "/profile/password",
        current_password="nope nope nope nope",
        new_password=NEW_PASSWORD,
        confirm_password=NEW_PASSWORD,
    )
    html = r.get_data(as_text=True)
    assert r.status_code == 422
    assert "<html" in html and 'data-testid="profile-email"' in html
    assert "The current password is not correct." in _section(html, "profile-password")
    assert "The current password is not correct." not in _section(html, "profile-email")


def test_password_policy_failure_names_the_rule(client: Any, user: Any) -> None:
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password=PASSWORD,
        new_password="password",
        confirm_password="password",
    )
    assert r.status_code == 422 and "at least 15 characters" in r.get_data(as_text=True)
    common = "1qaz2wsx3edc4rfv"  # in the shipped list
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password=PASSWORD,
        new_password=common,
        confirm_password=common,
    )
    assert r.status_code == 422 and "This password is too common." in r.get_data(as_text=True)
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password=PASSWORD,
        new_password="Ada@Example.com",
        confirm_password="Ada@Example.com",
    )
    assert r.status_code == 422 and "must not be your email address" in r.get_data(as_text=True)


def test_password_change_signs_out_other_sessions_and_sends_a_notice(
    app: Any, client: Any, other_client: Any, user: Any, work: Any
) -> None:
    assert login(other_client, "ada@example.com").status_code == 302
    assert other_client.get("/profile").status_code == 200
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password=PASSWORD,
        new_password=NEW_PASSWORD,
        confirm_password=NEW_PASSWORD,
    )
    html = r.get_data(as_text=True)
    assert r.status_code == 200
    assert 'data-banner="success">Your password has been changed.' in html
    assert 'hx-swap-oob="innerHTML">Your password has been changed.</div>' in html  # announced
    assert 'value="' not in html.replace(
        'name="csrf_token" value="', ""
    )  # the three fields are empty
    assert client.get("/profile").status_code == 200  # this session stays
    assert other_client.get("/profile").status_code == 302  # the other one is gone
    assert login(other_client, "ada@example.com", NEW_PASSWORD).status_code == 302
    work()
    assert any(m["Subject"] == "Your password was changed" for m in mails(app))


def test_change_email_errors(client: Any, user: Any, other_client: Any) -> None:
    register(other_client, "bob@example.com")
    cases = [
        (
            {"new_email": "new@example.com", "current_password": "wrong wrong wrong"},
            "The current password is not correct.",
        ),
        (
            {"new_email": "ADA@example.com", "current_password": PASSWORD},
            "That is already your email address.",
        ),
        (
            {"new_email": "Bob@Example.com", "current_password": PASSWORD},
            "That email address is already in use.",
        ),
        (
            {"new_email": "not an address", "current_password": PASSWORD},
            "Enter a valid email address.",
        ),
    ]
    for data, message in cases:
        r = post(client, "/profile/email", htmx=True, **data)
        assert r.status_code == 422, message
        assert message in r.get_data(as_text=True)
    assert user_row("ada@example.com") is not None


def test_change_email_updates_current_line_out_of_band_and_mails_both_addresses(
    app: Any, client: Any, user: Any, work: Any
) -> None:
    r = post(
        client,
        "/profile/email",
        htmx=True,
        new_email="Ada.New@Example.com",
        current_password=PASSWORD,
    )
    html = r.get_data(as_text=True)
    assert r.status_code == 200
    assert 'data-banner="success">Your email address has been changed.' in html
    assert (
        '<div id="account-email-status" data-testid="profile-email-status" hx-swap-oob="true">'
        in html
    )
    assert "Current email: <strong>ada.new@example.com</strong>" in html
    assert "Not verified" in html
    row = user_row("ada.new@example.com")
    assert row is not None and not row.email_verified
    work()
    sent = {m["To"]: m for m in mails(app)}
    assert "/verify-email/" in body(sent["ada.new@example.com"])
    assert "/email-change/revert/" in body(sent["ada@example.com"])


def test_change_email_mail_failure_does_not_undo_the_change(
    app: Any, make_config: Any, redis: Any, client: Any, user: Any, work: Any, caplog: Any
) -> None:
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=1, smtp_timeout=1
    )
    r = post(
        client, "/profile/email", htmx=True, new_email="new@example.com", current_password=PASSWORD
    )
    assert r.status_code == 200
    work()
    assert user_row("new@example.com") is not None
    # Both mails wait in the outbox for the next attempt.
    assert any("mail not sent; will retry" in rec.getMessage() for rec in caplog.records)


def test_deletion_request_and_cancel(
    app: Any, client: Any, user: Any, clock: Any, work: Any
) -> None:
    r = post(client, "/profile/delete", htmx=True, current_password="wrong wrong wrong")
    assert r.status_code == 422 and "The current password is not correct." in r.get_data(
        as_text=True
    )
    r = post(client, "/profile/delete", htmx=True, current_password=PASSWORD)
    html = r.get_data(as_text=True)
    assert r.status_code == 200
    assert "Your account will be deleted on" in html and "Cancel deletion" in html
    assert user_row("ada@example.com").status == "deletionRequested"
    work()
    assert any(m["Subject"] == "Your account will be deleted" for m in mails(app))
    r = post(client, "/profile/cancel-deletion", htmx=True)
    assert r.status_code == 200 and "Deletion cancelled." in r.get_data(as_text=True)
    assert user_row("ada@example.com").status == "active"
    r = post(client, "/profile/cancel-deletion", htmx=True)
    assert r.status_code == 422 and "no pending deletion" in r.get_data(as_text=True)


def test_cancel_after_grace_period_is_refused(client: Any, user: Any, clock: Any) -> None:
    post(client, "/profile/delete", current_password=PASSWORD)
    clock.advance(timedelta(days=14, seconds=1))
    r = post(client, "/profile/cancel-deletion")
    assert r.status_code == 422 and "grace period has ended" in r.get_data(as_text=True)


def test_erase_job_erases_accounts_past_their_grace_period(
    app: Any, client: Any, user: Any, clock: Any
) -> None:
    from webapp.accounts import crypto, erase_accounts
    from webapp.core import db
    from webapp.eventstore import StreamId, read_stream
    from webapp.tenants import DEFAULT_TENANT

    post(client, "/profile/delete", current_password=PASSWORD)
    erase_accounts.erase_accounts(DEFAULT_TENANT, clock.now())
    assert user_row("ada@example.com") is not None  # not due yet
    clock.advance(timedelta(days=14, seconds=1))
    erase_accounts.erase_accounts(DEFAULT_TENANT, clock.now())
    assert user_row("ada@example.com") is None
    assert client.get("/profile").status_code == 302  # session ended
    assert login(client, "ada@example.com").status_code == 422  # sign-in impossible
    with db.reading() as conn:
        stream = read_stream(conn, StreamId(DEFAULT_TENANT, "user", user.id))
        assert stream[-1].type == "user.erased"
        sealed = stream[0].payload["email"]
        assert "ada@example.com" not in repr([e.payload for e in stream])
        try:
            crypto.unseal_for(conn, DEFAULT_TENANT, user.id, sealed)
            raise AssertionError("personal data still readable")
        except crypto.KeyDestroyed:
            pass
    # The address is free again.
    assert register(client, "ada@example.com").status_code == 200


def test_erase_job_is_registered_daily() -> None:
    from webapp.jobs import get_job

    spec = get_job("erase-accounts")
    assert spec.cron == "0 3 * * *" and spec.per_tenant and spec.concurrency == "skip"


def test_sign_out_other_sessions(client: Any, other_client: Any, user: Any) -> None:
    login(other_client, "ada@example.com")
    r = post(client, "/profile/sessions", htmx=True)
    assert r.status_code == 200 and "All other sessions have been signed out." in r.get_data(
        as_text=True
    )
    assert client.get("/profile").status_code == 200
    assert other_client.get("/profile").status_code == 302


def test_resend_verification(app: Any, client: Any, user: Any, work: Any, clock: Any) -> None:
    work()
    before = len(mails(app))
    clock.advance(61)  # past the cooldown after the registration's mail
    r = post(client, "/profile/resend-verification", htmx=True)
    assert r.status_code == 200 and r.get_data(as_text=True).lstrip().startswith(
        '<section id="profile-account"'
    )
    work()
    assert len(mails(app)) == before + 1


def test_language_choice_switches_the_page_and_wins_over_the_browser(
    client: Any, user: Any
) -> None:
    r = post(client, "/profile/language", language="de")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert '<html lang="de">' in html and "Ihre Sprache wurde gespeichert." in html
    html = client.get("/profile", headers={"Accept-Language": "en"}).get_data(as_text=True)
    assert "Passwort ändern" in html
    r = post(client, "/profile/language", htmx=True, language="en")
    assert r.headers["HX-Refresh"] == "true"
    assert "Your language has been saved." in client.get("/profile").get_data(as_text=True)


def test_unexpected_failure_shows_the_generic_banner(app: Any, client: Any, user: Any) -> None:
    from webapp.accounts import change_password as service

    original = service.change_password

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("boom")

    service.change_password = broken  # type: ignore[assignment]
    try:
        r = post(
            client,
            "/profile/password",
            htmx=True,
            current_password=PASSWORD,
            new_password=NEW_PASSWORD,
            confirm_password=NEW_PASSWORD,
        )
    finally:
        service.change_password = original  # type: ignore[assignment]
    assert r.status_code == 500
    assert "Something went wrong. Please try again." in r.get_data(as_text=True)
    assert r.headers["X-Section-Fragment"] == "1"


def test_user_values_are_escaped(client: Any, user: Any) -> None:
    r = post(
        client,
        "/profile/email",
        htmx=True,
        new_email='"><script>alert(1)</script>@x.com',
        current_password=PASSWORD,
    )
    html = r.get_data(as_text=True)
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html
