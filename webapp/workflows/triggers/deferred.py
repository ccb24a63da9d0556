"""Deferred appends of a trigger batch: plain starts join one multi-stream
append, and a limited workflow's runs are admitted together
(`slots.admit_many`), both just before the transaction commits, so a batch
holds the append lock only for its commit; after commit, the started runs go
to the workers' resume loops (one advance job per chunk when none is alive)."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection

from webapp.core import db
from webapp.eventstore import NewEvent, StreamId, VersionConflict, append
from webapp.workflows.dispatch.signals import on_start
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs, slots

log = logging.getLogger("webapp.workflows")

_STARTS = "workflows.deferred_starts"
_ADVANCES = "workflows.started_runs"
ADVANCE_CHUNK = 10  # runs per advance job: fewer jobs, and still spread over workers


def defer(conn: Connection, tenant_id: str, run_id: str, started: dict[str, Any]) -> None:
    item = (runs.stream(tenant_id, run_id), [NewEvent(ev.RUN_STARTED, started)], 0)
    db.collect_before_commit(conn, _STARTS, item, lambda starts: _flush_starts(conn, starts))


_ADMISSIONS = "workflows.deferred_admissions"


def defer_admission(conn: Connection, item: tuple[Any, ...]) -> None:
    """A limited workflow's run: decide started or queued just before commit,
    so the append lock the admission takes is held only for the commit, not
    for the rest of the trigger batch."""
    db.collect_before_commit(conn, _ADMISSIONS, item, lambda items: _flush_admissions(conn, items))


def _flush_admissions(conn: Connection, items: list[tuple[Any, ...]]) -> None:
    """Admit the transaction's limited runs together (`slots.admit_many`) and
    append them in one multi-stream append; should one lose its stream to a
    concurrent trigger, append them one by one so only that one is dropped."""
    if not items:
        return
    admitted = slots.admit_many(conn, [(key, limit) for *_, key, limit in items])
    batch = [
        (
            runs.stream(tenant_id, run_id),
            [NewEvent(ev.RUN_STARTED if ok else ev.RUN_QUEUED, payload)],
            expected,
        )
        for (tenant_id, run_id, expected, payload, _, _), ok in zip(items, admitted, strict=True)
    ]
    try:
        with conn.begin_nested():
            runs.append_batch(conn, batch, dispatch=True)
        landed = [True] * len(batch)
    except VersionConflict:
        landed = [_append_one(conn, b) for b in batch]
    for (stream, _, _), ok, done in zip(batch, admitted, landed, strict=True):
        if ok and done:
            advance_after_commit(conn, stream.tenant_id, stream.aggregate_id)


def _append_one(conn: Connection, item: tuple[StreamId, list[NewEvent], int]) -> bool:
    try:
        with conn.begin_nested():
            append(conn, *item)
    except VersionConflict:
        log.info("workflow trigger lost the race for its key", extra={"run_id": item[0]})
        return False
    return True


def _flush_starts(conn: Connection, starts: list[tuple[StreamId, list[NewEvent], int]]) -> None:
    if starts:  # their runs rows written set-based, not one upsert per run
        runs.append_batch(conn, starts, dispatch=True)
    for s, _, _ in starts:
        advance_after_commit(conn, s.tenant_id, s.aggregate_id)


def advance_after_commit(conn: Connection, tenant_id: str, run_id: str) -> None:
    """Collect the transaction's started runs; after commit, they are advanced
    (`_enqueue_advances`)."""
    scope = db.tx_scope(conn)
    started = scope.get(_ADVANCES)
    if started is None:
        started = scope[_ADVANCES] = []
        db.after_commit(conn, lambda: _enqueue_advances(started))
    started.append((tenant_id, run_id))


def _enqueue_advances(started: list[tuple[str, str]]) -> None:
    by_tenant: dict[str, list[str]] = {}
    for tenant_id, run_id in started:
        by_tenant.setdefault(tenant_id, []).append(run_id)
    for tenant_id, ids in by_tenant.items():
        for i in range(0, len(ids), ADVANCE_CHUNK):  # to the resume loops, else a job
            on_start(tenant_id, ids[i : i + ADVANCE_CHUNK])
