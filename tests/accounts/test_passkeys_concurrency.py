"""A passkey answer sent several times at once (a double click, a replay
racing the original) signs in once: the challenge is spent by one DELETE, and
the sign count moves by one conditional UPDATE."""

from __future__ import annotations

import json
import threading
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from tests.support.authenticator import Authenticator
from tests.support.passkeys import SIGNIN, SIGNIN_OPTIONS, add, options_json
from tests.support.web import csrf_token
from webapp.accounts.factors.tables import user_factors
from webapp.accounts.tables import user_sessions
from webapp.core import db


def twins(app: Any, client: FlaskClient, n: int) -> list[FlaskClient]:
    """`n` clients holding `client`'s session cookie: one browser session."""
    cookie = client.get_cookie("session")
    assert cookie is not None
    out = []
    for _ in range(n):
        c = app.test_client()
        c.set_cookie("session", cookie.value)
        out.append(c)
    return out


def test_one_answer_sent_four_times_at_once_signs_in_once(app: Any, client: Any, user: Any) -> None:
    auth = Authenticator()
    assert add(client, auth).status_code == 200
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    answer = json.dumps(auth.get(options_json(client, SIGNIN_OPTIONS)))
    token = csrf_token(client, "/login")
    clients, results = twins(app, client, 4), []
    start = threading.Barrier(4)

    def go(c: FlaskClient) -> None:
        with app.app_context():
            start.wait()
            r = c.post(SIGNIN, data={"credential": answer, "client_error": "", "csrf_token": token})
            results.append(r.status_code)

    threads = [threading.Thread(target=go, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [302, 422, 422, 422]
    with db.reading() as conn:
        assert len(conn.execute(select(user_sessions.c.digest)).all()) == 1
        assert conn.execute(select(user_factors.c.sign_count)).scalar_one() == 1
