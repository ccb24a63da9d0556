"""The mail service against the file backend and a real local SMTP server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from webapp import mail


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(envelope)
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _auth(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    ok = isinstance(data, LoginPassword) and data.login == b"mailer" and data.password == b"s3cret"
    return AuthResult(success=ok)


@pytest.fixture
def smtp_server() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = _free_port()
    controller = Controller(
        inbox, hostname="127.0.0.1", port=port, authenticator=_auth, auth_require_tls=False
    )
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def test_file_backend_writes_an_eml_and_logs_recipient_and_subject_only(
    app: Any, caplog: Any
) -> None:
    caplog.set_level("INFO", logger="webapp.mail")
    mail.send("ada@example.com", "Hello", "Open http://localhost/x/abc to continue.")
    files = list((app.config["APP_CONFIG"].instance_path / "mail").glob("*.eml"))
    assert len(files) == 1
    raw = files[0].read_text()
    assert "To: ada@example.com" in raw and "Subject: Hello" in raw
    [record] = [r for r in caplog.records if r.getMessage() == "mail written"]
    assert record.to == "ada@example.com" and record.subject == "Hello"  # type: ignore[attr-defined]
    assert "/x/abc" not in str(record.__dict__)


def test_smtp_backend_delivers_with_authentication(
    app: Any, make_config: Any, smtp_server: Any
) -> None:
    inbox, port = smtp_server
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp",
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_user="mailer",
        smtp_password="s3cret",
    )
    mail.send("ada@example.com", "Grüße", "Body text ünïcode", html="<p>Body</p>")
    assert len(inbox.messages) == 1
    env = inbox.messages[0]
    assert env.rcpt_tos == ["ada@example.com"]
    assert b"Body text" in env.content or b"=C3=BC" in env.content or b"Qm9keS" in env.content


def test_smtp_wrong_credentials_raise_mail_error(
    app: Any, make_config: Any, smtp_server: Any
) -> None:
    _inbox, port = smtp_server
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp",
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_user="mailer",
        smtp_password="nope",
    )
    with pytest.raises(mail.MailError):
        mail.send("ada@example.com", "Hi", "Body")


def test_smtp_starttls_against_a_server_without_tls_fails_cleanly(
    app: Any, make_config: Any, smtp_server: Any
) -> None:
    _inbox, port = smtp_server
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=port, smtp_security="starttls"
    )
    with pytest.raises(mail.MailError):
        mail.send("ada@example.com", "Hi", "Body")


def test_unreachable_smtp_server_raises_mail_error(app: Any, make_config: Any) -> None:
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=_free_port(), smtp_timeout=2
    )
    with pytest.raises(mail.MailError):
        mail.send("ada@example.com", "Hi", "Body")


def test_header_injection_is_refused(app: Any) -> None:
    with pytest.raises(mail.MailError):
        mail.send("ada@example.com\nBcc: eve@example.com", "Hi", "Body")
