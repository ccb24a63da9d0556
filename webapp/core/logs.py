"""Structured logs: one line per event, `key=value` pairs, with the request,
tenant, run or job ids bound in the current context."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "log_context", default=None
)
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
# Functions that add fields to every line, asked only when a line is written
# (the web process's request id: made on first use, not for every request).
_providers: list[Callable[[], dict[str, Any]]] = []


def add_context_provider(provider: Callable[[], dict[str, Any]]) -> None:
    if provider not in _providers:
        _providers.append(provider)


# Paths whose last segment is a bearer token (links from account mails). Any
# log line that names one, e.g. a web server's access log of the GET, shows
# `[redacted]` in place of the token.
TOKEN_PATHS = (
    "/verify-email/",
    "/email-change/revert/",
    "/reset-password/",
    "/delete-account/",  # privacy center: the signed-out deletion link
    "/privacy/download/",  # privacy center: the export link from the mail
)
_TOKEN = re.compile("(" + "|".join(map(re.escape, TOKEN_PATHS)) + r")[^\s\"'?#&]+")


def redact(text: str) -> str:
    return _TOKEN.sub(r"\1[redacted]", text)


@contextmanager
def log_context(**values: Any) -> Iterator[None]:
    current = dict(_context.get() or {})
    current.update({k: v for k, v in values.items() if v is not None})
    token = _context.set(current)
    try:
        yield
    finally:
        _context.reset(token)


def bind(**values: Any) -> None:
    """Bind values for the rest of this context; None removes a key."""
    current = dict(_context.get() or {})
    for k, v in values.items():
        if v is None:
            current.pop(k, None)
        else:
            current[k] = v
    _context.set(current)


def _fmt(value: Any) -> str:
    text = str(value)
    if not text or any(c in text for c in ' "=\n'):
        return json.dumps(text)
    return text


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for provider in _providers:
            fields.update(provider())
        fields.update(_context.get() or {})
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                fields[key] = value
        line = " ".join(f"{k}={_fmt(v)}" for k, v in fields.items())
        if record.exc_info:
            line += " exc=" + json.dumps(self.formatException(record.exc_info))
        return redact(line)


# Libraries whose INFO lines are routine: RQ's few lines per job ("Job OK", the
# queue and the job's name, its result's lifetime), rq-scheduler's heartbeat, one
# line per health probe (httpx). An idle system says nothing: these show from
# WARNING up (a failed job, a lost connection), everything with LOG_LEVEL=DEBUG.
ROUTINE_LOGGERS = ("rq.worker", "rq.job", "rq_scheduler", "httpx")


def routine_level(level: str) -> str:
    """The level of the routine loggers under LOG_LEVEL `level`."""
    if level == "DEBUG" or logging.getLevelName(level) >= logging.WARNING:
        return level
    return "WARNING"


def setup(level: str = "INFO", process: str | None = None) -> None:
    root = logging.getLogger()
    for name in ROUTINE_LOGGERS:
        logging.getLogger(name).setLevel(routine_level(level))
    if any(isinstance(h.formatter, LogfmtFormatter) for h in root.handlers):
        root.setLevel(level)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogfmtFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    if process:
        bind(process=process)
