"""The shared form pattern at the HTML level (no browser): every error of a submit
at once in field order, the summary and field markup, the "Error: " title, the
skip link, `novalidate`, the persistent live region, and the Form API itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flask import Flask
from wtforms import PasswordField, StringField

from tests.support.accounts import PASSWORD
from tests.support.web import csrf_token, post
from webapp.ui.forms import Form, check, required


def summary_items(html: str) -> list[str]:
    match = re.search(r"<div class=\"error-summary\".*?</ul>", html, re.S)
    assert match, "no error summary"
    return [re.sub(r"<[^>]+>", "", li).strip() for li in re.findall(r"<li>(.*?)</li>", match[0])]


def test_sign_up_reports_every_error_at_once_in_field_order(client: Any) -> None:
    r = post(client, "/register", email="", password="", confirm="")
    html = r.get_data(as_text=True)
    assert r.status_code == 422
    assert summary_items(html) == [
        "Enter your email address.",
        "Enter a password.",
        "Enter the password again.",
    ]
    assert "<title>Error: Create account</title>" in html
    # Each message sits above its input, which it describes together with the hint.
    assert re.search(
        r'<p class="field-error" id="register-password-error"><span class="visually-hidden">'
        r"Error:</span> Enter a password.</p>\s*<input id=\"register-password\"",
        html,
    )
    assert (
        'aria-invalid="true" aria-describedby="register-password-hint register-password-error"'
        in html
    )
    assert '<a href="#register-email">Enter your email address.</a>' in html
    r = post(client, "/register", email="x@example", password="short", confirm="other")
    assert summary_items(r.get_data(as_text=True)) == [
        "Enter a valid email address.",
        "The password must be at least 15 characters long.",
        "The passwords do not match.",
    ]


def test_profile_reports_the_wrong_current_password_with_the_other_errors(
    client: Any, user: Any
) -> None:
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password="wrong wrong wrong",
        new_password="short",
        confirm_password="",
    )
    assert r.status_code == 422
    assert summary_items(r.get_data(as_text=True)) == [
        "The current password is not correct.",
        "The password must be at least 15 characters long.",
        "Enter the new password again.",
    ]
    r = post(client, "/profile/email", htmx=True, new_email="", current_password="")
    assert summary_items(r.get_data(as_text=True)) == [
        "Enter your new email address.",
        "Enter your current password.",
    ]


def test_success_is_written_into_the_persistent_live_region(client: Any, user: Any) -> None:
    r = post(client, "/profile/sessions", htmx=True)
    html = r.get_data(as_text=True)
    assert re.search(
        r'<div id="live-status"[^>]*hx-swap-oob="innerHTML">All other sessions have been signed out.</div>',
        html,
    )
    r = post(client, "/profile/delete", htmx=True, current_password="")
    assert re.search(
        r'<div id="live-status"[^>]*hx-swap-oob="innerHTML"></div>', r.get_data(as_text=True)
    )
    # The page has exactly one region; a section swap never contains another.
    page = client.get("/profile").get_data(as_text=True)
    assert page.count('<div id="live-status"') == 1 and 'role="status"' in page


def test_every_page_has_the_skip_link_first_novalidate_forms_and_no_inline_code(
    app: Flask, client: Any, user: Any
) -> None:
    pages = {"/profile": client.get("/profile").get_data(as_text=True)}
    anonymous = app.test_client()
    for path in ("/login", "/register"):
        pages[path] = anonymous.get(path).get_data(as_text=True)
    pages["/register (errors)"] = post(anonymous, "/register").get_data(as_text=True)
    for path, html in pages.items():
        body = html[html.index("<body") :]
        first = re.search(r"<(a|button|input(?! type=\"hidden\")|select|textarea)\b[^>]*>", body)
        assert first and 'class="skip-link" href="#main"' in first[0], path
        assert ">Skip to main content</a>" in body, path
        assert '<main id="main" tabindex="-1">' in body, path
        forms = re.findall(r"<form\b[^>]*>", html)
        assert forms and all("novalidate" in f for f in forms), path
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), path  # strict CSP
        assert " style=" not in html, path


def test_titles_carry_the_prefix_only_while_errors_show(client: Any) -> None:
    assert "<title>Sign in</title>" in client.get("/login").get_data(as_text=True)
    r = post(client, "/login", email="ada@example.com", password="")
    assert "<title>Error: Sign in</title>" in r.get_data(as_text=True)
    de = client.post(
        "/login",
        data={"csrf_token": csrf_token(client), "email": "", "password": PASSWORD},
        headers={"Accept-Language": "de"},
    ).get_data(as_text=True)
    assert "<title>Fehler: Anmelden</title>" in de and "Es gibt ein Problem" in de


class _Sample(Form):
    id_prefix = "sample"
    first_name = StringField(validators=[required("auth.errors.emailRequired")])
    code = StringField(validators=[check(lambda v: None if v.isdigit() else "digits only")])
    secret = PasswordField()


def test_form_api_orders_problems_and_links_them(app: Flask) -> None:
    from werkzeug.datastructures import MultiDict

    with app.test_request_context():
        form = _Sample(MultiDict({"first_name": "", "code": "x1", "secret": "s"}))
        assert not form.validate()
        assert form.first_name.id == "sample-first-name"  # prefixed, unique on the page
        form.add_error("code", "a second message")  # one message per field: ignored
        form.add_error(None, "Too many attempts.")
        form.add_error(None, "Refused.", link_to="secret")
        form.add_error("secret", "Wrong.")
        assert [(p.text, p.href) for p in form.problems()] == [
            ("Too many attempts.", None),
            ("Refused.", "sample-secret"),
            ("Enter your email address.", "sample-first-name"),
            ("digits only", "sample-code"),
            ("Wrong.", "sample-secret"),
        ]
        assert form.has_errors and not _Sample().has_errors
        # An empty optional field is not checked by `check` rules.
        assert _Sample(MultiDict({"first_name": "a", "code": ""})).validate()


def test_every_field_call_passes_a_form() -> None:
    """The macro's old positional form `field("id", "name", ...)` (no error pattern)
    is gone: a template still calling it would fail at render time, so catch it here
    for every template, including pages no other test renders."""
    templates = Path(__file__).resolve().parents[2] / "templates"
    old_calls = [
        f"{path.relative_to(templates)}: {m.group(0)}"
        for path in sorted(templates.rglob("*.html"))
        for m in re.finditer(r"\bfield\(\s*[\"'][^)]*", path.read_text())
    ]
    assert not old_calls, old_calls
    assert list(templates.rglob("*.html"))  # the scan saw the templates
