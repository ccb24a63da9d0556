"""The mail outbox: recorded with the change, delivered by the worker with
backoff, never lost to a mail outage, Redis down at commit or a killed
worker, and sent once in the normal case."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from tests.mailserver import PrivateRedis, SmtpServer
from webapp.core import db
from webapp.core.config import ROOT
from webapp.mail import outbox
from webapp.mail.outbox import delivery
from webapp.mail.outbox.jobs import sweep_outbox
from webapp.mail.outbox.tables import mail_outbox


def _record(to: str = "ada@example.com", user_id: str | None = "u1", **kw: Any) -> int:
    with db.transaction() as conn:
        outbox_id = outbox.record(
            conn,
            outbox.Mail(to, "Hello", "Open http://localhost/x/secret-token now."),
            tenant_id="default",
            user_id=user_id,
            kind=kw.pop("kind", "test"),
            **kw,
        )
    assert outbox_id is not None
    return outbox_id


def _row(outbox_id: int) -> Any:
    with db.reading() as conn:
        return conn.execute(select(mail_outbox).where(mail_outbox.c.id == outbox_id)).one()


def _until(pred: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def _sweep(clock: Any) -> None:
    sweep_outbox(None, clock.now())


def test_a_mail_recorded_in_a_rolled_back_transaction_does_not_exist(
    app: Any, smtp: SmtpServer, work: Any
) -> None:
    with pytest.raises(RuntimeError), db.transaction() as conn:
        outbox.record(
            conn,
            outbox.Mail("ada@example.com", "Hi", "Body"),
            tenant_id="default",
            user_id="u1",
            kind="test",
        )
        raise RuntimeError("the change failed")
    work()
    with db.reading() as conn:
        assert conn.execute(select(mail_outbox)).first() is None
    assert smtp.inbox.messages == []


def test_delivered_after_commit_then_address_and_body_are_cleared(
    app: Any, smtp: SmtpServer, work: Any
) -> None:
    outbox_id = _record()
    work()
    assert len(smtp.inbox.messages) == 1
    assert "secret-token" in smtp.inbox.bodies()[0]
    row = _row(outbox_id)
    assert row.status == "sent" and row.attempts == 1 and row.sent_at is not None
    assert row.recipient is None and row.body is None


def test_a_mail_outage_is_retried_with_backoff_until_sent(
    app: Any, smtp: SmtpServer, work: Any, clock: Any, caplog: Any
) -> None:
    caplog.set_level("INFO")
    smtp.stop()
    outbox_id = _record()
    work()
    row = _row(outbox_id)
    assert row.status == "pending" and row.attempts == 1
    assert row.next_attempt_at == clock.now() + timedelta(seconds=10)
    clock.advance(5)
    _sweep(clock)
    work()
    assert _row(outbox_id).attempts == 1  # not due yet
    clock.advance(6)
    _sweep(clock)
    work()
    row = _row(outbox_id)
    assert row.attempts == 2 and row.next_attempt_at == clock.now() + timedelta(seconds=30)
    smtp.start()
    clock.advance(31)
    _sweep(clock)
    work()
    assert len(smtp.inbox.messages) == 1 and _row(outbox_id).status == "sent"

    # No log line carries the link; the outbox's own lines name the row and the
    # error class, not the address.
    def logged(prefix: str) -> str:
        return " ".join(
            f"{r.getMessage()} {r.__dict__}" for r in caplog.records if r.name.startswith(prefix)
        )

    assert "secret-token" not in logged("webapp")
    assert "MailError" in logged("webapp.mail.outbox")
    assert "ada@example.com" not in logged("webapp.mail.outbox")


def test_after_the_last_attempt_the_mail_is_failed_listed_and_can_be_retried(
    app: Any, smtp: SmtpServer, work: Any, clock: Any, runner: Any, make_config: Any
) -> None:
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=smtp.port, mail_max_attempts=3
    )
    smtp.stop()
    outbox_id = _record()
    work()
    for _ in range(4):
        clock.advance(timedelta(hours=1))
        _sweep(clock)
        work()
    row = _row(outbox_id)
    assert row.status == "failed" and row.attempts == 3
    listed = runner.invoke(args=["mail", "failed"])
    assert listed.exit_code == 0 and f"{outbox_id:>6} test" in listed.output
    assert "ada@example.com" not in listed.output and "secret-token" not in listed.output
    smtp.start()
    assert runner.invoke(args=["mail", "retry"]).exit_code != 0  # an id or --all
    assert runner.invoke(args=["mail", "retry", "99999"]).exit_code != 0
    retried = runner.invoke(args=["mail", "retry", str(outbox_id)])
    assert retried.exit_code == 0, retried.output
    work()
    assert len(smtp.inbox.messages) == 1 and _row(outbox_id).status == "sent"
    assert "no failed mails" in runner.invoke(args=["mail", "failed"]).output


def test_retry_all(app: Any, smtp: SmtpServer, work: Any, runner: Any, make_config: Any) -> None:
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=smtp.port, mail_max_attempts=1
    )
    smtp.stop()
    ids = [_record(), _record(to="bob@example.com")]
    work()
    assert [_row(i).status for i in ids] == ["failed", "failed"]
    smtp.start()
    assert runner.invoke(args=["mail", "retry", "--all"]).exit_code == 0
    work()
    assert len(smtp.inbox.messages) == 2


def test_redis_down_at_commit_loses_nothing(
    app: Any, smtp: SmtpServer, clock: Any, private_redis: PrivateRedis
) -> None:
    app.config["APP_CONFIG"] = app.config["APP_CONFIG"].__class__(
        **{**app.config["APP_CONFIG"].__dict__, "redis_url": private_redis.url}
    )
    private_redis.stop()
    outbox_id = _record()  # the kick after commit fails quietly
    private_redis.start()  # empty: the kick is gone for good
    private_redis.work()
    assert smtp.inbox.messages == [] and _row(outbox_id).status == "pending"
    _sweep(clock)
    private_redis.work()
    assert len(smtp.inbox.messages) == 1 and _row(outbox_id).status == "sent"


def test_concurrent_deliveries_send_one_copy(app: Any, smtp: SmtpServer, work: Any) -> None:
    outbox_id = _record()
    barrier = threading.Barrier(6)
    results: list[str] = []

    def attempt() -> None:
        with app.app_context():
            barrier.wait()
            results.append(delivery.deliver(outbox_id))

    threads = [threading.Thread(target=attempt) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    work()  # the after-commit kick finds it sent
    assert sorted(results) == ["sent"] + ["skipped"] * 5
    assert len(smtp.inbox.messages) == 1


def test_a_worker_killed_mid_send_does_not_lose_the_mail(
    app: Any, smtp: SmtpServer, work: Any, clock: Any, database_url: str, tmp_path: Any
) -> None:
    outbox_id = _record()
    smtp.inbox.hang.set()  # the server holds DATA: the worker is mid-send
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": app.config["APP_CONFIG"].redis_url,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "SECRET_KEY": "outbox-test-secret-key-0123456789",
        "LOG_LEVEL": "WARNING",
        "MAIL_BACKEND": "smtp",
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(smtp.port),
        "SMTP_TIMEOUT": "60",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mail.deliver_once"],
        cwd=ROOT,
        env={**env, "OUTBOX_ID": str(outbox_id)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _until(lambda: smtp.inbox.held == 1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    smtp.inbox.hang.clear()
    row = _row(outbox_id)
    assert row.status == "pending" and row.attempts == 1 and row.lease_owner is not None
    _sweep(clock)
    work()
    assert smtp.inbox.messages == []  # the lease still holds: nobody sends twice
    clock.advance(timedelta(minutes=20))  # the dead worker's lease has run out
    _sweep(clock)
    work()
    assert len(smtp.inbox.messages) == 1
    row = _row(outbox_id)
    assert row.status == "sent" and row.attempts == 2


def test_dedupe_key_records_a_mail_once(app: Any, smtp: SmtpServer, work: Any) -> None:
    first = _record(dedupe_key="reminder:u1:1")
    with db.transaction() as conn:
        again = outbox.record(
            conn,
            outbox.Mail("ada@example.com", "Hello", "Body"),
            tenant_id="default",
            user_id="u1",
            kind="test",
            dedupe_key="reminder:u1:1",
        )
    assert first and again is None
    work()
    assert len(smtp.inbox.messages) == 1


def test_erasing_a_user_deletes_their_outbox_rows(app: Any) -> None:
    mine, theirs = _record(user_id="u1"), _record(user_id="u2")
    with db.transaction() as conn:
        assert outbox.erase_user(conn, "default", "u1") == 1
    with db.reading() as conn:
        ids = set(conn.execute(select(mail_outbox.c.id)).scalars())
    assert ids == {theirs} and mine not in ids
