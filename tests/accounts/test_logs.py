"""No bearer token, and no link that carries one, in any log line."""

from __future__ import annotations

import logging
import re
from typing import Any

from tests.support.accounts import PASSWORD, body, mails
from tests.support.web import post
from webapp.core.logs import LogfmtFormatter

TOKEN_LINK = re.compile(r"/(?:verify-email|email-change/revert)/([^\s]+)")


def test_account_mails_leave_no_token_in_the_logs(
    app: Any, client: Any, user: Any, work: Any, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    post(client, "/profile/email", new_email="new@example.com", current_password=PASSWORD)
    work()  # the worker sends the verification mails and the revert notice
    tokens = [m.group(1) for msg in mails(app) for m in TOKEN_LINK.finditer(body(msg))]
    assert len(tokens) >= 2  # a verification link and a revert link at least
    written = [r for r in caplog.records if r.getMessage() == "mail written"]
    assert {r.to for r in written} >= {"new@example.com", "ada@example.com"}  # type: ignore[attr-defined]
    formatter = LogfmtFormatter()
    for record in caplog.records:
        line = formatter.format(record)
        for token in tokens:
            assert token not in line, line
            assert token not in str(record.__dict__)


def test_a_request_line_that_names_a_token_is_redacted() -> None:
    """e.g. the development server's access log line for the GET of a link."""
    record = logging.makeLogRecord(
        {
            "name": "werkzeug",
            "levelno": logging.INFO,
            "levelname": "INFO",
            "msg": '127.0.0.1 - - "GET /verify-email/eyJ1IjoiYSJ9.Zabc.sig-_x HTTP/1.1" 200 -',
        }
    )
    line = LogfmtFormatter().format(record)
    assert "eyJ1IjoiYSJ9" not in line
    assert "/verify-email/[redacted] HTTP/1.1" in line
    record.msg = "GET /email-change/revert/abc.def?next=1 and /reset-password/xyz"
    line = LogfmtFormatter().format(record)
    assert "abc.def" not in line and "xyz" not in line
