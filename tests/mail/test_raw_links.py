"""Links in mails stay whole in the raw message: text parts whose lines fit
RFC 5322's 998 bytes go as they are (7bit for ASCII, 8bit for UTF-8), never
quoted-printable, which breaks a long link over lines with `=`. Whoever reads
the `.eml` under instance/mail (make run's mail folder) or greps it gets a
link that works."""

from __future__ import annotations

import email
import email.policy
import re
from pathlib import Path
from typing import Any

from tests.support.accounts import register, user_row
from tests.support.web import csrf_token
from webapp import mail

LINK = re.compile(rb"http://localhost(/verify-email/\S+)")


def _newest_eml(app: Any) -> bytes:
    folder = Path(app.config["APP_CONFIG"].instance_path) / "mail"
    return sorted(folder.glob("*.eml"))[-1].read_bytes()  # named by send time


def test_the_verification_link_read_from_the_raw_eml_verifies(
    app: Any, client: Any, work: Any
) -> None:
    assert register(client, "ada@example.com").status_code == 200
    work()  # the worker delivers the outbox: a file under instance/mail
    raw = _newest_eml(app)
    assert b"Content-Transfer-Encoding: 7bit" in raw
    assert b"quoted-printable" not in raw and b"=\n" not in raw and b"=\r\n" not in raw
    [path] = {m.decode() for m in LINK.findall(raw)}  # no decoding of any kind
    page = client.get(path)
    assert page.status_code == 200 and "Verify email address" in page.get_data(as_text=True)
    r = client.post(path, data={"csrf_token": csrf_token(client)})
    assert r.status_code == 200, r.get_data(as_text=True)
    assert user_row("ada@example.com").email_verified


def test_utf8_text_is_8bit_and_keeps_its_links_whole(app: Any) -> None:
    link = "http://localhost/verify-email/" + "x" * 200
    body = f"Grüße!\n\nBitte öffne diesen Link:\n{link}\n"
    msg = mail.build(
        app.config["APP_CONFIG"], "ada@example.com", "Bestätigen", body, f"<p>{link}</p>"
    )
    raw = bytes(msg)
    assert raw.count(b"Content-Transfer-Encoding: 8bit") == 1  # the text part
    assert raw.count(b"Content-Transfer-Encoding: 7bit") == 1  # the ASCII html part
    assert raw.count(link.encode()) == 2 and "Grüße".encode() in raw
    back = email.message_from_bytes(raw, policy=email.policy.default)
    assert back.get_body(preferencelist=("plain",)).get_content() == body  # type: ignore[union-attr]


def test_a_line_longer_than_smtp_allows_is_encoded_and_survives(app: Any) -> None:
    body = "a" * 2000 + "\n"
    raw = bytes(mail.build(app.config["APP_CONFIG"], "ada@example.com", "Long", body))
    assert max(len(line) for line in raw.splitlines()) <= 998
    back = email.message_from_bytes(raw, policy=email.policy.default)
    assert back.get_body(preferencelist=("plain",)).get_content() == body  # type: ignore[union-attr]
