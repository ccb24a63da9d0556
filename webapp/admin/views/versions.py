"""POST /admin/runs/<id>/migrate: move one waiting run to a version in the
code (`flask workflows migrate` for one run, the admin as actor)."""

from __future__ import annotations

from flask import Response, request
from flask_babel import gettext

from webapp.admin import access
from webapp.admin.access import bp
from webapp.admin.views.runs import detail, run_page
from webapp.core import db
from webapp.workflows import versions

MAX_MAP = 1000


@bp.post("/runs/<run_id>/migrate")
def migrate(run_id: str) -> Response:
    d = detail(run_id)
    raw_to, raw_map = request.form.get("to", ""), request.form.get("map", "")
    try:
        to = int(raw_to)
    except ValueError:
        return run_page(run_id, error=gettext("admin.run.migrateBadVersion"), status=422)
    if to not in d.targets or len(raw_map) > MAX_MAP:
        return run_page(run_id, error=gettext("admin.run.migrateBadVersion"), status=422)
    try:
        mapping = versions.parse_map([p for p in raw_map.replace(",", " ").split() if p])
        with db.transaction() as conn:
            plan = versions.migrate(
                conn,
                d.run.workflow_name,
                d.run.definition_version,
                to,
                mapping,
                run_id=d.run.run_id,
                actor=access.actor(),
            )
    except (ValueError, versions.MigrationError) as exc:
        return run_page(
            run_id, error=gettext("admin.run.actionFailed", reason=str(exc)), status=409
        )
    if not plan.moves:
        return run_page(run_id, error=gettext("admin.run.migrateNotWaiting"), status=409)
    return run_page(run_id, success=gettext("admin.run.migrated", version=to))
