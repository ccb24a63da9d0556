"""send_webhook: an HTTP request with a JSON body (at least once).

httpx sends it; tenacity retries network errors and 5xx answers `step.retry`
times with a linear backoff of `step.retry_delay` seconds. A 4xx answer fails
the step at once (sending the same request again would not help).
`set_transport` sends every request through another httpx transport (the
workflow test harness captures them so); retries in place then do not pause.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from flask import current_app, has_app_context
from sqlalchemy import Connection
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_incrementing,
    wait_none,
)

from webapp.workflows.definition.model import RunContext, SendWebhook
from webapp.workflows.interpreter.core import resolve, runs

if TYPE_CHECKING:  # imported where a webhook is sent: every `flask ...` command loads this module
    import httpx


class WebhookError(Exception):
    """The webhook answered with an error status or could not be reached."""


class _Transient(WebhookError):
    """Worth another attempt: unreachable, timed out, or a 5xx answer."""


_transport: httpx.BaseTransport | None = None  # None: the network


def set_transport(transport: httpx.BaseTransport | None) -> httpx.BaseTransport | None:
    """Send every webhook through `transport` (None: the network again);
    returns the one before. The seam of `webapp.workflows.testing`."""
    global _transport
    previous, _transport = _transport, transport
    return previous


def secret(name: str) -> str:
    secrets = current_app.config["APP_CONFIG"].secrets if has_app_context() else {}
    value = secrets.get(name.lower())
    if not value:
        raise LookupError(f"secret {name!r} is not configured (env SECRET_{name.upper()})")
    return str(value)


def _httpx() -> Any:
    """httpx, imported when a webhook is first sent (a `flask ...` command never pays for it)."""
    import httpx

    return httpx


def _request(step: SendWebhook, ctx: RunContext) -> httpx.Request:
    headers = {str(k): str(v) for k, v in (resolve(step.headers, ctx) or {}).items()}
    body = resolve(step.body, ctx)
    content = None if body is None else json.dumps(body).encode()
    if content is not None:
        headers.setdefault("Content-Type", "application/json")
    if step.auth is not None:
        if "bearer" in step.auth:
            headers["Authorization"] = f"Bearer {secret(step.auth['bearer'])}"
        else:
            headers[step.auth["header"]] = secret(step.auth["secret"])
    return _httpx().Request(
        step.method, str(resolve(step.url, ctx)), headers=headers, content=content
    )


def _send_once(client: httpx.Client, request: httpx.Request) -> dict[str, Any]:
    try:
        resp = client.send(request)
    except _httpx().TransportError as exc:
        raise _Transient(f"webhook unreachable: {type(exc).__name__}") from None
    if resp.status_code >= 500:
        raise _Transient(f"webhook answered {resp.status_code}")
    if resp.status_code >= 400:
        raise WebhookError(f"webhook answered {resp.status_code}")
    try:
        parsed: Any = resp.json() if resp.content else None
    except ValueError:
        parsed = resp.text
    return {"status": resp.status_code, "body": parsed}


@runs(SendWebhook)
def send_webhook(step: SendWebhook, ctx: RunContext, conn: Connection | None) -> Any:
    request = _request(step, ctx)
    retrying = Retrying(
        retry=retry_if_exception_type(_Transient),
        stop=stop_after_attempt(step.retry + 1),
        wait=(
            wait_incrementing(start=step.retry_delay, increment=step.retry_delay)
            if _transport is None
            else wait_none()
        ),
        reraise=True,
    )
    with _httpx().Client(
        timeout=step.timeout, follow_redirects=False, transport=_transport
    ) as client:
        for attempt in retrying:
            with attempt:
                return _send_once(client, request)
    raise AssertionError("unreachable")  # pragma: no cover - reraise=True
