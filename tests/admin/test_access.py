"""Who may enter /admin: only admins. Everyone else gets the app's ordinary 404
for every admin URL, GET and POST (with or without a CSRF token); admins need
CSRF for every action; grant-admin and revoke-admin are events by the operator."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.support.accounts import PLAIN, login, register
from tests.support.web import csrf_token, post, without_csrf
from webapp.accounts.users import find_by_email, stream_of
from webapp.core import db
from webapp.eventstore import read_stream

# A fixed id of no run: the test ids name it, and pytest-xdist workers must collect the same ids.
RUN = "6f1c2a0e-4b7d-4c35-9a8e-2d5f7e913b64"
# Every admin route with a concrete URL: the table must name them all (checked below).
ROUTES = {
    "admin.home": [("GET", "/admin/")],
    "admin.runs": [("GET", "/admin/runs"), ("GET", "/admin/runs?status=failed")],
    "admin.run": [("GET", f"/admin/runs/{RUN}")],
    "admin.confirm": [
        ("GET", f"/admin/runs/{RUN}/{a}")
        for a in ("cancel", "retry", "pause", "resume", "pause-workflow", "resume-workflow")
    ],
    "admin.act": [
        ("POST", f"/admin/runs/{RUN}/{a}")
        for a in ("cancel", "retry", "pause", "resume", "pause-workflow", "resume-workflow")
    ],
    "admin.migrate": [("POST", f"/admin/runs/{RUN}/migrate")],
    "admin.rerun": [("POST", f"/admin/runs/{RUN}/rerun")],
    "admin.bulk_confirm": [
        ("GET", f"/admin/bulk/{a}?status=failed") for a in ("cancel", "retry", "pause")
    ],
    "admin.bulk_act": [("POST", f"/admin/bulk/{a}") for a in ("cancel", "retry", "pause")],
    "admin.stuck": [("GET", "/admin/stuck")],
    "admin.projections_page": [("GET", "/admin/projections")],
    "admin.retry_parked": [("POST", "/admin/projections/parked/1/retry")],
    "admin.skip_parked": [("POST", "/admin/projections/parked/1/skip")],
    "admin.queues": [("GET", "/admin/queues")],
    "admin.retry_mail": [("POST", "/admin/queues/mails/1/retry")],
    "admin.retry_all_mails": [("POST", "/admin/queues/mails/retry-all")],
    "admin.accounts": [("GET", "/admin/accounts"), ("GET", "/admin/accounts?email=a@b.c")],
    "admin.api_tokens": [("GET", "/admin/api-tokens")],
    "admin.create_api_token": [("POST", "/admin/api-tokens")],
    "admin.confirm_revoke_api_token": [("GET", f"/admin/api-tokens/{RUN}/revoke")],
    "admin.revoke_api_token": [("POST", f"/admin/api-tokens/{RUN}/revoke")],
}
ALL = [(m, u) for urls in ROUTES.values() for m, u in urls]
# Not routes, but must not tell a stranger anything either: a wrong method (405),
# the slash redirect (308), an unknown page under /admin.
ODD = [
    ("GET", "/admin"),
    ("GET", "/admin/nope"),
    ("GET", "/admin/queues/mails/retry-all"),
    ("PUT", "/admin/runs"),
    ("DELETE", f"/admin/runs/{RUN}"),
    ("POST", "/admin/runs"),
]
POSTS = [u for m, u in ALL if m == "POST"]


def test_the_table_names_every_admin_route(app: Flask) -> None:
    endpoints = {r.endpoint for r in app.url_map.iter_rules() if r.endpoint.startswith("admin.")}
    assert endpoints == set(ROUTES)


def _not_found_like_any_unknown_url(client: FlaskClient, method: str, url: str) -> None:
    unknown = client.open("/no-such-page", method=method)
    resp = client.open(url, method=method, data={"csrf_token": "x"} if method == "POST" else None)
    assert resp.status_code == 404, (method, url)
    # The app's normal 404 page, nothing more (its CSRF token is signed with the second).
    assert without_csrf(resp.get_data(as_text=True)) == without_csrf(unknown.get_data(as_text=True))
    assert "admin" not in resp.get_data(as_text=True).lower()


@pytest.mark.parametrize(("method", "url"), ALL + ODD)
def test_anonymous_gets_404(client: FlaskClient, method: str, url: str) -> None:
    _not_found_like_any_unknown_url(client, method, url)


@pytest.mark.parametrize(("method", "url"), ALL + ODD)
def test_signed_in_non_admin_gets_404(plain: FlaskClient, method: str, url: str) -> None:
    _not_found_like_any_unknown_url(plain, method, url)


def test_non_admin_gets_404_even_with_a_valid_csrf_token(plain: FlaskClient) -> None:
    tok = csrf_token(plain, "/profile")
    for url in POSTS:
        assert plain.post(url, data={"csrf_token": tok}).status_code == 404, url


@pytest.mark.parametrize("url", POSTS)
def test_every_admin_action_needs_csrf(admin: FlaskClient, url: str) -> None:
    resp = admin.post(url)
    assert resp.status_code == 400
    assert "this form has expired" in resp.get_data(as_text=True).lower()  # the CSRF page
    assert admin.post(url, data={"csrf_token": "forged"}).status_code == 400


def test_admin_sees_the_nav_link_and_others_do_not(admin: FlaskClient, plain: FlaskClient) -> None:
    assert 'data-testid="nav-admin"' in admin.get("/profile").get_data(as_text=True)
    assert 'data-testid="nav-admin"' not in plain.get("/profile").get_data(as_text=True)
    assert admin.get("/admin/runs").status_code == 200


def _user_events(address: str) -> list[Any]:
    with db.reading() as conn:
        user = find_by_email(conn, address)
        assert user is not None
        return read_stream(conn, stream_of(user.tenant_id, user.id))


def test_grant_and_revoke_admin_are_events_by_the_operator(
    app: Flask, client: FlaskClient, runner: Any
) -> None:
    assert register(client, PLAIN).status_code == 200
    result = runner.invoke(args=["users", "grant-admin", PLAIN.upper()])
    assert result.exit_code == 0, result.output
    assert f"{PLAIN.upper()} is now an admin" in result.output
    again = runner.invoke(args=["users", "grant-admin", PLAIN])
    assert "already an admin" in again.output
    granted = _user_events(PLAIN)[-1]
    assert granted.type == "user.admin-granted"
    assert granted.metadata["actor"].startswith("cli:")
    assert login(client, PLAIN).status_code == 302
    assert client.get("/admin/runs").status_code == 200
    result = runner.invoke(args=["users", "revoke-admin", PLAIN])
    assert result.exit_code == 0 and "is now not an admin" in result.output
    assert _user_events(PLAIN)[-1].type == "user.admin-revoked"
    assert client.get("/admin/runs").status_code == 404  # at the very next request


def test_grant_admin_for_an_unknown_address_says_so(app: Flask, runner: Any) -> None:
    result = runner.invoke(args=["users", "grant-admin", "nobody@example.com"])
    assert result.exit_code != 0
    assert "no account with the address 'nobody@example.com'" in result.output


def test_admin_actions_answer_without_500_for_hostile_ids(admin: FlaskClient) -> None:
    for url in ("/admin/runs/not-a-uuid", "/admin/runs/%00", f"/admin/runs/{RUN}/explode"):
        assert admin.get(url).status_code == 404, url
    assert post(admin, f"/admin/runs/{RUN}/cancel").status_code == 404
    assert post(admin, "/admin/projections/parked/999999/retry").status_code == 409
    assert post(admin, "/admin/queues/mails/999999/retry").status_code == 409
    assert post(admin, "/admin/projections/parked/abc/retry").status_code == 404
