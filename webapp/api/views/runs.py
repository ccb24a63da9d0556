"""Runs of the token's tenant: list (the console's filters, keyset pages), get
one, the operator actions (cancel, retry, pause, resume, rerun from a step),
each through the same function as the console and `flask workflows`, and
messages to one run (a signal; an update and its answer) through the same
functions as `wf.signal` and `wf.update`. A run of another tenant is answered
exactly as a run that does not exist."""

from __future__ import annotations

import dataclasses
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from webapp.api.endpoint import Call, Reply, endpoint
from webapp.api.problems import Problem
from webapp.api.schemas import (
    RUN_ID_PATTERN,
    CancelIn,
    EmptyIn,
    RerunIn,
    RunDetail,
    RunList,
    RunListQuery,
    RunSummary,
    SignalIn,
    SignalOut,
    UpdateIn,
    UpdateOut,
)
from webapp.core import actors, db
from webapp.workflows import client, pausing, rerun
from webapp.workflows import operations as ops
from webapp.workflows.store import queries
from webapp.workflows.store.messages import MessageError, RunNotFound, RunNotOpen
from webapp.workflows.store.queries import RunFilter

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
RUN_ID = {"run_id": {"type": "string", "pattern": RUN_ID_PATTERN, "description": "the run's id"}}
READ_ERRORS = (400, 401, 403, 404, 429)
WRITE_ERRORS = (400, 401, 403, 404, 409, 413, 415, 429)


def encode_cursor(cursor: tuple[datetime, str]) -> str:
    """The next page's place: the last run's start (microseconds since 1970)
    and id. Every text that fits CURSOR_PATTERN is a place, so no cursor a
    client sends back can be unreadable."""
    micros = (cursor[0].astimezone(UTC) - EPOCH) // timedelta(microseconds=1)
    return f"{micros}.{uuid.UUID(cursor[1]).hex}"


def decode_cursor(text: str) -> tuple[datetime, str]:
    micros, _, run_hex = text.partition(".")
    return EPOCH + timedelta(microseconds=int(micros)), str(uuid.UUID(run_hex))


def _valid_id(run_id: str) -> bool:
    return re.fullmatch(RUN_ID_PATTERN, run_id) is not None


def _own_run(conn: Any, tenant: str, run_id: str) -> Any:
    """The run's row, if it is this tenant's; else 404 (the same answer for a
    run that does not exist and one of another tenant)."""
    if _valid_id(run_id):
        try:
            row = ops.find_run(conn, run_id)
        except ops.OperationError:
            row = None
        if row is not None and row.tenant_id == tenant:
            return row
    raise Problem("not-found", f"no run {run_id}")


def _detail(tenant: str, run_id: str) -> RunDetail:
    with db.reading() as conn:
        row = _own_run(conn, tenant, run_id)
        info = ops.describe_run(conn, run_id)
    info.pop("events", None)
    info.pop("tenant", None)
    return RunDetail.model_validate({**info, "paused": row.paused_by is not None})


@endpoint(
    "GET",
    "/runs",
    summary="List runs",
    tag="runs",
    scope="runs:read",
    query=RunListQuery,
    responses={200: RunList},
    errors=(400, 401, 403, 429),
)
def list_runs(call: Call) -> Reply:
    """The tenant's runs, newest first, filtered as in the operations console;
    follow `nextCursor` for the next page."""
    q: RunListQuery = call.query
    f = RunFilter(
        tenant=call.token.tenant_id,
        status=q.status,
        workflow=q.workflow,
        started_after=q.started_after,
        started_before=q.started_before,
        before=decode_cursor(q.cursor) if q.cursor else None,
    )
    with db.reading() as conn:
        rows, cursor = queries.runs_page(conn, f, q.limit)
    runs = [
        RunSummary(
            run_id=r.run_id,
            workflow=r.workflow_name,
            version=r.definition_version,
            status=r.status,
            step_index=r.step_index,
            started_at=r.started_at,
            updated_at=r.updated_at,
            concurrency_key=r.concurrency_key,
            priority=r.priority,
            paused=r.paused_by is not None,
        )
        for r in rows
    ]
    return Reply(200, RunList(runs=runs, next_cursor=encode_cursor(cursor) if cursor else None))


@endpoint(
    "GET",
    "/runs/{run_id}",
    summary="Get a run",
    tag="runs",
    scope="runs:read",
    responses={200: RunDetail},
    errors=READ_ERRORS,
    path_params=RUN_ID,
)
def get_run(call: Call) -> Reply:
    """Status, version, results, what it waits for, its keys, parent and children."""
    return Reply(200, _detail(call.token.tenant_id, call.path["run_id"]))


def _act(call: Call, action: Any) -> Reply:
    tenant, run_id = call.token.tenant_id, call.path["run_id"]
    with db.reading() as conn:
        _own_run(conn, tenant, run_id)
    try:
        action(run_id, actors.api_token(call.token.id))
    except ops.OperationError as exc:
        raise Problem("conflict", str(exc)) from None
    return Reply(200, _detail(tenant, run_id))


def _action(name: str, summary: str, body: type[Any], doc: str) -> Any:
    return endpoint(
        "POST",
        f"/runs/{{run_id}}/{name}",
        summary=summary,
        tag="runs",
        scope="runs:write",
        body=body,
        body_optional=True,
        responses={200: RunDetail},
        errors=WRITE_ERRORS,
        path_params=RUN_ID,
        description=doc,
    )


@_action(
    "cancel", "Cancel a run", CancelIn, "An open run stops; it never resumes. 409 when settled."
)
def cancel_run(call: Call) -> Reply:
    reason = call.body.reason or "cancelled over the API"
    return _act(call, lambda run_id, actor: ops.cancel(run_id, reason=reason, actor=actor))


@_action("retry", "Retry a failed run", EmptyIn, "A failed run continues from its failed step.")
def retry_run(call: Call) -> Reply:
    return _act(call, lambda run_id, actor: ops.retry(run_id, actor=actor))


@_action("pause", "Pause a run", EmptyIn, "An open run takes no step until resumed.")
def pause_run(call: Call) -> Reply:
    return _act(call, lambda run_id, actor: pausing.pause(run_id, actor=actor))


@_action("resume", "Resume a paused run", EmptyIn, "What fell due while paused runs at once.")
def resume_run(call: Call) -> Reply:
    return _act(call, lambda run_id, actor: pausing.unpause(run_id, actor=actor))


@endpoint(
    "POST",
    "/runs/{run_id}/rerun",
    summary="Rerun a run from a step",
    tag="runs",
    scope="runs:write",
    body=RerunIn,
    responses={201: RunDetail},
    errors=WRITE_ERRORS,
    path_params=RUN_ID,
)
def rerun_run(call: Call) -> Reply:
    """A new run with the same trigger event and the results of the steps
    before `fromStep`, starting at that step. The original is left as it is."""
    tenant, run_id = call.token.tenant_id, call.path["run_id"]
    with db.reading() as conn:
        _own_run(conn, tenant, run_id)
    try:
        new_id = rerun.rerun(run_id, call.body.from_step, actors.api_token(call.token.id))
    except ops.OperationError as exc:
        why = str(exc)
        if why.startswith("--from-step"):  # out of the workflow's steps: the request's fault
            why = why.replace("--from-step", "fromStep")
            raise Problem(
                "invalid-request", why, [{"pointer": "/fromStep", "detail": why}]
            ) from None
        raise Problem("conflict", why) from None
    return Reply(201, _detail(tenant, new_id), {"Location": f"/api/v1/runs/{new_id}"})


def _message(call: Call, send: Any) -> Any:
    """Send a message to the tenant's run: 404 for no such run (or another
    tenant's), 409 for a settled one, 400 for a payload the engine refuses
    (over its 64 KiB, when MAX_CONTENT_LENGTH lets such a body in)."""
    tenant, run_id = call.token.tenant_id, call.path["run_id"]
    with db.reading() as conn:
        _own_run(conn, tenant, run_id)
    try:
        return send(tenant, run_id)
    except RunNotOpen as exc:
        raise Problem("conflict", str(exc)) from None
    except RunNotFound:  # erased meanwhile
        raise Problem("not-found", f"no run {run_id}") from None
    except MessageError as exc:  # the schema holds name and key to the engine's bounds
        why = str(exc)
        raise Problem("invalid-request", why, [{"pointer": "/payload", "detail": why}]) from None


@endpoint(
    "POST",
    "/runs/{run_id}/signal",
    summary="Send a signal to a run",
    tag="runs",
    scope="runs:write",
    body=SignalIn,
    responses={202: SignalOut},
    errors=WRITE_ERRORS,
    path_params=RUN_ID,
)
def signal_run(call: Call) -> Reply:
    """Stored with the run at once (202): the run's next `wait_for_signal` of
    this name takes it, or the one waiting now wakes. Signals of one name are
    taken in the order they came. 409 when the run has settled."""
    body: SignalIn = call.body
    signal_id = _message(
        call,
        lambda tenant, run_id: client.signal(run_id, body.name, body.payload, body.key, tenant),
    )
    return Reply(202, SignalOut(signal_id=signal_id))


@endpoint(
    "POST",
    "/runs/{run_id}/update",
    summary="Send an update to a run and wait for its answer",
    tag="runs",
    scope="runs:write",
    body=UpdateIn,
    responses={200: UpdateOut},
    errors=WRITE_ERRORS,
    path_params=RUN_ID,
)
def update_run(call: Call) -> Reply:
    """The run's handler at its `wait_for_update` of this name judges the
    payload: `accepted` with its value or `rejected` with a reason. A run that
    does not wait for it answers `not-accepting` and nothing is stored. With
    no answer within `timeout` seconds, `timed-out`: the run may still answer,
    and the same `key` asks again without a second update. 409 when settled."""
    body: UpdateIn = call.body
    result = _message(
        call,
        lambda tenant, run_id: client.update(
            run_id, body.name, body.payload, body.timeout, body.key, tenant
        ),
    )
    return Reply(200, UpdateOut.model_validate(dataclasses.asdict(result)))
