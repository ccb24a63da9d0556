"""POST /admin/runs/<id>/rerun: start a rerun from a step (`flask workflows
rerun RUN_ID --from-step N`, the admin as actor); the answer is the new run's
page (with htmx, at the new run's address)."""

from __future__ import annotations

from flask import Response, request, url_for
from flask_babel import gettext

from webapp.admin import access
from webapp.admin.access import bp
from webapp.admin.views.runs import detail, run_page
from webapp.workflows import operations as ops
from webapp.workflows import rerun as reruns


@bp.post("/runs/<run_id>/rerun")
def rerun(run_id: str) -> Response:
    d = detail(run_id)
    step = request.form.get("from_step", "")[:10]
    try:
        new_id = reruns.rerun(d.run.run_id, step, actor=access.actor())
    except ops.OperationError as exc:
        return run_page(
            run_id, error=gettext("admin.run.actionFailed", reason=str(exc)), status=422
        )
    resp = run_page(new_id, success=gettext("admin.run.rerunStarted", run_id=run_id))
    resp.headers["HX-Push-Url"] = url_for(
        "admin.run", run_id=new_id
    )  # the address is the new run's
    return resp
