""" "Forgot password?" (finding 11): a neutral request page, a single-use link
valid 1 hour and bound to the password hash and to the latest request, a
reset that ends every session and mails a notice; the revert page of an email
change offers the same step."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from tests.accounts.conftest import (
    NEW_PASSWORD,
    PASSWORD,
    body,
    csrf_token,
    link_in,
    login,
    mails,
    post,
    register,
    user_row,
)

NEUTRAL = "If an account exists for that address, we have sent a link to reset the password."
INVALID = "This link is invalid or has expired."
OTHER_PASSWORD = "marmalade lighthouse pancake"


def _ask(client: Any, address: str, htmx: bool = False) -> Any:
    return post(client, "/reset-password", htmx=htmx, email=address)


def _reset_links(app: Any, to: str = "ada@example.com") -> list[str]:
    return [
        link_in(m, "/reset-password/")
        for m in mails(app)
        if m["To"] == to and "/reset-password/" in body(m) and "Reset" in str(m["Subject"])
    ]


def _set(
    client: Any, link: str, new: str = NEW_PASSWORD, confirm: str | None = None, **kw: Any
) -> Any:
    headers = {"HX-Request": "true"} if kw.get("htmx") else {}
    data = {
        "csrf_token": csrf_token(client),
        "new_password": new,
        "confirm_password": new if confirm is None else confirm,
    }
    return client.post(link, data=data, headers=headers)


def test_login_page_links_to_the_reset_page(client: Any) -> None:
    html = client.get("/login").get_data(as_text=True)
    assert 'href="/reset-password"' in html and "Forgot password?" in html
    page = client.get("/reset-password")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert '<label for="reset-email">Email</label>' in html and "Send reset link" in html
    assert 'hx-post="/reset-password"' in html and 'method="post"' in html


def test_the_answer_is_the_same_for_known_and_unknown_addresses(
    app: Any, client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    known = _ask(client, "ada@example.com")
    unknown = _ask(client, "nobody@example.com")
    assert known.status_code == unknown.status_code == 200
    assert NEUTRAL in known.get_data(as_text=True) and NEUTRAL in unknown.get_data(as_text=True)
    work()
    assert len(_reset_links(app)) == 1
    assert not [m for m in mails(app) if m["To"] == "nobody@example.com"]


def test_reset_end_to_end_ends_every_session_and_mails_a_notice(
    app: Any, client: Any, other_client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    login(other_client, "ada@example.com")  # a session elsewhere (an attacker's?)
    assert other_client.get("/profile").status_code == 200
    _ask(client, "ada@example.com")
    work()
    (link,) = _reset_links(app)
    page = client.get(link).get_data(as_text=True)
    assert "New password" in page and "Confirm new password" in page and "Set new password" in page
    r = _set(client, link, NEW_PASSWORD, NEW_PASSWORD + "x")
    assert r.status_code == 422 and "The new passwords do not match." in r.get_data(as_text=True)
    r = _set(client, link, "short")
    assert r.status_code == 422 and "at least 15 characters" in r.get_data(as_text=True)
    r = _set(client, link)
    assert r.status_code == 303 and r.headers["Location"].endswith("/login")
    assert "Your password has been reset. Please sign in." in client.get("/login").get_data(
        as_text=True
    )
    assert other_client.get("/profile").status_code == 302  # signed out everywhere
    assert login(client, "ada@example.com", PASSWORD).status_code == 422
    assert login(client, "ada@example.com", NEW_PASSWORD).status_code == 302
    work()
    assert any("Your password was changed" in str(m["Subject"]) for m in mails(app))
    assert user_row("ada@example.com").email_verified  # the link proved the address
    again = _set(app.test_client(), link, OTHER_PASSWORD)
    assert again.status_code == 400 and INVALID in again.get_data(as_text=True)


def test_with_htmx_the_answers_are_fragments_and_success_redirects(
    app: Any, client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    r = _ask(client, "ada@example.com", htmx=True)
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and html.lstrip().startswith('<section id="reset-request"')
    assert NEUTRAL in html and "HX-Request" in r.headers["Vary"]
    work()
    (link,) = _reset_links(app)
    r = _set(client, link, "short", htmx=True)
    assert r.status_code == 422
    assert r.get_data(as_text=True).lstrip().startswith('<section id="reset-password"')
    r = _set(client, link, htmx=True)
    assert r.status_code == 200 and r.headers["HX-Redirect"] == "/login"


def test_the_link_expires_after_an_hour(app: Any, client: Any, work: Any, clock: Any) -> None:
    register(client, "ada@example.com")
    _ask(client, "ada@example.com")
    work()
    (link,) = _reset_links(app)
    clock.advance(timedelta(minutes=61))
    r = client.get(link)
    assert r.status_code == 400 and INVALID in r.get_data(as_text=True)
    assert _set(client, link).status_code == 400
    assert login(client, "ada@example.com", PASSWORD).status_code == 302


def test_a_second_request_voids_the_first_link(
    app: Any, client: Any, work: Any, clock: Any
) -> None:
    register(client, "ada@example.com")
    _ask(client, "ada@example.com")
    clock.advance(2)
    _ask(client, "ada@example.com")
    work()
    first, second = _reset_links(app)
    assert client.get(first).status_code == 400
    assert client.get(second).status_code == 200


def test_a_changed_password_voids_the_link(app: Any, client: Any, work: Any) -> None:
    register(client, "ada@example.com")
    _ask(client, "ada@example.com")
    work()
    (link,) = _reset_links(app)
    login(client, "ada@example.com")
    post(
        client,
        "/profile/password",
        current_password=PASSWORD,
        new_password=OTHER_PASSWORD,
        confirm_password=OTHER_PASSWORD,
    )
    r = app.test_client().get(link)
    assert r.status_code == 400 and INVALID in r.get_data(as_text=True)


def test_altered_links_are_invalid(client: Any) -> None:
    r = client.get("/reset-password/not-a-token")
    assert r.status_code == 400 and INVALID in r.get_data(as_text=True)
    assert "Request a new link" in r.get_data(as_text=True)


def test_requests_are_limited_per_address_and_per_client(app: Any, client: Any, work: Any) -> None:
    register(client, "ada@example.com")
    answers = [_ask(client, "ada@example.com") for _ in range(5)]
    assert all(r.status_code == 200 and NEUTRAL in r.get_data(as_text=True) for r in answers)
    work()
    assert len(_reset_links(app)) == 3  # 3 an hour per address, silently
    codes = [_ask(client, f"user{i}@example.com").status_code for i in range(20)]
    assert codes[:15] == [200] * 15 and codes[-1] == 429


def test_revert_offers_a_new_password_so_a_takeover_is_undone(
    app: Any, client: Any, other_client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    # The attacker, signed in as Ada, changes her address and her password.
    login(other_client, "ada@example.com")
    post(
        other_client,
        "/profile/password",
        current_password=PASSWORD,
        new_password=OTHER_PASSWORD,
        confirm_password=OTHER_PASSWORD,
    )
    post(
        other_client,
        "/profile/email",
        new_email="mallory@example.com",
        current_password=OTHER_PASSWORD,
    )
    work()
    (revert,) = [
        link_in(m, "/email-change/revert/")
        for m in mails(app)
        if m["To"] == "ada@example.com" and "/email-change/revert/" in body(m)
    ]
    r = client.post(revert, data={"csrf_token": csrf_token(client)})
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and "Set new password" in html and "New password" in html
    action = re.search(r'action="(/reset-password/[^"]+)"', html).group(1)  # type: ignore[union-attr]
    assert _set(client, action).status_code == 303
    assert other_client.get("/profile").status_code == 302
    assert login(client, "ada@example.com", OTHER_PASSWORD).status_code == 422
    assert login(client, "ada@example.com", NEW_PASSWORD).status_code == 302


def test_german_texts(app: Any, client: Any) -> None:
    de = {"Accept-Language": "de"}
    html = client.get("/login", headers=de).get_data(as_text=True)
    assert "Passwort vergessen?" in html
    html = client.get("/reset-password", headers=de).get_data(as_text=True)
    assert "Link zum Zurücksetzen senden" in html
    html = client.get("/reset-password/x", headers=de).get_data(as_text=True)
    assert "Dieser Link ist ungültig oder abgelaufen." in html


# The one error pattern (docs/accounts.md, "Forms and accessibility") on both forms.

HINT = "At least 15 characters. A few unrelated words make a good password."
SUMMARY = '<h2 class="error-summary-title" id="reset-error-summary-title">There is a problem</h2>'


def _summary_links(html: str) -> list[tuple[str, str]]:
    """(href, text) of the error summary's lines, in order."""
    box = html.split("data-error-summary", 1)[1].split("</ul>", 1)[0]
    return re.findall(r'<li><a href="#([^"]+)">([^<]+)</a></li>', box)


def _title(html: str) -> str:
    return re.search(r"<title>([^<]*)</title>", html).group(1)  # type: ignore[union-attr]


def test_request_form_empty_and_invalid_submits_follow_the_error_pattern(client: Any) -> None:
    blank = client.get("/reset-password").get_data(as_text=True)
    assert "data-error-summary" not in blank and _title(blank) == "Reset your password"
    assert "novalidate" in blank and 'id="live-status"' in blank
    for value, message in (
        ("", "Enter your email address."),
        ("ada@", "Enter a valid email address."),
    ):
        r = _ask(client, value)
        html = r.get_data(as_text=True)
        assert r.status_code == 422
        assert SUMMARY in html and 'role="alert"' in html and "autofocus" in html
        assert _summary_links(html) == [("reset-email", message)]
        assert _title(html) == "Error: Reset your password"
        assert '<p class="field-error" id="reset-email-error">' in html
        assert f'<span class="visually-hidden">Error:</span> {message}</p>' in html
        assert 'aria-invalid="true" aria-describedby="reset-email-error"' in html
        assert 'id="reset-email" name="email" type="email"' in html and "novalidate" in html
    assert 'value="ada@"' in html  # what was typed stays


def test_request_form_with_htmx_swaps_errors_and_announces_the_neutral_answer(
    client: Any,
) -> None:
    r = _ask(client, "", htmx=True)
    html = r.get_data(as_text=True)
    assert r.status_code == 422 and html.lstrip().startswith('<section id="reset-request"')
    assert _summary_links(html) == [("reset-email", "Enter your email address.")]
    assert "autofocus" not in html  # app.js moves focus after a swap
    assert 'id="live-status"' in html and 'hx-swap-oob="innerHTML"' in html
    r = _ask(client, "nobody@example.com", htmx=True)
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and "data-error-summary" not in html
    live = re.search(r'<div id="live-status"[^>]*>([^<]*)</div>', html).group(1)  # type: ignore[union-attr]
    assert live == NEUTRAL
    assert 'data-banner="success"' in html and html.count('role="status"') == 1  # no double reading


def test_request_limit_is_an_error_of_the_whole_form(client: Any) -> None:
    codes = [_ask(client, f"user{i}@example.com").status_code for i in range(19)]
    assert codes == [200] * 19
    assert _ask(client, "").status_code == 422  # the 20th of the hour: an empty submit counts
    r = _ask(client, "")
    html = r.get_data(as_text=True)
    assert r.status_code == 429 and "Too many attempts" in html
    assert _summary_links(html) == []  # no field to correct
    assert "data-error-summary" in html and _title(html).startswith("Error: ")


def _link(app: Any, client: Any, work: Any) -> str:
    register(client, "ada@example.com")
    _ask(client, "ada@example.com")
    work()
    (link,) = _reset_links(app)
    return link


def test_set_password_reports_every_error_at_once_in_field_order(
    app: Any, client: Any, work: Any
) -> None:
    link = _link(app, client, work)
    blank = client.get(link).get_data(as_text=True)
    assert "data-error-summary" not in blank and "novalidate" in blank
    assert 'aria-describedby="reset-new-password-hint"' in blank
    r = _set(client, link, "", "")
    html = r.get_data(as_text=True)
    assert r.status_code == 422 and SUMMARY in html
    assert _summary_links(html) == [
        ("reset-new-password", "Enter a new password."),
        ("reset-confirm-password", "Enter the new password again."),
    ]
    assert _title(html) == "Error: Set a new password"
    assert 'aria-describedby="reset-new-password-hint reset-new-password-error"' in html
    assert 'aria-describedby="reset-confirm-password-error"' in html
    assert html.count('aria-invalid="true"') == 2
    # A weak password and a mismatch: both at once.
    r = _set(client, link, "short", "shorter")
    assert r.status_code == 422
    assert _summary_links(r.get_data(as_text=True)) == [
        ("reset-new-password", "The password must be at least 15 characters long."),
        ("reset-confirm-password", "The new passwords do not match."),
    ]
    # The policy knows the link's account: a password built on its address is refused.
    r = _set(client, link, "ada@example.com")
    assert r.status_code == 422
    assert _summary_links(r.get_data(as_text=True)) == [
        ("reset-new-password", "The password must not be your email address.")
    ]
    # What needs the database (the current password) comes after, at its field.
    r = _set(client, link, PASSWORD)
    assert r.status_code == 422
    assert _summary_links(r.get_data(as_text=True)) == [
        ("reset-new-password", "The new password must be different from the current one.")
    ]
    assert PASSWORD not in r.get_data(as_text=True)  # passwords are never sent back
    assert _set(client, link).status_code == 303  # the link still works after errors


def test_set_password_with_htmx_and_an_invalid_link(app: Any, client: Any, work: Any) -> None:
    link = _link(app, client, work)
    r = _set(client, link, "", "", htmx=True)
    html = r.get_data(as_text=True)
    assert r.status_code == 422 and html.lstrip().startswith('<section id="reset-password"')
    assert len(_summary_links(html)) == 2 and "autofocus" not in html
    r = _set(client, "/reset-password/not-a-token", "", "")
    html = r.get_data(as_text=True)
    assert r.status_code == 400 and INVALID in html  # the link first: no form to correct
    assert "data-error-summary" not in html and "Request a new link" in html
    assert 'name="new_password"' not in html
    r = _set(client, "/reset-password/not-a-token", htmx=True)
    assert r.status_code == 400  # htmx swaps no 400: it loads the link's page instead
    assert r.headers["HX-Redirect"] == "/reset-password/not-a-token"


def test_revert_page_form_uses_the_pattern(
    app: Any, client: Any, other_client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    login(other_client, "ada@example.com")
    post(other_client, "/profile/email", new_email="ada.new@example.com", current_password=PASSWORD)
    work()
    (revert,) = [
        link_in(m, "/email-change/revert/")
        for m in mails(app)
        if m["To"] == "ada@example.com" and "/email-change/revert/" in body(m)
    ]
    html = client.post(revert, data={"csrf_token": csrf_token(client)}).get_data(as_text=True)
    assert '<h2 id="reset-password-title">Set a new password</h2>' in html
    assert 'id="reset-new-password" name="new_password" type="password"' in html
    assert 'aria-describedby="reset-new-password-hint"' in html and "novalidate" in html
    assert "data-error-summary" not in html and not _title(html).startswith("Error")
    action = re.search(r'action="(/reset-password/[^"]+)"', html).group(1)  # type: ignore[union-attr]
    r = _set(client, action, "", "", htmx=True)  # what the revert page's htmx swap gets
    assert r.status_code == 422 and len(_summary_links(r.get_data(as_text=True))) == 2
