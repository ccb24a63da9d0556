"""GET /api/v1/openapi.json (the document, no token needed) and GET
/api/v1/token (which token this is: its tenant and scopes)."""

from __future__ import annotations

from flask import Response

from webapp.api import openapi
from webapp.api.endpoint import Call, Reply, bp, endpoint, json_response
from webapp.api.schemas import TokenOut


@bp.get("/openapi.json")
def openapi_document() -> Response:
    resp = json_response(200, openapi.document())
    resp.headers["Cache-Control"] = "public, max-age=300"
    return resp


@endpoint(
    "GET",
    "/token",
    summary="Describe the token",
    tag="meta",
    responses={200: TokenOut},
    errors=(400, 401, 429),
)
def describe_token(call: Call) -> Reply:
    """The token this request carries: its name, tenant and scopes. Any
    valid token may ask (no scope needed): a client can check its setup."""
    t = call.token
    return Reply(
        200,
        TokenOut(
            id=t.id,
            name=t.name,
            tenant=t.tenant_id,
            scopes=sorted(t.scopes),
            created_at=t.created_at,
        ),
    )
