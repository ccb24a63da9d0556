"""A local stand-in for GitHub's OAuth and REST endpoints (GitHub itself is
truly external): authorize, the access token (checking the client secret, the
code's single use and its PKCE verifier), `/user` and `/user/emails`, served
on 127.0.0.1 in a thread. `emails` is what `/user/emails` lists."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response


class GitHub:
    def __init__(self, client_id: str, secret: str) -> None:
        self.client_id, self.secret = client_id, secret
        self.user: dict[str, Any] = {"id": 4242, "login": "octo"}
        self.emails: list[dict[str, Any]] = []
        self._codes: dict[str, str] = {}  # code -> its code_challenge
        self._tokens: set[str] = set()
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        return self._answer(Request(environ))(environ, start_response)

    def _answer(self, r: Request) -> Response:
        if r.path == "/login/oauth/authorize":
            if (
                r.args.get("client_id") != self.client_id
                or r.args.get("code_challenge_method") != "S256"
            ):
                return Response("bad request", 400)
            code = secrets.token_urlsafe(16)
            self._codes[code] = r.args["code_challenge"]
            query = urlencode({"code": code, "state": r.args.get("state", "")})
            return Response("", 302, headers={"Location": f"{r.args['redirect_uri']}?{query}"})
        if r.path == "/login/oauth/access_token" and r.method == "POST":
            f = r.form
            challenge = self._codes.pop(f.get("code", ""), None)  # single use
            verifier = f.get("code_verifier", "").encode()
            expected = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
            )
            if f.get("client_secret") != self.secret or challenge is None or challenge != expected:
                return _json({"error": "bad_verification_code"}, 200)  # as GitHub answers
            token = secrets.token_urlsafe(16)
            self._tokens.add(token)
            return _json(
                {"access_token": token, "token_type": "bearer", "scope": "read:user,user:email"}
            )
        if r.headers.get("Authorization", "")[len("Bearer ") :] not in self._tokens:
            return _json({"message": "Bad credentials"}, 401)
        if r.path == "/user":
            return _json(self.user)
        if r.path == "/user/emails":
            return _json(self.emails)
        return Response("not found", 404)


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data), status, mimetype="application/json")
