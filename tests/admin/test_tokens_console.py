"""/admin/api-tokens: an admin creates a token (its secret shown once, in
that answer only), sees it listed with its last use, and revokes it; the API
refuses it from the next request. Everyone else gets 404."""

from __future__ import annotations

import re
from typing import Any

from flask.testing import FlaskClient

from tests.support.api import bearer
from tests.support.web import post


def test_create_list_and_revoke_a_token_in_the_console(admin: FlaskClient, client: Any) -> None:
    page = admin.get("/admin/api-tokens").get_data(as_text=True)
    assert 'data-testid="admin-tokens-empty"' in page and "API tokens" in page
    made = post(
        admin,
        "/admin/api-tokens",
        htmx=True,
        name="storefront",
        tenant="default",
        scopes="runs:read",
    )
    body = made.get_data(as_text=True)
    assert made.status_code == 200 and "Token storefront created." in body
    secret = re.search(r"<code>(wfk_[^<]+)</code>", body).group(1)  # type: ignore[union-attr]
    assert "it is not shown again" in body
    assert admin.get("/api/v1/runs", headers=bearer(secret)).status_code == 200
    listed = admin.get("/admin/api-tokens").get_data(as_text=True)
    assert secret not in listed and "storefront" in listed and "runs:read" in listed
    assert ">never<" not in listed  # its last use shows
    token_id = re.search(r'data-token-id="([^"]+)"', listed).group(1)  # type: ignore[union-attr]
    # Revoke asks first; asking changes nothing.
    assert f'href="/admin/api-tokens/{token_id}/revoke"' in listed
    asked = admin.get(f"/admin/api-tokens/{token_id}/revoke", headers={"HX-Request": "true"})
    question = asked.get_data(as_text=True)
    assert asked.status_code == 200 and "Revoke the token storefront?" in question
    assert question.lstrip().startswith('<section id="admin-tokens"')  # the section alone
    assert f'action="/admin/api-tokens/{token_id}/revoke"' in question
    assert "refused from their next request" in question
    assert admin.get("/api/v1/runs", headers=bearer(secret)).status_code == 200
    full = admin.get(f"/admin/api-tokens/{token_id}/revoke").get_data(as_text=True)
    assert "<html" in full and "Revoke the token storefront?" in full  # without JavaScript
    revoked = post(admin, f"/admin/api-tokens/{token_id}/revoke", htmx=True)
    assert revoked.status_code == 200 and "Token storefront revoked" in revoked.get_data(
        as_text=True
    )
    assert admin.get("/api/v1/runs", headers=bearer(secret)).status_code == 401
    again = post(admin, f"/admin/api-tokens/{token_id}/revoke")
    assert again.status_code == 409
    for gone in (token_id, "no-such-token"):
        asked_again = admin.get(f"/admin/api-tokens/{gone}/revoke")
        assert asked_again.status_code == 409
        assert "already revoked or does not exist" in asked_again.get_data(as_text=True)


def test_a_bad_token_form_says_every_problem(admin: FlaskClient) -> None:
    resp = post(admin, "/admin/api-tokens", name="", tenant="nowhere")
    body = resp.get_data(as_text=True)
    assert resp.status_code == 422
    for text in (
        "Enter a name for the token",
        "Choose a tenant from the list.",
        "Choose at least one scope",
    ):
        assert text in body
    long = post(admin, "/admin/api-tokens", name="x" * 101, tenant="default", scopes="runs:read")
    assert long.status_code == 422 and "at most 100 characters" in long.get_data(as_text=True)
    assert 'data-testid="admin-tokens-empty"' in long.get_data(as_text=True)


def test_only_admins_see_the_tokens(plain: FlaskClient) -> None:
    assert plain.get("/admin/api-tokens").status_code == 404
    assert plain.post("/admin/api-tokens", data={"name": "x"}).status_code == 404
    assert plain.get("/admin/api-tokens/any/revoke").status_code == 404
