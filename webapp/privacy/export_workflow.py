"""The export, as a workflow on our own engine: claim, build, store, done or failed.

`user.export-requested` starts one run per job (keyed by the job id). Each
step commits with the run's progress, so a worker killed while building leaves
the run to be resumed by another worker (the engine's leases), which builds
again; the job then ends done or failed. A job still running after
`STALE_AFTER` is failed by the `export-stale` job (webapp/privacy/jobs.py).
Step results hold ids, sizes and words only, never personal data.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import Connection, select, update

import webapp.workflows as wf
from webapp.accounts import events as ev
from webapp.accounts import stream
from webapp.accounts.account import Account
from webapp.accounts.users import get_user
from webapp.core import clock, db
from webapp.eventstore import ANY, NewEvent
from webapp.privacy import bundle, downloads, exports, mails
from webapp.privacy.exports import Job
from webapp.privacy.tables import PENDING, RUNNING, export_jobs
from webapp.workflows.definition.model import RunContext
from webapp.workflows.store.run_events import run_id_for

log = logging.getLogger(__name__)

STALE_AFTER = timedelta(minutes=30)
ACTOR = "system:export"


def folder() -> Path:
    return Path(current_app.config["APP_CONFIG"].exports_path)


def _locked(conn: Connection, job_id: str) -> Job | None:
    """The job's row, locked until commit (PostgreSQL; SQLite locks at BEGIN),
    so the worker finishing it and the stale sweep never both decide."""
    conn.execute(select(export_jobs.c.id).where(export_jobs.c.id == job_id).with_for_update())
    return exports.get(conn, job_id)


def remove(name: str) -> bool:
    """Delete an export file; False when it could not be deleted (tried again later)."""
    try:
        (folder() / name).unlink(missing_ok=True)
    except OSError:
        log.warning("export file not deleted", extra={"file": name})
        return False
    return True


def _job_id(ctx: RunContext) -> str:
    return str(ctx.trigger.payload["job_id"])


def claim(conn: Connection, ctx: RunContext, payload: Any) -> dict[str, Any]:
    job = _locked(conn, payload["job_id"])
    if job is None or job.status != PENDING:
        return {"claimed": False}
    user = get_user(conn, job.user_id, job.tenant_id)
    if user is None or not Account(user).may_be_processed():
        fail(conn, job, "restricted" if user else "gone")  # processing is paused
        return {"claimed": False}
    conn.execute(
        update(export_jobs)
        .where(export_jobs.c.id == job.id)
        .values(status=RUNNING, started_at=clock.now(), file_name=bundle.file_name(job.id))
    )
    return {"claimed": True}


def build(ctx: RunContext) -> dict[str, Any]:
    """Write the ZIP (again, if a killed worker had started it)."""
    if not ctx["claim"]["claimed"]:
        return {"ok": False, "reason": "not-claimed"}
    try:
        with db.reading() as conn:
            job = exports.get(conn, _job_id(ctx))
            user = get_user(conn, job.user_id, job.tenant_id) if job else None
            if job is None or user is None or job.status != RUNNING:
                return {"ok": False, "reason": "gone"}
            data = bundle.bundle(conn, user)
        ctx.emit("export", {"message": "privacy.export.stepCollected"})
        size = bundle.write_zip(folder(), job.id, data, user.language)
        ctx.emit("export", {"message": "privacy.export.stepWritten"})
    except Exception as exc:  # any failure ends the job as failed, visibly
        log.exception("export build failed", extra={"job": _job_id(ctx)})
        return {"ok": False, "reason": type(exc).__name__}
    return {"ok": True, "bytes": size}


def fail(conn: Connection, job: Job, reason: str) -> None:
    """End a running or pending job as failed: event, mail, partial file removed."""
    user = get_user(conn, job.user_id, job.tenant_id)
    removed = all([remove(bundle.file_name(job.id)), remove(f"{job.id}.partial")])
    if removed:  # else the daily cleanup tries again (the name stays recorded)
        conn.execute(update(export_jobs).where(export_jobs.c.id == job.id).values(file_name=None))
    if user is None:  # erased meanwhile: no stream to write to, no one to tell
        conn.execute(
            update(export_jobs)
            .where(export_jobs.c.id == job.id)
            .values(status="failed", completed_at=clock.now(), error=reason[:200])
        )
        return
    failed = NewEvent(ev.EXPORT_FAILED, {"job_id": job.id, "reason": reason[:200]})
    stream.append(conn, job.tenant_id, job.user_id, ANY, (failed,), actor=ACTOR)
    mails.record_export_failed(conn, user)


def finish(conn: Connection, ctx: RunContext, payload: Any) -> dict[str, Any]:
    job = _locked(conn, payload["job_id"])
    if job is None or job.status != RUNNING:
        return {"finished": "skipped"}  # failed as stale meanwhile, or never claimed
    built = ctx["build"]
    user = get_user(conn, job.user_id, job.tenant_id)
    if not built.get("ok") or user is None:
        fail(conn, job, str(built.get("reason", "gone")))
        return {"finished": "failed"}
    expires_at = clock.now() + timedelta(days=current_app.config["APP_CONFIG"].export_valid_days)
    token = downloads.issue(conn, job.id, expires_at)
    done = NewEvent(
        ev.EXPORT_COMPLETED,
        {"job_id": job.id, "expires_at": expires_at.isoformat(), "bytes": built["bytes"]},
    )
    stream.append(conn, job.tenant_id, job.user_id, ANY, (done,), actor=ACTOR)
    mails.record_export_ready(conn, user, token, expires_at)
    return {"finished": "done"}


def run_id_of(job_id: str) -> str:
    """The export run of a job (the workflow's key is the job id)."""
    return run_id_for(EXPORT_NAME, str(job_id))


def _ids(ctx: RunContext) -> dict[str, str]:
    return {"job_id": _job_id(ctx)}


EXPORT_NAME = "privacy-export"
EXPORT = wf.workflow(
    EXPORT_NAME,
    on=ev.EXPORT_REQUESTED,
    key=lambda event: str(event.payload["job_id"]),
    steps=[
        wf.call("claim", "privacy.export.claim", _ids),
        wf.compute("build", build),
        wf.call("finish", "privacy.export.finish", _ids),
        wf.ret(lambda ctx: ctx["finish"]),
    ],
)


def register() -> None:
    wf.register_handler("privacy.export.claim", claim)
    wf.register_handler("privacy.export.finish", finish)
    wf.register(EXPORT)
