"""The operations console under /admin: runs, stuck runs, projections, queues,
accounts (state, and whether there is a second factor).

Only admins (`users.is_admin`, set with `flask users grant-admin EMAIL`) see
it; everyone else gets 404 for every /admin URL (access.py). Reads are small
functions (queries.py); actions call the same functions as the `flask
workflows|projections|mail` commands, with the admin as the events' actor."""

from __future__ import annotations

from typing import Any

from flask import Flask, current_app
from flask_babel import gettext

from webapp.admin import access, present, queries
from webapp.admin import cli as _cli  # noqa: F401  (registers `flask users grant-admin|revoke-admin`)
from webapp.admin.views import accounts, bulk, ops, queues, rerun, runs, tokens, versions
from webapp.core.version import VERSION

__all__ = ["init_app"]

del (
    accounts,
    bulk,
    ops,
    queues,
    rerun,
    runs,
    tokens,
    versions,
)  # imported for their routes on access.bp


def _status_options() -> dict[str, str]:
    return {"": gettext("admin.runs.allStatuses")} | {
        word: gettext(f"admin.status.{word}") for word in queries.STATUSES
    }


def _queue_place(key: str | None, position: int, priority: int | None) -> str:
    """A queued run's place: "key acme · position 1 · priority 3"."""
    shown = present.short(key, 60) if key else gettext("admin.run.wholeWorkflow")
    return gettext("admin.runs.queuePlace", key=shown, position=position, priority=priority or 3)


@access.bp.context_processor
def _helpers() -> dict[str, Any]:
    return {
        "when": present.when,
        "match_text": present.match_text,
        "payload_summary": present.payload_summary,
        "results_text": present.results_text,
        "word_of": queries.WORD_OF,
        # Looked up once per render, not once per table row.
        "status_label": {w: gettext(f"admin.status.{w}") for w in queries.STATUSES},
        "count_cap": queries.COUNT_CAP,
        "status_options": _status_options,
        "tenant_options": lambda ids: {t: t for t in ids},
        "admin_endpoints": set(current_app.view_functions),
        "queue_place": _queue_place,
        "app_version": VERSION,  # the footer's
    }


def init_app(app: Flask) -> None:
    access.init_app(app)
