"""/admin/queues: RQ queues, workers, the scheduler's entries, failed mails (Retry)."""

from __future__ import annotations

from flask import Response, current_app
from flask_babel import gettext

from webapp.admin import access, redis_state
from webapp.admin.access import bp
from webapp.mail.outbox import admin as outbox
from webapp.ui import pages


def _page(
    fragment: str = "admin/_mails.html",
    success: str | None = None,
    error: str | None = None,
    status: int = 200,
) -> Response:
    """The whole page, or with htmx one section: Redis's state (the 5 s poll)
    or the failed mails (after Retry)."""
    return pages.render(
        "admin/queues.html",
        fragment,
        success=success,
        has_errors=error is not None,
        status=status,
        redis=redis_state.read(),
        mails=outbox.failed(),
        resync_seconds=current_app.config["APP_CONFIG"].scheduler_resync_seconds,
        success_text=success,
        error_text=error,
    )


@bp.get("/queues")
def queues() -> Response:
    return _page("admin/_redis.html")


@bp.post("/queues/mails/<int:outbox_id>/retry")
def retry_mail(outbox_id: int) -> Response:
    if not outbox.retry(outbox_id, actor=access.actor()):
        return _page(error=gettext("admin.mails.notFailed"), status=409)
    return _page(success=gettext("admin.mails.retried"))


@bp.post("/queues/mails/retry-all")
def retry_all_mails() -> Response:
    ids = outbox.retry(None, actor=access.actor())
    return _page(success=gettext("admin.mails.retriedAll", count=len(ids)))
