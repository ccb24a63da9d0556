"""`GET /metrics` (the Prometheus text format) and the request instruments.

Guarded: answered only to a client address in `METRICS_ALLOW` (default
loopback; behind `TRUSTED_PROXIES` the address is the proxied client's) or to
a request with `Authorization: Bearer <METRICS_TOKEN>`; everyone else gets the
ordinary 404 page, as if there were no such URL.

Each request is timed from the first before-request hook to the last
after-request one and counted under its route template (`/admin/runs/<run_id>`,
never the path itself), method and status; a request that matched no route is
counted under `<unmatched>`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from flask import Blueprint, Flask, Response, abort, current_app, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from webapp.core.config import Config
from webapp.core.redis_conn import get_redis
from webapp.jobs.queue import QUEUES
from webapp.metrics import gauges, instruments, multiprocess_dir, run_counters
from webapp.metrics.guard import Guard

bp = Blueprint("metrics", __name__)

METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
_STARTED = "webapp.metrics.started"
# The route of a request that matched none: the label here, the span name's
# path in webapp.tracing (never the path itself, which may hold a token).
UNMATCHED = "<unmatched>"
HEARTBEAT_EVERY_S = 1.0


def exposition(collector: gauges.ScrapeGauges) -> bytes:
    """Every process's counters on this host, and the scrape-time gauges."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(multiprocess_dir()))
    registry.register(collector)
    return generate_latest(registry)


@bp.get("/metrics")
def metrics() -> Response:
    guard: Guard = current_app.extensions["metrics.guard"]
    if not guard.admits(request.remote_addr, request.headers.get("Authorization")):
        abort(404)
    body = exposition(current_app.extensions["metrics.gauges"])
    resp = Response(body, 200, content_type=CONTENT_TYPE_LATEST)
    resp.headers["Cache-Control"] = "no-store"
    return resp


Observe = Callable[[str, str, int, float], None]


def request_observer() -> Observe:
    """`observe(method, route, status, seconds)`: count one answered request
    (also for an answer made before Flask, webapp.ui.home.QuickHealth), and
    beat the web's heartbeat at most once a second."""
    histogram = instruments.HTTP_REQUESTS
    last_beat = [0.0]

    def observe(method: str, route: str, status: int, seconds: float) -> None:
        histogram.labels(method if method in METHODS else "OTHER", route, str(status)).observe(
            seconds
        )
        now = time.perf_counter()
        if now - last_beat[0] >= HEARTBEAT_EVERY_S:
            last_beat[0] = now
            instruments.heartbeat("web", "requests")

    return observe


def _instrument(app: Flask) -> None:
    observe = app.extensions["metrics.observe"] = request_observer()

    @app.before_request
    def _start() -> None:
        request.environ[_STARTED] = time.perf_counter()

    @app.after_request
    def _finish(resp: Response) -> Response:
        started = request.environ.get(_STARTED)
        if started is not None:
            rule = request.url_rule
            route = rule.rule if rule is not None else UNMATCHED
            observe(request.method, route, resp.status_code, time.perf_counter() - started)
        return resp


def init_app(app: Flask) -> None:
    cfg: Config = app.config["APP_CONFIG"]
    run_counters.register()  # counted in every process that appends run events
    if not cfg.metrics_enabled:
        return
    app.extensions["metrics.guard"] = Guard(cfg.metrics_allow, cfg.metrics_token)
    app.extensions["metrics.gauges"] = gauges.ScrapeGauges(
        gauges.Cached(gauges.read_database, cfg.metrics_cache_seconds, "database"),
        gauges.Cached(
            lambda: gauges.read_redis(get_redis(), QUEUES), cfg.metrics_cache_seconds, "redis"
        ),
    )
    _instrument(app)
    app.register_blueprint(bp)
