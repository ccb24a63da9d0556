"""Every API error as RFC 9457 problem details (`application/problem+json`):
`type` (a stable URI naming the kind of problem, documented in docs/api.md),
`title`, `status`, `detail`, and for a request that does not fit its schema
the `errors` of each field (a JSON pointer into the body, or the query
parameter, and what is wrong). Never a stack trace or SQL: an unexpected
error answers 500 with a generic text and the request id to find it in the
logs."""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import Flask, Response, request
from sqlalchemy.exc import InterfaceError, OperationalError
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/problem+json"
PREFIX = "/api/"
TYPE_BASE = "https://docs.webapp.dev/api/problems/"  # fixed identifiers, not links to follow

# kind -> (status, title)
KINDS: dict[str, tuple[int, str]] = {
    "malformed-json": (400, "The body is not valid JSON"),
    "invalid-request": (400, "The request does not fit the schema"),
    "unauthorized": (401, "A valid API token is required"),
    "forbidden": (403, "The token lacks a scope this needs"),
    "not-found": (404, "Not found"),
    "method-not-allowed": (405, "Method not allowed"),
    "conflict": (409, "The request conflicts with the current state"),
    "idempotency-key-reused": (409, "The idempotency key was used with another request"),
    "too-large": (413, "The request body is too large"),
    "unsupported-media-type": (415, "The body must be application/json"),
    "rate-limited": (429, "Too many requests for this token"),
    "internal": (500, "Something went wrong on our side"),
    "unavailable": (503, "The service is unavailable for a moment"),
}
_BY_STATUS = {status: kind for kind, (status, _) in reversed(list(KINDS.items()))}


class Problem(Exception):
    """Raised anywhere in an API view: answered as problem details."""

    def __init__(
        self,
        kind: str,
        detail: str | None = None,
        errors: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail or kind)
        self.kind = kind
        self.detail = detail
        self.errors = errors
        self.headers = headers or {}


def body(
    kind: str, detail: str | None = None, errors: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    status, title = KINDS[kind]
    out: dict[str, Any] = {"type": TYPE_BASE + kind, "title": title, "status": status}
    if detail:
        out["detail"] = detail
    out["instance"] = request.path
    if errors is not None:
        out["errors"] = errors
    return out


def response(problem: Problem) -> Response:
    status = KINDS[problem.kind][0]
    resp = Response(
        json.dumps(body(problem.kind, problem.detail, problem.errors)),
        status=status,
        mimetype=MEDIA_TYPE,
    )
    for name, value in problem.headers.items():
        resp.headers[name] = value
    resp.headers["Cache-Control"] = "no-store"
    return resp


def under_api() -> bool:
    return request.path.startswith(PREFIX)


def _http_problem(exc: HTTPException) -> Problem:
    code = exc.code or 500
    kind = _BY_STATUS.get(code)
    if kind is None:
        return Problem("internal") if code >= 500 else Problem("invalid-request", exc.description)
    detail = None
    if kind == "too-large":
        limit = request.max_content_length
        detail = f"at most {limit} bytes" if limit else None
    elif kind == "method-not-allowed":
        allowed = ", ".join(sorted(getattr(exc, "valid_methods", None) or ()))
        detail = f"allowed: {allowed}" if allowed else None
        headers = {"Allow": allowed} if allowed else {}
        return Problem(kind, detail, headers=headers)
    elif kind == "not-found":
        detail = "no such resource"
    return Problem(kind, detail)


def init_app(app: Flask) -> None:
    """Under /api/ every error answers as problem details, routing errors
    (404, 405) included: those reach no blueprint, so the handlers are the
    app's, and pass every other path on to the app's own pages."""

    previous_http = app.error_handler_spec[None].get(None, {}).get(HTTPException)

    def http_error(exc: HTTPException) -> Any:
        if under_api():
            return response(_http_problem(exc))
        return previous_http(exc) if previous_http else exc

    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(Problem, response)


def on_blueprint(bp: Any) -> None:
    """The API blueprint's own handlers: they come before the app's code-specific
    ones (413, 429, 500 and the database's 503 render HTML pages)."""

    for code in (400, 404, 405, 413, 415, 429):
        bp.register_error_handler(code, lambda exc: response(_http_problem(exc)))

    def unavailable(exc: Exception) -> Response:
        log.warning("database unavailable: %s", exc)
        return response(Problem("unavailable", headers={"Retry-After": "5"}))

    bp.register_error_handler(OperationalError, unavailable)
    bp.register_error_handler(InterfaceError, unavailable)

    def internal(_exc: Exception) -> Response:
        # Flask has logged the exception (with the request id) before asking for this answer.
        rid = request.environ.get("webapp.request_id")
        where = f" under request id {rid}" if rid else ""
        return response(Problem("internal", f"the error is in our logs{where}"))

    bp.register_error_handler(500, internal)
