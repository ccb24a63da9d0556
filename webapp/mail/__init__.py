"""The mail service: `send(to, subject, body, html=None)`, synchronous.

Called from worker jobs and workflow steps only, never inside a web request.
Backends (MAIL_BACKEND): `file` writes every message as an .eml file under
`<instance>/mail/` (development: open the file for the links); `smtp` hands it
to an SMTP server (SMTP_HOST/PORT, SMTP_SECURITY none|starttls|ssl, SMTP_USER/PASSWORD).
A failure raises `MailError`; the caller decides whether to retry.
`set_sink` hands built messages to a function instead (the workflow test
harness captures mails so).
"""

from __future__ import annotations

import logging
import smtplib
import ssl
import time
import uuid
from collections.abc import Callable
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

from flask import Flask, current_app

from webapp.core import clock
from webapp.core.config import Config

log = logging.getLogger(__name__)


# RFC 5322's longest line. A text part whose lines all fit is sent as it is: 7bit
# (ASCII) or 8bit (UTF-8), never quoted-printable, so a link stays whole on its
# line for whoever reads the raw message (a `.eml` under instance/mail, grep).
MAX_LINE_BYTES = 998


def transfer_encoding(text: str) -> str | None:
    """7bit, 8bit, or None (a longer line: Python's email picks quoted-printable
    or base64, which wrap it)."""
    if max((len(line) for line in text.encode().splitlines()), default=0) > MAX_LINE_BYTES:
        return None
    return "7bit" if text.isascii() else "8bit"


class MailError(Exception):
    """The message could not be handed over."""


_sink: Callable[[EmailMessage], None] | None = None


def set_sink(sink: Callable[[EmailMessage], None] | None) -> Callable[[EmailMessage], None] | None:
    """Give every built message to `sink` instead of the backend (None: the
    backend again); returns the one before. The seam of the workflow test
    harness (`webapp.workflows.testing`)."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def build(cfg: Config, to: str, subject: str, body: str, html: str | None = None) -> EmailMessage:
    if "\n" in to or "\r" in to or "\n" in subject or "\r" in subject:
        raise MailError("header injection attempt")
    msg = EmailMessage()
    msg["From"] = cfg.mail_from
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(clock.now())
    msg["Message-ID"] = make_msgid(domain=cfg.mail_from.rpartition("@")[2] or "localhost")
    msg.set_content(body, cte=transfer_encoding(body))
    if html is not None:
        msg.add_alternative(html, subtype="html", cte=transfer_encoding(html))
    return msg


def mail_dir(cfg: Config) -> Path:
    return Path(cfg.instance_path) / "mail"


def _send_file(cfg: Config, msg: EmailMessage) -> None:
    folder = mail_dir(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    # Wall-clock nanoseconds keep the files in sending order even under a frozen clock.
    name = f"{time.time_ns()}-{uuid.uuid4().hex[:8]}.eml"
    path = folder / name
    path.write_bytes(bytes(msg))
    # Recipient and subject only: links in account mails carry bearer tokens.
    log.info("mail written", extra={"path": str(path), "to": msg["To"], "subject": msg["Subject"]})


def _send_smtp(cfg: Config, msg: EmailMessage) -> None:
    try:
        smtp: smtplib.SMTP
        if cfg.smtp_security == "ssl":
            smtp = smtplib.SMTP_SSL(
                cfg.smtp_host,
                cfg.smtp_port,
                timeout=cfg.smtp_timeout,
                context=ssl.create_default_context(),
            )
        else:
            smtp = smtplib.SMTP(cfg.smtp_host, cfg.smtp_port, timeout=cfg.smtp_timeout)
        with smtp:
            if cfg.smtp_security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if cfg.smtp_user:
                smtp.login(cfg.smtp_user, cfg.smtp_password)
            smtp.send_message(msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise MailError(f"SMTP delivery failed ({type(exc).__name__})") from exc


def send(to: str, subject: str, body: str, html: str | None = None) -> None:
    """Send one message with the configured backend (inside an app context)."""
    cfg: Config = current_app.config["APP_CONFIG"]
    msg = build(cfg, to, subject, body, html)
    if _sink is not None:
        _sink(msg)
    elif cfg.mail_backend == "smtp":
        _send_smtp(cfg, msg)
        log.info("mail sent", extra={"to": to, "subject": subject, "backend": "smtp"})
    else:
        _send_file(cfg, msg)


def init_app(app: Flask) -> None:
    """Nothing to register: the service is a function used by worker jobs."""
