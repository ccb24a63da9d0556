"""Every log line written while a request is served carries its request id: the
caller's `X-Request-Id` when it is a short alphanumeric one, else a new one."""

from __future__ import annotations

import logging
import re
from typing import Any

from webapp.core.logs import LogfmtFormatter


def _line(app: Any, **headers: str) -> str:
    with app.test_request_context("/", headers=headers):
        record = logging.makeLogRecord({"msg": "hello", "levelname": "INFO", "name": "t"})
        first = LogfmtFormatter().format(record)
        assert LogfmtFormatter().format(record) == first  # one id per request
        return first


def test_a_sane_caller_request_id_is_kept(app: Any) -> None:
    assert "request_id=abc-123" in _line(app, **{"X-Request-Id": "abc-123"})


def test_a_missing_or_odd_request_id_is_replaced_by_a_new_one(app: Any) -> None:
    for headers in ({}, {"X-Request-Id": "no spaces; please"}, {"X-Request-Id": "x" * 65}):
        match = re.search(r"request_id=([0-9a-f]{32})\b", _line(app, **headers))
        assert match, headers
    assert _line(app) != _line(app)  # each request its own


def test_lines_outside_a_request_have_no_request_id(app: Any) -> None:
    record = logging.makeLogRecord({"msg": "hello", "levelname": "INFO", "name": "t"})
    assert "request_id" not in LogfmtFormatter().format(record)
