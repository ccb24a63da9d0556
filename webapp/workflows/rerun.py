"""Rerun from a step (`flask workflows rerun RUN_ID --from-step N`, the
console's button): a new run, linked to the original (`rerunOf` on its
run-started), with the same trigger event and the stored results of the
steps before N, that starts at step N. The original is left as it is.

The definition must be the one the original ran, or one that changed only
from step N on (`compat.continues`): the steps whose results are reused must
be the same steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection

from webapp.core import db
from webapp.eventstore import Metadata, NewEvent, append, get_event
from webapp.workflows.definition import compat
from webapp.workflows.definition.controls import ControlError
from webapp.workflows.definition.model import Branch, ForEach, Retry, Step, Workflow
from webapp.workflows.dispatch.signals import schedule_advance
from webapp.workflows.engine import resume
from webapp.workflows.engine.run_controls import with_controls
from webapp.workflows.operations import OperationError, find_run
from webapp.workflows.store import definitions, runs, slots
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus


def rerun(run_id: str, from_step: Any, actor: str | None = None) -> str:
    """Start the rerun; its run id. OperationError says why not."""
    with db.transaction() as conn:
        row = find_run(conn, run_id)
        if row.status in (RunStatus.QUEUED, RunStatus.SKIPPED) or not row.trigger_event_ref:
            raise OperationError(f"run {run_id} never started: nothing to rerun")
        wf = resume.definition_of(row)
        if wf is None:
            raise OperationError(
                f"workflow {row.workflow_name!r} version {row.definition_version} is not registered"
            )
        n = _step(from_step, wf)
        if wf.fingerprint != row.fingerprint:
            old = definitions.shapes(conn, [row.fingerprint]).get(row.fingerprint)
            if old is None or not compat.continues(old, wf.shape, n, waiting=False):
                raise OperationError(
                    f"workflow {row.workflow_name!r} changed before step {n}: "
                    "its stored results do not fit the code"
                )
        return _start(conn, row, wf, n, actor)


def _step(value: Any, wf: Workflow) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise OperationError(f"--from-step must be a step index, got {value!r}") from None
    if isinstance(value, bool) or not 0 <= n < len(wf.steps):
        raise OperationError(
            f"--from-step must be from 0 to {len(wf.steps) - 1} (the steps of {wf.name!r})"
        )
    return n


def _names(steps: Iterable[Step]) -> set[str]:
    out: set[str] = set()
    for s in steps:
        out.add(s.name)
        if isinstance(s, Retry | ForEach):
            out |= _names(s.do)
            if isinstance(s, ForEach):
                out.add(s.as_)
        elif isinstance(s, Branch):
            out |= _names(s.then) | _names(s.otherwise)
    return out


def _start(conn: Connection, row: Any, wf: Workflow, n: int, actor: str | None) -> str:
    keep = _names(wf.steps[:n]) | {ev.CONSUMED}
    results = {k: v for k, v in dict(row.results or {}).items() if k in keep}
    payload = ev.run_started(
        wf.name, row.trigger_event_type, row.trigger_event_ref, wf.fingerprint, None, wf.version
    )
    payload.update(rerunOf=row.run_id, fromStep=n)
    new_id = ev.run_id_for(wf.name, None)
    trigger = get_event(conn, str(row.trigger_event_ref.get("eventId", "")))
    if trigger is None:
        raise OperationError(f"run {row.run_id}'s trigger event is gone: nothing to rerun")
    try:  # a rerun has its own deadline and cancel-on events, from now
        payload = with_controls(wf, row.tenant_id, new_id, trigger, payload)
    except ControlError as exc:
        raise OperationError(str(exc)) from None
    event_type = ev.RUN_STARTED
    limit = wf.slot_limit
    if limit is not None:  # a rerun takes a slot like any run
        key = row.concurrency_key or ""
        payload = ev.with_slot(payload, key, row.priority or 3)
        if not slots.admits(conn, (row.tenant_id, wf.name, key), limit):
            event_type = ev.RUN_QUEUED
    definitions.record(conn, wf)
    append(
        conn,
        runs.stream(row.tenant_id, new_id),
        [NewEvent(event_type, payload)],
        0,
        Metadata(actor=actor),
    )
    runs.save(conn, runs.read_run(conn, row.tenant_id, new_id), results=results, step_index=n)
    if event_type == ev.RUN_STARTED:
        schedule_advance(conn, row.tenant_id, new_id)
    return new_id
