"""`POST /hooks/<path>`: start a webhook-triggered workflow.

The body must be JSON, at most config.webhook_max_body bytes, and signed the
way payment providers sign theirs: `X-Webhook-Timestamp: <unix seconds>` and
`X-Signature-256: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">` under
the workflow's secret. A timestamp more than five minutes away from our clock
(either way) is refused, so a captured request cannot be replayed later. A bad
or missing signature or timestamp answers 401 and starts nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from flask import Blueprint, current_app, jsonify, request

from webapp.core import clock
from webapp.workflows.definition import catalog
from webapp.workflows.triggers import start as trigger

bp = Blueprint("workflow_hooks", __name__)
SIGNATURE_HEADER = "X-Signature-256"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"
TOLERANCE_S = 300


def sign(secret: str, body: bytes, timestamp: int | str) -> str:
    """The signature header value for `body` sent at `timestamp` (unix seconds)."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signed_headers(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """Both headers for a request signed now (or at `timestamp`)."""
    ts = int(clock.now().timestamp()) if timestamp is None else timestamp
    return {TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: sign(secret, body, ts)}


def verify(secret: str | None, body: bytes, timestamp: str, given: str) -> str | None:
    """None when the request is authentic and fresh, else why not."""
    if not secret or not given:
        return f"missing or invalid {SIGNATURE_HEADER} signature"
    if not timestamp.isdigit():
        return f"missing or invalid {TIMESTAMP_HEADER} (unix seconds)"
    if abs(clock.now().timestamp() - int(timestamp)) > TOLERANCE_S:
        return f"{TIMESTAMP_HEADER} outside the {TOLERANCE_S // 60}-minute tolerance"
    if not hmac.compare_digest(sign(secret, body, timestamp), given):
        return f"missing or invalid {SIGNATURE_HEADER} signature"
    return None


def _error(status: int, message: str) -> Any:
    return jsonify({"error": message}), status


@bp.post("/hooks/<path:path>")
def receive(path: str) -> Any:
    wf = catalog.by_webhook_path(path)
    if wf is None:
        return _error(404, f"no webhook at /hooks/{path}")
    cfg = current_app.config["APP_CONFIG"]
    limit = cfg.webhook_max_body
    if request.content_length is not None and request.content_length > limit:
        return _error(413, f"body too large: at most {limit} bytes")
    request.max_content_length = limit
    body = request.stream.read(limit + 1)
    if len(body) > limit:
        return _error(413, f"body too large: at most {limit} bytes")
    assert wf.trigger.kind == "webhook"
    why = verify(
        cfg.secrets.get(wf.trigger.secret.lower()),
        body,
        request.headers.get(TIMESTAMP_HEADER, "").strip(),
        request.headers.get(SIGNATURE_HEADER, ""),
    )
    if why is not None:
        return _error(401, why)
    try:
        payload = json.loads(body)
    except ValueError:
        return _error(400, "body must be JSON")
    event = trigger.receive_webhook(wf, payload)
    return jsonify({"accepted": True, "eventId": event.id}), 202
