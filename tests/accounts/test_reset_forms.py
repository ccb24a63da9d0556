""" "Forgot password?" forms follow the one error pattern (docs/accounts.md, "Forms
and accessibility"): summary with links, field messages tied by aria-describedby,
every error at once, "Error: " titles, the live region, 422/429/400."""

from __future__ import annotations

import re
from typing import Any

from tests.accounts.test_reset import INVALID, NEUTRAL, _ask, _reset_links, _set
from tests.support.accounts import PASSWORD, body, link_in, login, mails, register
from tests.support.web import csrf_token, post

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
