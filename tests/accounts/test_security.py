"""The security list of issue 4, one rule per test."""

from __future__ import annotations

from typing import Any

from tests.support.accounts import PASSWORD, login, register
from tests.support.web import csrf_token, post


def test_csrf_is_required_on_every_form(client: Any, user: Any) -> None:
    for path in (
        "/profile/password",
        "/profile/email",
        "/profile/delete",
        "/profile/sessions",
        "/logout",
    ):
        assert client.post(path, data={"current_password": PASSWORD}).status_code == 400, path
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    assert (
        client.post("/login", data={"email": "ada@example.com", "password": PASSWORD}).status_code
        == 400
    )
    assert client.post("/register", data={"email": "x@example.com"}).status_code == 400


def test_csrf_token_in_the_htmx_header_is_accepted(client: Any, user: Any) -> None:
    token = csrf_token(client, "/profile")
    r = client.post("/profile/sessions", headers={"HX-Request": "true", "X-CSRFToken": token})
    assert r.status_code == 200
    html = client.get("/profile").get_data(as_text=True)
    assert '<meta name="csrf-token"' in html and 'hx-headers=\'{"X-CSRFToken": ' in html


def test_sign_in_is_limited_to_5_failures_per_account(client: Any) -> None:
    register(client, "ada@example.com")
    for _ in range(5):
        assert login(client, "ada@example.com", "wrong wrong wrong").status_code == 422
    r = login(client, "ADA@example.com")  # even the right password, for a while
    assert r.status_code == 429
    assert "Too many attempts" in r.get_data(as_text=True)


def test_sign_in_is_limited_to_30_per_minute_per_address(client: Any) -> None:
    for i in range(30):
        assert login(client, f"user{i}@example.com", "wrong wrong wrong").status_code == 422
    assert login(client, "another@example.com", "wrong wrong wrong").status_code == 429


def test_current_password_checks_are_limited_to_5_per_minute(client: Any, user: Any) -> None:
    for _ in range(5):
        r = post(
            client,
            "/profile/email",
            htmx=True,
            new_email="n@example.com",
            current_password="wrong x",
        )
        assert r.status_code == 422
    r = post(client, "/profile/delete", htmx=True, current_password=PASSWORD)
    assert r.status_code == 429
    assert r.get_data(as_text=True).lstrip().startswith('<section id="profile-danger"')
    summary = r.get_data(as_text=True).split('role="alert"', 1)[1].split("</div>", 1)[0]
    assert "<li>Too many attempts" in summary


def test_registration_is_limited_to_20_per_minute_per_address(client: Any) -> None:
    for i in range(20):
        assert register(client, f"u{i}@example.com", "short").status_code == 422
    assert register(client, "late@example.com").status_code == 429


def test_strict_headers_on_every_page(client: Any) -> None:
    for path in ("/login", "/register"):
        r = client.get(path)
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Cache-Control"] == "no-store"
        html = r.get_data(as_text=True)
        assert "<script>" not in html and " on" + "click=" not in html


def test_session_cookie_flags(app: Any, make_config: Any, client: Any) -> None:
    r = client.get("/login")
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    from webapp import create_app

    secure = create_app(make_config(session_cookie_secure=True)).test_client()
    assert "Secure" in secure.get("/login").headers["Set-Cookie"]


def test_request_body_size_is_limited(client: Any) -> None:
    r = client.post("/login", data={"email": "x" * (70 * 1024)})
    assert r.status_code == 413


def test_state_changes_are_post_only(client: Any, user: Any) -> None:
    for path in (
        "/logout",
        "/profile/password",
        "/profile/email",
        "/profile/delete",
        "/profile/cancel-deletion",
        "/profile/sessions",
        "/profile/language",
        "/profile/resend-verification",
    ):
        assert client.get(path).status_code == 405, path


def test_htmx_request_without_a_session_is_sent_to_login(client: Any) -> None:
    r = client.post(
        "/profile/sessions", headers={"HX-Request": "true", "X-CSRFToken": csrf_token(client)}
    )
    assert r.status_code == 401 and r.headers["HX-Redirect"].startswith("/login?next=")


def test_sign_in_works_and_stays_limited_while_the_rate_limit_redis_is_down(
    make_config: Any, tmp_path: Any
) -> None:
    """Redis down must not fail a request: limits fall back to this process."""
    from tests.support.web import FreshGClient
    from webapp import create_app

    dead = f"redis+unix://{tmp_path / 'nobody-listens.sock'}"
    app = create_app(make_config(ratelimit_storage=dead))
    app.test_client_class = FreshGClient
    with app.app_context():
        c = app.test_client()
        assert register(c, "ada@example.com").status_code == 200
        for _ in range(5):
            assert login(c, "ada@example.com", "wrong wrong wrong").status_code == 422
        assert login(c, "ada@example.com").status_code == 429
        assert login(app.test_client(), "bob@example.com", "wrong wrong wrong").status_code == 422
