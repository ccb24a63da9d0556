"""Every account mail is recorded in the transaction of the change
that causes it and delivered by the worker, surviving a mail outage and Redis
down at commit (real SMTP server and a private redis-server, stopped and
started)."""

from __future__ import annotations

import email
import email.policy
import re
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from tests.mailserver import PrivateRedis, SmtpServer
from tests.support.accounts import PASSWORD, login, register, user_row
from tests.support.web import csrf_token, post
from webapp.accounts.erase_accounts import erase_accounts
from webapp.core import db
from webapp.mail.outbox.jobs import sweep_outbox
from webapp.mail.outbox.tables import mail_outbox


def _received(server: SmtpServer) -> list[Any]:
    return [
        email.message_from_bytes(e.content, policy=email.policy.default)
        for e in server.inbox.messages
    ]


def _text(msg: Any) -> str:
    return str(msg.get_body(preferencelist=("plain",)).get_content())


def _revert_notices(server: SmtpServer, to: str) -> list[Any]:
    return [m for m in _received(server) if m["To"] == to and "/email-change/revert/" in _text(m)]


def _kinds(user_id: str) -> list[str]:
    with db.reading() as conn:
        return list(
            conn.execute(
                select(mail_outbox.c.kind)
                .where(mail_outbox.c.user_id == user_id)
                .order_by(mail_outbox.c.id)
            ).scalars()
        )


def _change_email(client: Any, new: str) -> None:
    r = post(client, "/profile/email", htmx=True, new_email=new, current_password=PASSWORD)
    assert r.status_code == 200, r.get_data(as_text=True)


def _revert_link_works(app: Any, notice: Any) -> None:
    client = app.test_client()  # the owner, elsewhere
    path = re.search(r"http://localhost(/email-change/revert/\S+)", _text(notice)).group(1)  # type: ignore[union-attr]
    r = client.post(path, data={"csrf_token": csrf_token(client)})
    assert r.status_code == 200 and "ada@example.com" in r.get_data(as_text=True)
    assert user_row("ada@example.com") is not None


def test_revert_notice_is_delivered_after_a_mail_outage(
    app: Any, client: Any, smtp: SmtpServer, work: Any, clock: Any
) -> None:
    register(client, "ada@example.com")
    login(client, "ada@example.com")
    smtp.stop()
    _change_email(client, "mallory@example.com")
    work()
    clock.advance(11)
    sweep_outbox(None, clock.now())
    work()  # the server is still down: the second attempt fails too
    assert smtp.inbox.messages == []
    smtp.start()
    clock.advance(31)
    sweep_outbox(None, clock.now())
    work()
    notices = _revert_notices(smtp, "ada@example.com")
    assert len(notices) == 1
    _revert_link_works(app, notices[0])


def test_revert_notice_is_delivered_after_redis_was_down_at_commit(
    app: Any, client: Any, smtp: SmtpServer, clock: Any, private_redis: PrivateRedis
) -> None:
    cfg = app.config["APP_CONFIG"]
    app.config["APP_CONFIG"] = cfg.__class__(**{**cfg.__dict__, "redis_url": private_redis.url})
    register(client, "ada@example.com")
    login(client, "ada@example.com")
    private_redis.work()
    private_redis.stop()
    _change_email(client, "mallory@example.com")  # the kick after commit is lost
    private_redis.start()
    private_redis.work()
    assert _revert_notices(smtp, "ada@example.com") == []
    sweep_outbox(None, clock.now())  # the minute sweep finds the row
    private_redis.work()
    notices = _revert_notices(smtp, "ada@example.com")
    assert len(notices) == 1
    sweep_outbox(None, clock.now() + timedelta(hours=1))  # nothing is sent twice
    private_redis.work()
    assert len(_revert_notices(smtp, "ada@example.com")) == 1
    _revert_link_works(app, notices[0])


def test_every_account_mail_is_recorded_with_its_change(
    app: Any, client: Any, other_client: Any, work: Any, clock: Any
) -> None:
    register(client, "ada@example.com")
    ada = user_row("ada@example.com")
    register(other_client, "ada@example.com")  # someone tries the address again
    login(client, "ada@example.com")
    new = "tangerine submarine umbrella"
    post(
        client,
        "/profile/password",
        current_password=PASSWORD,
        new_password=new,
        confirm_password=new,
    )
    post(client, "/profile/delete", current_password=new)
    post(client, "/profile/cancel-deletion")
    post(client, "/profile/email", new_email="ada2@example.com", current_password=new)
    assert _kinds(ada.id) == [
        "verification",
        "registration-attempt",
        "password-changed",
        "deletion-requested",
        "deletion-cancelled",
        "verification",
        "email-changed-notice",
    ]
    work()
    with db.reading() as conn:
        rows = list(conn.execute(select(mail_outbox)))
    assert {r.status for r in rows} == {"sent"}
    assert all(r.recipient is None and r.body is None for r in rows)


def test_erasure_deletes_the_users_outbox_rows(
    app: Any, client: Any, work: Any, clock: Any, smtp: SmtpServer
) -> None:
    smtp.stop()  # the mails stay unsent, with address and link in the outbox
    register(client, "ada@example.com")
    login(client, "ada@example.com")
    ada = user_row("ada@example.com")
    post(client, "/profile/delete", current_password=PASSWORD)
    work()
    assert _kinds(ada.id) == ["verification", "deletion-requested"]
    clock.advance(timedelta(days=15))
    erase_accounts("default", clock.now())
    assert _kinds(ada.id) == []
