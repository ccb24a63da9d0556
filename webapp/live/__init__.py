"""Live run pages: `GET /runs/<id>/events` streams a run's new events as
server-sent events (a progress entry, any other run event, and `done` when
the run has settled), for the htmx SSE extension on the console's run page
and the privacy center's export (docs/workflows.md, "Progress streamed live").

`watch` holds the process's open streams: one shared reader per process looks
for new events of every watched run at once, so an idle stream holds no
database connection and, under an evented server (gunicorn's gevent worker,
docs/operations.md), no thread."""

from __future__ import annotations

from flask import Flask

from webapp.live import views, watch


def init_app(app: Flask) -> None:
    cfg = app.config["APP_CONFIG"]
    watch.configure(cfg.workflow_streams_max, cfg.workflow_streams_poll_ms / 1000)
    app.register_blueprint(views.bp)
