"""The account section's "Sign out other sessions" asks for the same fresh
proof as Your devices (issue 21, point 3): a stolen session older than
REAUTH_SECONDS cannot sign its owner out everywhere without the password."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask.testing import FlaskClient

from tests.devices.helpers import signed_in
from tests.support.accounts import PASSWORD
from tests.support.web import post
from webapp.core.clock import FrozenClock


def test_with_a_fresh_proof_it_signs_the_others_out_at_once(
    app: Any, client: FlaskClient, user: Any
) -> None:
    phone = signed_in(app)
    done = post(client, "/profile/sessions", htmx=True)
    assert done.status_code == 200 and "All other sessions have been signed out." in done.get_data(
        as_text=True
    )
    assert phone.get("/profile").status_code == 302


def test_a_stale_proof_asks_for_the_password_and_only_the_right_one_acts(
    app: Any, client: FlaskClient, user: Any, clock: FrozenClock
) -> None:
    phone = signed_in(app)
    clock.advance(timedelta(seconds=301))
    ask = post(client, "/profile/sessions", htmx=True)
    html = ask.get_data(as_text=True)
    assert ask.status_code == 200 and 'data-testid="profile-sessions-confirm"' in html
    assert 'name="current_password"' in html and 'name="confirm" value="1"' in html
    assert phone.get("/profile").status_code == 200  # asking signed nobody out
    wrong = post(client, "/profile/sessions", htmx=True, confirm="1", current_password="nope nope")
    assert wrong.status_code == 422
    assert phone.get("/profile").status_code == 200
    empty = post(client, "/profile/sessions", htmx=True, confirm="1", current_password="")
    assert empty.status_code == 422
    right = post(client, "/profile/sessions", htmx=True, confirm="1", current_password=PASSWORD)
    assert right.status_code == 200
    assert "All other sessions have been signed out." in right.get_data(as_text=True)
    assert phone.get("/profile").status_code == 302
    assert client.get("/profile").status_code == 200  # this browser stays
