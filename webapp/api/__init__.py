"""The HTTP API under /api/v1: JSON in and out, for services in any language.

Bearer tokens bound to one tenant with scopes (tokens.py, `flask api-tokens`),
rate-limited per token (auth.py), RFC 9457 problem details for every error
(problems.py), idempotency keys on writes (idempotency.py), and an OpenAPI
3.1 document made from the same pydantic models that check the requests
(schemas.py, endpoint.py, openapi.py). The operations (views/) call the same
functions as the operations console and `flask workflows`. No session cookie
authenticates here and no CSRF token is asked for: only the bearer token."""

from __future__ import annotations

from flask import Flask

from webapp.api import cli, idempotency, problems
from webapp.api.endpoint import bp
from webapp.api.views import events, meta, runs, workflows
from webapp.core.security import csrf
from webapp.jobs.registry import JobSpec, register_job

__all__ = ["init_app"]

del events, meta, runs, workflows  # imported for their routes on bp


def init_app(app: Flask) -> None:
    register_job(JobSpec("api-idempotency-sweep", idempotency.sweep, "17 * * * *", False, "skip"))
    problems.init_app(app)
    app.register_blueprint(bp)
    csrf.exempt(bp)  # a bearer token, never a cookie: nothing for a forged form to ride on
    app.cli.add_command(cli.tokens_cli)
    app.cli.add_command(cli.api_cli)
