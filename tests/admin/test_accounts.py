"""/admin/accounts (issue 21, point 10): an admin looks up an account and sees
whether it has a second factor, never which one and never a secret."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.support.accounts import PLAIN
from tests.support.factors import set_up


def test_shows_whether_there_is_a_second_factor_never_which(
    admin: FlaskClient, plain: FlaskClient, clock: Any
) -> None:
    def looked_up(address: str) -> str:
        r = admin.get(f"/admin/accounts?email={address}")
        assert r.status_code == 200
        return str(r.get_data(as_text=True))

    page = looked_up(PLAIN)
    assert 'data-testid="admin-second-factor">No<' in page
    secret, codes = set_up(plain)
    page = looked_up(PLAIN.upper())
    assert 'data-testid="admin-second-factor">Yes<' in page
    lowered = page.lower()
    assert "authenticator" not in lowered and "totp" not in lowered
    assert secret not in page and not any(c in page for c in codes)
    assert "No account with that address." in looked_up("nobody@example.com")
    assert admin.get("/admin/accounts?email=" + "x" * 5000).status_code == 200
    assert admin.get("/admin/accounts?tenant=nope").status_code == 404
