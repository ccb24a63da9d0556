"""The OpenAPI 3.1 document of /api/v1, made from the operations as declared
(`endpoint.OPERATIONS`) and the pydantic models that check their requests:
JSON Schema 2020-12, which OpenAPI 3.1 takes as it is. Served at
/api/v1/openapi.json; a copy is kept in docs/openapi.json (`flask api openapi
--output docs/openapi.json` writes it; a test checks it is current)."""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from webapp.api import idempotency
from webapp.api.endpoint import BASE, OPERATIONS, Operation
from webapp.api.problems import KINDS, MEDIA_TYPE
from webapp.api.schemas import Problem
from webapp.api.tokens import SCOPES

API_VERSION = "1.0.0"
REF = "#/components/schemas/{model}"
DESCRIPTION = (
    "Publish events, follow and steer workflow runs from any language. "
    "Authenticate with `Authorization: Bearer <token>` (`flask api-tokens create`); "
    "every error is RFC 9457 problem details (`application/problem+json`)."
)
_TITLES = {status: title for status, title in KINDS.values()}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _error_response(status: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "description": _TITLES.get(status, "Error"),
        "content": {MEDIA_TYPE: {"schema": _ref(Problem)}},
    }
    if status in (429, 503):
        out["headers"] = {
            "Retry-After": {
                "description": "seconds to wait before trying again",
                "required": True,
                "schema": {"type": "string", "pattern": "^[0-9]+$"},
            }
        }
    if status == 401:
        out["headers"] = {
            "WWW-Authenticate": {"required": True, "schema": {"type": "string"}},
        }
    return out


def _query_parameters(model: type[BaseModel], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True, ref_template=REF, mode="validation")
    schemas.update(schema.pop("$defs", {}))
    required = set(schema.get("required", ()))
    out = []
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        description = prop.pop("description", None)
        prop.pop("title", None)
        param: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
        if description:
            param["description"] = description
        param["schema"] = prop
        out.append(param)
    return out


def _operation(op: Operation, schemas: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
    }
    if op.description:
        out["description"] = op.description
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": schema}
        for name, schema in op.path_params.items()
    ]
    if op.query is not None:
        params += _query_parameters(op.query, schemas)
    if op.idempotent:
        params.append(
            {
                "name": idempotency.HEADER,
                "in": "header",
                "required": False,
                "description": "a retry with the same key and body is answered as the "
                "first request was, and changes nothing; the same key with another body: 409",
                "schema": {"type": "string", "pattern": idempotency.KEY.pattern},
            }
        )
    if params:
        out["parameters"] = params
    if op.body is not None:
        out["requestBody"] = {
            "required": not op.body_optional,
            "content": {"application/json": {"schema": _ref(op.body)}},
        }
    responses: dict[str, Any] = {}
    for status, model in op.responses.items():
        responses[str(status)] = {
            "description": op.summary,
            "content": {"application/json": {"schema": _ref(model)}},
        }
        if op.idempotent:
            responses[str(status)]["headers"] = {
                "Idempotent-Replayed": {
                    "description": "`true` when this is the stored answer to an earlier request",
                    "required": False,
                    "schema": {"type": "string", "enum": ["true"]},
                }
            }
    for status in (*op.errors, 503):
        responses[str(status)] = _error_response(status)
    out["responses"] = responses
    if not op.public:
        out["security"] = [{"bearerAuth": [op.scope] if op.scope else []}]
    return out


@functools.cache
def _document_text() -> str:
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [(Problem, "serialization")]
    for op in OPERATIONS:
        if op.body is not None:
            pairs.append((op.body, "validation"))
        pairs += [(m, "serialization") for m in op.responses.values()]
    _, top = models_json_schema(list(dict.fromkeys(pairs)), by_alias=True, ref_template=REF)
    schemas: dict[str, Any] = dict(top.get("$defs", {}))
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        paths.setdefault(BASE + op.path, {})[op.method.lower()] = _operation(op, schemas)
    paths[BASE + "/openapi.json"] = {
        "get": {
            "operationId": "openapiDocument",
            "summary": "This document",
            "tags": ["meta"],
            "security": [],
            "responses": {
                "200": {
                    "description": "the OpenAPI 3.1 document",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        }
    }
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "Workflow API", "version": API_VERSION, "description": DESCRIPTION},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "an API token; scopes: "
                    + "; ".join(f"{s}: {what}" for s, what in SCOPES.items()),
                }
            },
        },
    }
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def document() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(_document_text())
    return result


def document_text() -> str:
    """The document as kept in docs/openapi.json."""
    return _document_text()
