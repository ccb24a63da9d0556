"""The application factory."""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

from flask import Flask, has_request_context, request
from htmx_flask import Htmx
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError

from webapp import app_modules, cli, features, tracing
from webapp.core import db, logs, security, static_files, writable
from webapp.core.config import ROOT, Config
from webapp.core.sqlite_setup import SqliteTuning
from webapp.eventstore import projections
from webapp.health import liveness, readiness
from webapp.jobs.queue import request_dispatch
from webapp.metrics import engine as engine_metrics
from webapp.metrics import instruments
from webapp.metrics import web as metrics
from webapp.ui import forms, home
from webapp.workflows import host as workflow_host

log = logging.getLogger(__name__)


def create_app(config: Config | None = None) -> Flask:
    config = config or Config.from_env()
    app = Flask(
        __name__,
        template_folder=str(ROOT / "templates"),
        static_folder=str(ROOT / "static"),
        instance_path=str(config.instance_path),
    )
    logs.setup(config.log_level)
    app.config.update(
        APP_CONFIG=config,
        SECRET_KEY=config.secret_key,
        TESTING=config.testing,
        MAX_CONTENT_LENGTH=config.max_content_length,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # Every cookie the product sets (session, remember-me; the CSRF token
        # lives in the session) is Secure under an https BASE_URL.
        SESSION_COOKIE_SECURE=config.cookies_secure,
        REMEMBER_COOKIE_HTTPONLY=True,
        REMEMBER_COOKIE_SAMESITE="Lax",
        REMEMBER_COOKIE_SECURE=config.cookies_secure,
    )
    if config.insecure_cookies_over_https:
        log.warning(
            "SESSION_COOKIE_SECURE=false with an https BASE_URL: the session and "
            "remember-me cookies are sent without Secure, also over plain HTTP",
            extra={"base_url": config.base_url},
        )
    engine = db.init_engine(
        config.database_url,
        SqliteTuning(config.sqlite_cache_mb, config.sqlite_mmap_mb),
        config.database_pooling,
    )
    # After any commit that appended events: one (deduplicated) projection dispatch.
    db.on_after_commit(request_dispatch)
    writable.on_refused(_count_refused)

    Htmx(app)
    security.init_app(app)  # before any feature, so none depends on the order
    metrics.init_app(app)  # its request timer first in, last out
    tracing.init_app(app, engine)  # OTEL_* set: request and statement spans
    # The workflow engine reports to the metrics and the health checks through
    # its host hooks; it imports neither. Its dispatch loops run in workers only.
    workflow_host.install(
        workflow_host.Host(
            on_step=engine_metrics.on_step,
            on_resume=engine_metrics.on_resume,
            on_loop_turn=lambda loop: liveness.tick("worker", loop),
        )
    )

    cli.init_app(app)
    home.init_app(app)
    readiness.init_app(app)
    static_files.init_app(app)
    forms.init_app(app)
    _request_ids(app)
    features.init_app(app)
    # The application's own workflows (WORKFLOW_MODULES), in every process.
    app_modules.load(app, config.workflow_modules)
    _mount_projections()
    # tests build an app per test, a `flask ...` command, the worker and the
    # scheduler render few pages or none: they compile on demand
    if not config.testing and serves_pages():
        _compile_templates(app)
    return app


def _count_refused(condition: str) -> None:
    instruments.DATABASE_WRITES_REFUSED.labels(condition).inc()


def serves_pages() -> bool:
    """Whether this process is a web server's: gunicorn (`make run`, the
    Procfile) puts SERVER_SOFTWARE in its environment before its workers build
    the app."""
    return os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/")


def _compile_templates(app: Flask) -> None:
    """Compile every template now, once per process, instead of in the first
    requests of each worker. Not when templates reload on change (debug): then
    Jinja checks each file's mtime per render anyway."""
    env = app.jinja_env
    if env.auto_reload:
        return
    for name in env.list_templates(extensions=("html",)):
        env.get_template(name)


def _mount_projections() -> None:
    """Create missing projection cursors now, so a projection that starts from
    `now` starts from when it was mounted, not from its first dispatch."""
    try:
        projections.ensure_cursors()
    except (OperationalError, ProgrammingError) as exc:
        if writable.refusal(exc) is None:
            log.info("projection cursors not created: database not migrated yet")
    except DBAPIError as exc:  # read-only PostgreSQL: start anyway, reads work
        if writable.refusal(exc) is None:
            raise


def request_id() -> str:
    """This request's id for the logs: the caller's `X-Request-Id` when it is a
    short alphanumeric one, else a new one. Made when a line is first logged, so
    a request that logs nothing pays nothing for it."""
    environ = request.environ  # per request (`g` may outlive one, in tests)
    rid = environ.get("webapp.request_id")
    if rid is None:
        rid = request.headers.get("X-Request-Id", "")
        if not rid or len(rid) > 64 or not rid.replace("-", "").isalnum():
            rid = uuid.uuid4().hex
        environ["webapp.request_id"] = rid
    return str(rid)


def _request_context() -> dict[str, Any]:
    return {"request_id": request_id()} if has_request_context() else {}


def _request_ids(_app: Flask) -> None:
    logs.add_context_provider(_request_context)
