"""`POST /hooks/<path>`: start a webhook-triggered workflow.

The body must be JSON, at most config.webhook_max_body bytes, signed with
HMAC-SHA256 of the raw body under the workflow's secret, sent as
`X-Signature-256: sha256=<hex>`. A bad or missing signature answers 401 and
starts nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from flask import Blueprint, current_app, jsonify, request

from webapp.workflows import registry, trigger

bp = Blueprint("workflow_hooks", __name__)
SIGNATURE_HEADER = "X-Signature-256"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _error(status: int, message: str) -> Any:
    return jsonify({"error": message}), status


@bp.post("/hooks/<path:path>")
def receive(path: str) -> Any:
    wf = registry.by_webhook_path(path)
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
    secret = cfg.secrets.get(wf.trigger.secret.lower())
    given = request.headers.get(SIGNATURE_HEADER, "")
    if not secret or not given or not hmac.compare_digest(sign(secret, body), given):
        return _error(401, f"missing or invalid {SIGNATURE_HEADER} signature")
    try:
        payload = json.loads(body)
    except ValueError:
        return _error(400, "body must be JSON")
    event = trigger.receive_webhook(wf, payload)
    return jsonify({"accepted": True, "eventId": event.id}), 202
