"""A real OpenID Provider for the tests: idpyoidc's server (the Identity
Python project's OP, the one its certification runs use), served over HTTP on
127.0.0.1 in a thread. Discovery, the authorization endpoint (code flow, PKCE
required), the token endpoint (client_secret_basic/post, single-use codes),
userinfo and the JWKS are idpyoidc's own; this module only wires them to
werkzeug and signs the person in without a form (`op.user` says who).

`op.tamper` lets a test act as an attacker between the provider and the app:
it is given the token endpoint's JSON answer and returns what is sent instead
(a re-signed or altered `id_token`); `op.sign(claims)` signs with the
provider's own key, `foreign_sign(claims)` with a key the provider never published."""

from __future__ import annotations

import base64
import json
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from cryptojwt.jwk.rsa import new_rsa_key
from cryptojwt.jws.jws import JWS
from cryptojwt.jwt import JWT
from cryptojwt.key_jar import KeyJar
from cryptojwt.utils import b64e
from idpyoidc.message.oidc import AccessTokenRequest
from idpyoidc.server import Server
from idpyoidc.server.configure import OPConfiguration
from idpyoidc.server.user_authn.user import NoAuthn
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

ACR = "urn:oasis:names:tc:SAML:2.0:ac:classes:InternetProtocolPassword"


def _config(issuer: str, keys_dir: str) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "httpc_params": {"verify": False, "timeout": 2},
        "keys": {
            "key_defs": [{"type": "RSA", "use": ["sig"]}],
            "read_only": False,
            "uri_path": "jwks",
        },
        "token_handler_args": {
            "jwks_def": {
                "private_path": str(Path(keys_dir) / "token_jwks.json"),
                "key_defs": [
                    {"type": "OCT", "bytes": 24, "use": ["enc"], "kid": "code"},
                    {"type": "OCT", "bytes": 24, "use": ["enc"], "kid": "token"},
                ],
            },
            "code": {"kwargs": {"lifetime": 600}},
            "token": {"kwargs": {"lifetime": 3600}},
            "id_token": {
                "class": "idpyoidc.server.token.id_token.IDToken",
                "kwargs": {"lifetime": 300},
            },
        },
        "endpoint": {
            "provider_info": {
                "path": ".well-known/openid-configuration",
                "class": "idpyoidc.server.oidc.provider_config.ProviderConfiguration",
                "kwargs": {},
            },
            "authorization": {
                "path": "authorization",
                "class": "idpyoidc.server.oidc.authorization.Authorization",
                "kwargs": {
                    "response_types_supported": ["code"],
                    "response_modes_supported": ["query"],
                },
            },
            "token": {
                "path": "token",
                "class": "idpyoidc.server.oidc.token.Token",
                "kwargs": {"client_authn_method": ["client_secret_basic", "client_secret_post"]},
            },
            "userinfo": {
                "path": "userinfo",
                "class": "idpyoidc.server.oidc.userinfo.UserInfo",
                "kwargs": {},
            },
        },
        "add_on": {
            "pkce": {
                "function": "idpyoidc.server.oauth2.add_on.pkce.add_support",
                "kwargs": {"essential": True, "code_challenge_method": "S256"},
            }
        },
        "authentication": {
            "anon": {"acr": ACR, "class": NoAuthn, "kwargs": {"user": "nobody"}},
        },
        "userinfo": {"class": "idpyoidc.server.user_info.UserInfo", "kwargs": {"db": {}}},
        "authz": {
            "class": "idpyoidc.server.authz.AuthzHandling",
            "kwargs": {
                "grant_config": {
                    "usage_rules": {
                        "authorization_code": {
                            "supports_minting": ["access_token", "id_token"],
                            "max_usage": 1,
                        },
                        "access_token": {},
                    },
                    "expires_in": 43200,
                }
            },
        },
        "template_dir": "templates",
        "session_params": {
            "encrypter": {
                "kwargs": {
                    "keys": {
                        "key_defs": [
                            {"type": "OCT", "use": ["enc"], "kid": "password"},
                            {"type": "OCT", "use": ["enc"], "kid": "salt"},
                        ]
                    },
                    "iterations": 1,
                }
            }
        },
    }


class Provider:
    def __init__(self) -> None:
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        self.issuer = f"http://127.0.0.1:{self._server.server_port}"
        self.users: dict[str, dict[str, Any]] = {}
        self.clients: dict[str, dict[str, Any]] = {}
        self.user = "nobody"
        self.tamper: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.requests: list[str] = []  # "METHOD path" of every request it answered
        self._op: Server | None = None
        self._keys = tempfile.TemporaryDirectory(prefix="test-op-")
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # --- set-up ---------------------------------------------------------------
    def add_client(self, client_id: str, secret: str, *redirect_uris: str) -> None:
        self.clients[client_id] = {
            "client_id": client_id,
            "client_secret": secret,
            "redirect_uris": [(uri, {}) for uri in redirect_uris],
            "response_types_supported": ["code"],
            "token_endpoint_auth_method": "client_secret_basic",
            "allowed_scopes": ["openid", "email", "profile"],
            "client_salt": "salt",
        }
        if self._op is not None:
            self._op.context.cdb[client_id] = self.clients[client_id]

    def add_user(self, uid: str, email: str | None, verified: bool = True, **claims: Any) -> None:
        info: dict[str, Any] = {"sub": uid, "name": uid.title(), **claims}
        if email is not None:
            info.update(email=email, email_verified=verified)
        self.users[uid] = info

    def start(self) -> Provider:
        conf = OPConfiguration(_config(self.issuer, self._keys.name), base_path="")
        self._op = Server(conf)
        self._op.context.cdb = self.clients
        self._op.context.userinfo.db = self.users
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._keys.cleanup()

    # --- keys, for a test acting as an attacker --------------------------------
    @property
    def keyjar(self) -> KeyJar:
        assert self._op is not None
        return self._op.context.keyjar

    def sign(self, claims: dict[str, Any]) -> str:
        """`claims` as an id_token signed with this provider's own key."""
        signer = JWT(self.keyjar, iss=self.issuer, sign_alg="RS256")
        signer.with_jti = False
        return str(signer.pack(payload=claims, issuer_id="", recv=None, iss=self.issuer))

    def foreign_sign(self, claims: dict[str, Any]) -> str:
        """`claims` signed by a key this provider never published (same `kid`)."""
        kid = self.keyjar.get_signing_key("RSA", issuer_id="")[0].kid
        key = new_rsa_key(kid=kid)
        return _jws(claims, key)

    @staticmethod
    def claims_of(id_token: str) -> dict[str, Any]:
        """The payload of an id_token, unverified (the test reads what it alters)."""
        return dict(json.loads(_b64(id_token.split(".")[1])))

    # --- HTTP -------------------------------------------------------------------
    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        self.requests.append(f"{request.method} {request.path}")
        response = self._answer(request)
        return response(environ, start_response)

    def _answer(self, request: Request) -> Response:
        assert self._op is not None
        path = request.path.strip("/")
        if path == "jwks":
            return Response(
                json.dumps(self.keyjar.export_jwks(issuer_id="")), 200, mimetype="application/json"
            )
        names = {
            ".well-known/openid-configuration": "provider_config",
            "authorization": "authorization",
            "token": "token",
            "userinfo": "userinfo",
        }
        if path not in names:
            return Response("not found", 404)
        endpoint = self._op.get_endpoint(names[path])
        http_info = {
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "method": request.method,
            "url": request.url,
        }
        if request.method == "GET":
            raw: Any = request.args.to_dict()
        else:
            raw = dict(parse_qsl(request.get_data(as_text=True)))
        if path == "authorization":
            # As idpyoidc's own sessions carry it: the uid wrapped as base64 JSON
            # (a bare uid that happens to decode as base64 would be misread).
            wrapped = b64e(json.dumps({"uid": self.user}).encode()).decode()
            self._op.context.authn_broker.get_method_by_id("anon").user = wrapped
        try:
            parsed = endpoint.parse_request(raw, http_info=http_info)
            if "error" in parsed:
                return _json(parsed.to_dict(), 400)
            if path == "token":
                parsed = AccessTokenRequest(**parsed.to_dict())
            args = endpoint.process_request(parsed, http_info=http_info)
        except Exception as exc:  # the provider's own refusal, as its example server answers
            return _json({"error": "invalid_request", "error_description": str(exc)}, 400)
        if "error" in args and "response_args" not in args:
            return _json(args if isinstance(args, dict) else args.to_dict(), 400)
        info = endpoint.do_response(request=parsed, **args)
        body = info["response"]
        if info.get("response_placement", endpoint.response_placement) == "url":
            return Response("", 303, headers={"Location": body})
        if path == "token" and self.tamper is not None and "error" not in json.loads(body):
            body = json.dumps(self.tamper(json.loads(body)))
        resp = Response(body, info.get("response_code", 200))
        for key, value in info.get("http_headers", []):
            resp.headers[key] = value
        return resp


def _json(data: dict[str, Any], status: int) -> Response:
    return Response(json.dumps(data), status, mimetype="application/json")


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _jws(claims: dict[str, Any], key: Any) -> str:
    return str(JWS(json.dumps(claims), alg="RS256").sign_compact([key]))
