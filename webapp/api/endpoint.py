"""One way to declare an API operation: `@endpoint(...)` registers the Flask
route and records the operation for the OpenAPI document, from the same
models that then check the request.

    @endpoint("POST", "/events", scope="events:write", body=EventIn,
              responses={201: EventOut}, summary="Publish one event")
    def publish_one(call: Call) -> Reply: ...

Before the view runs: the token (401), its rate (429) and scope (403), the
query parameters (400: unknown ones, wrong types), the body (413 over
MAX_CONTENT_LENGTH, 415 not JSON, 400 malformed JSON or not fitting the
model). The view gets a `Call` and returns a `Reply` (status and model)."""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pydantic_core
from flask import Blueprint, Response, request
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from webapp.api import auth, problems
from webapp.api.problems import Problem
from webapp.api.tokens import Token

bp = Blueprint("api", __name__, url_prefix="/api/v1")
BASE = "/api/v1"
_PARAM = re.compile(r"{(\w+)}")
_JSON_TYPES = ("application/json",)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # OpenAPI form, under BASE: /runs/{run_id}
    operation_id: str
    summary: str
    description: str
    tag: str
    scope: str | None
    body: type[BaseModel] | None
    body_optional: bool
    query: type[BaseModel] | None
    responses: dict[int, type[BaseModel]]
    errors: tuple[int, ...]
    idempotent: bool  # takes an Idempotency-Key header
    public: bool = False  # no token needed
    path_params: dict[str, dict[str, Any]] = field(default_factory=dict)


OPERATIONS: list[Operation] = []


@dataclass
class Call:
    token: Token
    body: Any  # the body model, when the operation has one
    query: Any  # the query model, when it has one
    raw_body: bytes
    path: dict[str, str]


@dataclass(frozen=True)
class Reply:
    status: int
    model: BaseModel
    headers: dict[str, str] = field(default_factory=dict)

    def response(self) -> Response:
        return json_response(self.status, self.model.model_dump(mode="json"), self.headers)


def json_response(status: int, data: Any, headers: dict[str, str] | None = None) -> Response:
    resp = Response(
        json.dumps(data, separators=(",", ":")), status=status, mimetype="application/json"
    )
    resp.headers["Cache-Control"] = "no-store"
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


def _pointer(loc: tuple[Any, ...]) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in loc)


# pydantic's words for Python types, said in JSON's
_JSON_WORDS = {
    "dict_type": "Input should be an object",
    "model_type": "Input should be an object",
    "model_attributes_type": "Input should be an object",
    "list_type": "Input should be an array",
    "missing": "Field required",
    "extra_forbidden": "Unknown field: not in the schema",
}


def field_errors(exc: ValidationError, where: str) -> list[dict[str, str]]:
    """Every error of the request, each with its place (never the value sent)."""
    out = []
    for e in exc.errors(include_url=False, include_input=False):
        loc = tuple(e["loc"])
        detail = _JSON_WORDS.get(e["type"], e["msg"])
        if where == "body":
            out.append({"pointer": _pointer(loc), "detail": detail})
        else:
            out.append({"parameter": str(loc[0]) if loc else "", "detail": detail})
    return out


def _query(model: type[BaseModel] | None) -> Any:
    args = request.args
    if model is None:
        if args:
            raise Problem("invalid-request", "this operation takes no query parameters")
        return None
    repeated = [k for k in args if len(args.getlist(k)) > 1]
    if repeated:
        errors = [{"parameter": k, "detail": "given more than once"} for k in repeated]
        raise Problem("invalid-request", "a query parameter is repeated", errors)
    try:
        return model.model_validate(args.to_dict())
    except ValidationError as exc:
        raise invalid(field_errors(exc, "query")) from None


def _body(op: Operation) -> tuple[Any, bytes]:
    raw = request.get_data(cache=True)  # over MAX_CONTENT_LENGTH: 413
    if op.body is None:
        if raw.strip():
            raise Problem("invalid-request", "this operation takes no body")
        return None, raw
    if not raw.strip() and op.body_optional:
        return op.body.model_validate({}), raw
    if request.mimetype not in _JSON_TYPES:
        raise Problem("unsupported-media-type", "send Content-Type: application/json")
    try:
        # pydantic's parser, not Python's: it refuses NaN and Infinity, lone
        # surrogates (text no database can store) and nesting past its limit.
        data = pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError:
        raise Problem("malformed-json", "the body is not valid JSON (RFC 8259)") from None
    try:
        return op.body.model_validate(data), raw
    except ValidationError as exc:
        raise invalid(field_errors(exc, "body")) from None


def invalid(errors: list[dict[str, str]]) -> Problem:
    n = len(errors)
    return Problem("invalid-request", f"{n} error{'s' if n != 1 else ''}: see errors", errors)


def endpoint(
    method: str,
    path: str,
    *,
    summary: str,
    tag: str,
    responses: dict[int, type[BaseModel]],
    scope: str | None = None,
    body: type[BaseModel] | None = None,
    body_optional: bool = False,
    query: type[BaseModel] | None = None,
    errors: tuple[int, ...] = (),
    idempotent: bool = False,
    public: bool = False,
    description: str = "",
    path_params: dict[str, dict[str, Any]] | None = None,
) -> Callable[[Callable[[Call], Reply]], Callable[..., Response]]:
    def decorate(view: Callable[[Call], Reply]) -> Callable[..., Response]:
        op = Operation(
            method,
            path,
            to_camel(view.__name__),
            summary,
            " ".join(inspect.cleandoc(description or view.__doc__ or "").split()),
            tag,
            scope,
            body,
            body_optional,
            query,
            responses,
            tuple(errors),
            idempotent,
            public,
            path_params or {},
        )
        OPERATIONS.append(op)

        @functools.wraps(view)
        def handle(**path_values: str) -> Response:
            token = None if public else auth.authenticate(scope)
            q = _query(query)
            parsed, raw = _body(op) if method != "GET" else (None, b"")
            call = Call(token, parsed, q, raw, path_values)  # type: ignore[arg-type]
            return view(call).response()

        rule = _PARAM.sub(r"<\1>", path)
        bp.add_url_rule(rule, view.__name__, handle, methods=[method])
        return handle

    return decorate


problems.on_blueprint(bp)
