"""`GET /runs/<run_id>/events`: a run's new events as server-sent events.

Only the run's subject (the signed-in user whose run it is) or an admin may
follow it; anyone else gets 404, as for a run that does not exist. The
stream starts after `Last-Event-ID` (a reconnect) or `?after=N` (the version
the page was rendered at), sends each event once, in order, with its
version as its id, and ends with `done` once the run has settled. Events:
`progress` (an HTML list item: the entry), `run` (any other run event; its
type as data: a page reloads its section) and `done`."""

from __future__ import annotations

import json
from collections.abc import Iterator

from flask import Blueprint, Response, abort, render_template, request, stream_with_context
from flask_login import current_user

import webapp.workflows as wf
from webapp.live import watch

bp = Blueprint("live", __name__)

KEEP_ALIVE_S = 15.0  # a comment line this often keeps proxies from closing an idle stream
RETRY_MS = 2000  # how soon a browser reconnects after a dropped connection


def _allowed(head: wf.RunHead) -> bool:
    if not current_user.is_authenticated:
        return False
    if getattr(current_user, "is_admin", False):
        return True
    return (
        head.subject_id is not None
        and head.subject_id == str(current_user.id)
        and head.tenant_id == getattr(current_user, "tenant_id", head.tenant_id)
    )


def _after() -> int:
    raw = request.headers.get("Last-Event-ID") or request.args.get("after") or "0"
    try:
        after = int(raw)
    except ValueError:
        abort(400)
    if after < 0:
        abort(400)
    return after


def _message(event: str, data: str, version: int | None = None) -> str:
    head = f"id: {version}\n" if version is not None else ""
    lines = "".join(f"data: {line}\n" for line in (data.splitlines() or [""]))
    return f"{head}event: {event}\n{lines}\n"


def _item(item: wf.StreamItem) -> str:
    if item.progress:
        html = render_template("_progress_entry.html", item=item, text=_text(item.data))
        return _message("progress", html, item.version)
    return _message("run", item.type, item.version)


def _text(data: object) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return json.dumps(data, sort_keys=True)


@bp.get("/runs/<run_id>/events")
def run_events(run_id: str) -> Response:
    head = wf.run_head(run_id)
    if head is None or not _allowed(head):
        abort(404)
    after = _after()
    stream = watch.open_stream(head.tenant_id, head.run_id, after)
    if stream is None:
        return Response("too many open streams", 503, {"Retry-After": "5"})

    def events() -> Iterator[str]:
        try:
            yield f"retry: {RETRY_MS}\n\n"
            while True:
                now, items = wf.stream_after(head.tenant_id, head.run_id, stream.version)
                for item in items:
                    yield _item(item)
                    stream.version = item.version
                if now.settled and now.version <= stream.version:
                    yield _message("done", now.status)
                    return
                if not stream.wait(KEEP_ALIVE_S):
                    yield ": keep-alive\n\n"
        finally:
            watch.close(stream)

    return Response(
        stream_with_context(events()),
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
