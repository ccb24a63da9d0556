"""The projection of the run events: the `workflow_runs` row (one per run) and
the pending set `workflow_run_pending` (one row per suspended step), kept in
the append's own transaction.

One projection, two modes. Inline (the eventstore calls `_on_event` for every
run event an append writes), each event is applied at once. Inside
`batched(conn)`, as the drain's claims and finishes of a hundred runs at a
time are, the events are only collected, and `apply` then writes them all
set-based: one DELETE of the pending rows, one multi-row upsert of the new
ones, one UPDATE of the runs rows (with whatever the caller knows besides,
e.g. the new lease). Both modes are `apply`; the inline mode is a batch of one.

Doing this inline means a suspension and its pending row commit together, and
a claim (step.resumed) deletes the row in the claiming transaction, which is
what keeps concurrent resumes from seeing it. Every pending row written gets
its wake-up signal (`wake_signal`) after commit.

One concept: the run events' read models. How they are written (above) and
what each event sets in them, as plain values (below), are kept together:
a reader who follows one event into its row finds both in one place.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, insert, or_, select, update

from webapp.core import clock, db
from webapp.eventstore import Event, register_inline
from webapp.workflows.definition import catalog
from webapp.workflows.store import children, control_rows, pending, slots, sql, wake_signal
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus
from webapp.workflows.store.tables import timed, workflow_run_pending, workflow_runs

_BATCH = "workflows.batched_projection"


@contextmanager
def batched(conn: Connection) -> Iterator[list[Event]]:
    """Collect the run events appended inside the block (for `apply`)."""
    collected: list[Event] = []
    scope = conn.info
    scope[_BATCH] = collected
    try:
        yield collected
    finally:
        scope.pop(_BATCH, None)


def _on_event(conn: Connection, e: Event) -> None:
    collected = conn.info.get(_BATCH)
    if collected is not None:
        collected.append(e)
    else:
        apply(conn, [e])


def apply(
    conn: Connection,
    events: Sequence[Event],
    extra: dict[tuple[str, str], dict[str, Any]] | None = None,
    running: bool = False,
) -> None:
    """Write what the run events (in order) set, then `extra` columns per
    (tenant, run). `running`: every run was running under the caller's lease,
    so none has a pending row (its resume deleted it): no DELETE to send."""
    now = clock.now()
    cleared: dict[str, set[str]] = {}  # their suspensions end (step rows go)
    gone: dict[str, set[str]] = {}  # they settle: every pending row goes
    controlled: list[Event] = []
    suspending: list[Event] = []  # a slot="active" run gives its slot back
    new_rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    started: list[dict[str, Any]] = []
    runs_values: dict[tuple[str, str], dict[str, Any]] = {}
    settled: set[tuple[str, str]] = set()
    moved: list[Event] = []
    settling: list[Event] = []
    holds: list[tuple[Event, bool]] = []
    moved_starts: list[Event] = []
    for e in events:
        key = (e.tenant_id, e.aggregate_id)
        if e.type in (ev.RUN_STARTED, ev.RUN_QUEUED):
            cleared.setdefault(e.tenant_id, set()).add(e.aggregate_id)
            make = started_row if e.type == ev.RUN_STARTED else queued_row
            started.append(make(e, now))
            controls = control_rows.control_rows(e)
            for row in controls:
                new_rows[(*key, row["step_index"])] = row
            if controls:
                controlled.append(e)
            continue
        if e.type == ev.RUN_SKIPPED:  # a run's only event: its row, settled
            started.append(skipped_row(e, now))
            continue
        values = runs_values.setdefault(key, {})
        if e.type == ev.RUN_BATCHED:  # a collecting batch took one more event
            values.update(version=e.version, updated_at=now)
            continue
        if e.type in (ev.RUN_DEBOUNCED, ev.RUN_DELAYED):  # a queued run's start moves
            values.update(moved_start_values(e, now))
            moved_starts.append(e)
            continue
        if e.type in ev.SUSPENSIONS:
            row = pending_row(e, fingerprint_for(conn, e))
            new_rows[(*key, row["step_index"])] = row
            values.update(suspended_values(e, now))
            suspending.append(e)
            continue
        if e.type == ev.CHILD_STARTED and e.payload.get("wait"):  # waits for its child
            row = children.waiting_row(e)
            new_rows[(*key, row["step_index"])] = row
            values.update(suspended_values(e, now))
            suspending.append(e)
            continue
        if e.type in (ev.CHILD_STARTED, ev.CHILD_SETTLED):  # a record: the run goes on
            values.update(version=e.version, updated_at=now)
            continue
        if e.type == ev.RUN_MIGRATED:  # the suspension (if any) moves with the run
            values.update(migrated_values(e, now))
            moved.append(e)
            continue
        if e.type in (ev.RUN_PAUSED, ev.RUN_UNPAUSED):  # the suspension stays, held or freed
            paused = e.type == ev.RUN_PAUSED
            values.update((paused_values if paused else unpaused_values)(e, now))
            holds.append((e, paused))
            continue
        # every other run event ends the suspension: drop rows suspended
        # earlier; settling ends its controls (deadline, cancel-on) too
        ends = e.type in ev.SETTLING
        (gone if ends else cleared).setdefault(e.tenant_id, set()).add(e.aggregate_id)
        for k in [k for k in new_rows if k[:2] == key and (ends or k[2] >= 0)]:
            del new_rows[k]
        if e.type == ev.STEP_RESUMED:
            values.update(resumed_values(e, now))
        elif e.type == ev.RUN_RETRIED:
            values.update(retried_values(e, now))
        else:
            values.update(settled_values(e, now))
            settled.add(key)
            settling.append(e)
    for key, more in (extra or {}).items():
        runs_values.setdefault(key, {}).update(more, updated_at=now)
    for tenant_id, run_ids in ({} if running else cleared).items():
        run_ids = run_ids - gone.get(tenant_id, set())  # the DELETE below takes all theirs
        if not run_ids:
            continue
        conn.execute(
            delete(workflow_run_pending).where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id.in_(sorted(run_ids)),
                or_(  # a queued run's planned start goes once it starts
                    workflow_run_pending.c.step_index >= 0,
                    workflow_run_pending.c.step_index == ev.START_STEP,
                ),
            )
        )
    for tenant_id, run_ids in (_controlled_only(gone, settling) if running else gone).items():
        conn.execute(
            delete(workflow_run_pending).where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id.in_(sorted(run_ids)),
            )
        )
    for e in moved:
        _move_pending(conn, e)
    for e, paused in holds:
        _hold_pending(conn, e, paused)
    _upsert_runs(conn, started)
    sql.upsert_many(
        conn,
        workflow_run_pending,
        [new_rows[k] for k in sorted(new_rows)],
        ["tenant_id", "run_id", "step_index"],
    )
    for e in controlled:  # a run queued by a paused workflow: its rows wait for the resume
        if e.payload.get("paused"):
            _hold_pending(conn, e, True)
    for e in moved_starts:
        _move_start(conn, e)
    updated = sql.update_runs(conn, runs_values)
    if not running and settled and updated < len([v for v in runs_values.values() if v]):
        _insert_unstarted(conn, events, now)
    if settling:
        slots.after_settle(conn, settling)
        children.after_settle(conn, settling)
    if suspending:
        slots.after_settle(conn, suspending, active_only=True)
    for tenant_id, run_id, step_index in sorted(new_rows):
        at = new_rows[(tenant_id, run_id, step_index)]["wake_at"]
        if timed(at):
            wake_signal.signal(conn, tenant_id, run_id, step_index, at)
    for e in controlled:
        if (e.tenant_id, e.aggregate_id, ev.CANCEL_ON_STEP) in new_rows:
            _look_back(conn, e)


def _upsert_runs(conn: Connection, started: list[dict[str, Any]]) -> None:
    """The runs rows of started, queued and skipped runs: one upsert per set
    of columns. Should a batch hold two rows of one run (queued, then
    started), they are written one by one, in order, as the events came."""
    keys = ["tenant_id", "run_id"]
    if len({(r["tenant_id"], r["run_id"]) for r in started}) < len(started):
        for row in started:
            sql.upsert_many(conn, workflow_runs, [row], keys)
        return
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in started:
        groups.setdefault(tuple(sorted(row)), []).append(row)
    for rows_of in groups.values():
        sql.upsert_many(conn, workflow_runs, rows_of, keys)


def _controlled_only(gone: dict[str, set[str]], settling: list[Event]) -> dict[str, set[str]]:
    """Of runs settling under their lease (they have no step row), those that
    may have control rows: their workflow declares a deadline or cancel-on."""
    names = {e.payload.get("workflowName") for e in settling}
    with_controls = {
        n for n in names if any(w.timeout or w.cancel_on for w in catalog.versions(str(n)))
    }
    if not with_controls:
        return {}
    ids = {e.aggregate_id for e in settling if e.payload.get("workflowName") in with_controls}
    return {t: run_ids & ids for t, run_ids in gone.items() if run_ids & ids}


def _look_back(conn: Connection, e: Event) -> None:
    """Cancel-on event before start: one that came after the trigger, before
    this run existed, wakes its row now. Here, inside the append that creates
    the run, for the events committed before it (on SQLite, all of them); and
    on PostgreSQL again once it has committed, for one committed meanwhile,
    whose inline wake-up could not see the row yet (`pending.wake_matching`).
    An event committed after that finds the row, inline or through the async
    net, which reads every event once its writer has ended (the safe
    position). Should that second look-back be lost, the sweep does it
    (`pending.look_back_owed`)."""
    complete = db.is_sqlite(conn)
    for row in _cancel_on_rows(e):
        if pending.look_back(conn, *row, complete=complete):
            break
    if not complete:
        db.after_commit(conn, lambda: _look_back_committed(e))


def _cancel_on_rows(e: Event) -> list[tuple[str, str, int, str, int, Any]]:
    """(tenant, run, step, event type, after, match) of each cancel-on row."""
    after = int(e.payload.get("triggerPosition", 0))
    return [
        (e.tenant_id, e.aggregate_id, ev.CANCEL_ON_STEP - i, c["eventType"], after, c.get("match"))
        for i, c in enumerate(e.payload.get("cancelOn") or ())
    ]


def _look_back_committed(e: Event) -> None:
    for row in _cancel_on_rows(e):
        if pending.look_back_committed(*row):
            break


def _move_start(conn: Connection, e: Event) -> None:
    """run-debounced / run-delayed: the run's START row moves to `startAt`."""
    at = datetime.fromisoformat(e.payload["startAt"])
    key = pending_key(e) & (workflow_run_pending.c.step_index == ev.START_STEP)
    conn.execute(update(workflow_run_pending).where(key).values(wake_at=at))
    wake_signal.signal(conn, e.tenant_id, e.aggregate_id, ev.START_STEP, at)


def _move_pending(conn: Connection, e: Event) -> None:
    """A migrated run's pending row follows it to its new step (and is
    signalled there); a run resumed in the same batch has none any more."""
    p = e.payload
    key = pending_key(e) & (workflow_run_pending.c.step_index == int(p["fromStep"]))
    found = conn.execute(select(workflow_run_pending.c.wake_at).where(key)).first()
    if found is None:
        return
    conn.execute(
        update(workflow_run_pending)
        .where(key)
        .values(step_index=int(p["toStep"]), definition_fingerprint=p["definitionFingerprint"])
    )
    wake_signal.signal(conn, e.tenant_id, e.aggregate_id, int(p["toStep"]), found.wake_at)


def _hold_pending(conn: Connection, e: Event, paused: bool) -> None:
    """Pause: the run's pending rows stay, their wake time and any awaited
    event kept, but no drain takes them. Unpause: they are signalled again,
    so what fell due meanwhile is resumed now."""
    conn.execute(update(workflow_run_pending).where(pending_key(e)).values(paused=paused))
    if paused:
        return
    q = select(workflow_run_pending.c.step_index, workflow_run_pending.c.wake_at)
    for step_index, wake_at in conn.execute(q.where(pending_key(e))):
        if timed(wake_at):
            wake_signal.signal(conn, e.tenant_id, e.aggregate_id, step_index, wake_at)


def _insert_unstarted(conn: Connection, events: Sequence[Event], now: Any) -> None:
    """A failure recorded before any run-started (a trigger's filter or key
    raised): the run gets its row from the failure alone."""
    for e in events:
        if e.type not in ev.SETTLING:
            continue
        if exists(conn, e):
            continue
        conn.execute(insert(workflow_runs).values(**unstarted_row(e, now)))


def register() -> None:
    for t in ev.ALL:
        register_inline(t, _on_event)


# -- what each run event sets, as plain values ----------------------------------


# A started run not picked up by a worker within this time is re-dispatched by the sweep.
START_GRACE = timedelta(seconds=10)


def run_key(e: Event) -> Any:
    return (workflow_runs.c.tenant_id == e.tenant_id) & (workflow_runs.c.run_id == e.aggregate_id)


def pending_key(e: Event) -> Any:
    return (workflow_run_pending.c.tenant_id == e.tenant_id) & (
        workflow_run_pending.c.run_id == e.aggregate_id
    )


def exists(conn: Connection, e: Event) -> bool:
    return conn.execute(select(workflow_runs.c.run_id).where(run_key(e))).first() is not None


def fingerprint_for(conn: Connection, e: Event) -> str | None:
    """The fingerprint a suspension stores: its payload's, else the run's (retry.scheduled)."""
    fp = e.payload.get("definitionFingerprint")
    if fp:
        return str(fp)
    row = conn.execute(select(workflow_runs.c.fingerprint).where(run_key(e))).first()
    return row.fingerprint if row else None


def pending_row(e: Event, fingerprint: str | None) -> dict[str, Any]:
    p = e.payload
    wake = p.get("wakeAt") or p["timeoutAt"]
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        step_index=int(p["stepIndex"]),
        workflow_name=p["workflowName"],
        suspension_event_type=e.type,
        wake_at=datetime.fromisoformat(wake),
        retry_attempt=p.get("attempt") if e.type == ev.RETRY_SCHEDULED else None,
        definition_fingerprint=fingerprint,
        wait_event_type=p.get("eventType"),
        match_expr=p.get("match"),
        trigger_event_type=None,
        trigger_event_ref=None,
        after_position=p.get("afterPosition"),
        # a wait for an event owes its look-back (`store.pending`)
        lookback_due=True if e.type == ev.STEP_WAITING_FOR_EVENT else None,
    )


def suspended_values(e: Event, now: datetime) -> dict[str, Any]:
    values: dict[str, Any] = dict(
        status=RunStatus.SUSPENDED,
        step_index=int(e.payload["stepIndex"]),
        version=e.version,
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )
    if e.type == ev.RETRY_SCHEDULED:
        values["attempt"] = int(e.payload["attempt"])
    return values


def resumed_values(e: Event, now: datetime) -> dict[str, Any]:
    return dict(status=RunStatus.RUNNING, version=e.version, updated_at=now)


def retried_values(e: Event, now: datetime) -> dict[str, Any]:
    """An operator's retry: running again from the failed step, leased by nobody."""
    return dict(
        status=RunStatus.RUNNING,
        step_index=int(e.payload["stepIndex"]),
        attempt=1,
        version=e.version,
        error=None,
        reason=None,
        lease_token=None,
        lease_until=now + START_GRACE,
        updated_at=now,
    )


def started_row(e: Event, now: datetime) -> dict[str, Any]:
    p = e.payload
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        workflow_name=p["workflowName"],
        status=RunStatus.RUNNING,
        step_index=int(p.get("fromStep", 0)),  # a rerun starts at its step
        attempt=1,
        version=e.version,
        fingerprint=p["definitionFingerprint"],
        definition_version=int(p.get("definitionVersion", 1)),
        idempotency_key=p.get("idempotencyKey"),
        trigger_event_type=p["triggerEventType"],
        trigger_event_ref=p["triggerEventRef"],
        subject_id=(p["triggerEventRef"] or {}).get("aggregateId"),
        concurrency_key=p.get("concurrencyKey"),
        priority=p.get("priority"),
        parent_run_id=p.get("parentRunId"),
        rate_key=control_key(p),
        started_position=e.position,
        results={},
        error=None,
        reason=None,
        lease_token=None,
        lease_until=now + START_GRACE,
        started_at=now,
        updated_at=now,
    )


def control_key(p: dict[str, Any]) -> str | None:
    """The key a control keeps the run under (the `rate_key` column): its
    rate key, batch key or singleton key (a workflow has at most one of them)."""
    for name in ("rateKey", "batchKey", "singletonKey"):
        if p.get(name) is not None:
            return str(p[name])
    return None


def migrated_values(e: Event, now: datetime) -> dict[str, Any]:
    """A run moved to another definition (and, by a map, another step)."""
    p = e.payload
    return dict(
        version=e.version,
        definition_version=int(p["to"]),
        fingerprint=p["definitionFingerprint"],
        step_index=int(p["toStep"]),
        updated_at=now,
    )


def queued_row(e: Event, now: datetime) -> dict[str, Any]:
    """A run over its concurrency limit, or of a paused workflow: a row, no
    lease, not started."""
    row = started_row(e, now)
    row.update(status=RunStatus.QUEUED, lease_until=None)
    if e.payload.get("startAt"):  # throttled or debounced: when it plans to start
        row["started_at"] = datetime.fromisoformat(e.payload["startAt"])
    if e.payload.get("paused"):
        row["paused_by"] = "workflow"
    return row


def skipped_row(e: Event, now: datetime) -> dict[str, Any]:
    """A run that never started (run-skipped): settled at once as skipped,
    with its trigger and why (`reason`)."""
    p = e.payload
    ref = p["trigger"]["ref"]
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        workflow_name=p["workflowName"],
        status=RunStatus.SKIPPED,
        step_index=0,
        attempt=0,
        version=e.version,
        fingerprint="",
        definition_version=int(p.get("version") or 1),
        idempotency_key=p.get("key"),
        trigger_event_type=p["trigger"]["type"],
        trigger_event_ref=ref,
        subject_id=(ref or {}).get("aggregateId"),
        started_position=e.position,
        results={},
        reason=p.get("reason"),
        started_at=now,
        updated_at=now,
    )


def moved_start_values(e: Event, now: datetime) -> dict[str, Any]:
    """A queued run's start moved (run-debounced: to its new trigger too)."""
    p = e.payload
    values: dict[str, Any] = dict(
        version=e.version, started_at=datetime.fromisoformat(p["startAt"]), updated_at=now
    )
    if e.type == ev.RUN_DEBOUNCED:
        values.update(
            trigger_event_type=p["triggerEventType"],
            trigger_event_ref=p["triggerEventRef"],
            subject_id=(p["triggerEventRef"] or {}).get("aggregateId"),
        )
    return values


def paused_values(e: Event, now: datetime) -> dict[str, Any]:
    """A paused run takes no step: a running one loses its lease (its worker
    stops before its next commit), a queued one is not started."""
    return dict(
        version=e.version,
        paused_by=e.payload.get("by", "run"),
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )


def unpaused_values(e: Event, now: datetime) -> dict[str, Any]:
    """Free to go on: a running run may be leased again at once."""
    return dict(version=e.version, paused_by=None, lease_until=now, updated_at=now)


def unstarted_row(e: Event, now: datetime) -> dict[str, Any]:
    """The row of a run that failed before it started (its trigger raised)."""
    row: dict[str, Any] = dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        workflow_name=e.payload.get("workflowName", "?"),
        step_index=int(e.payload.get("stepIndex", 0)),
        attempt=1,
        fingerprint="",
        started_position=e.position,
        results={},
        started_at=now,
    )
    row.update(settled_values(e, now))
    return row


def settled_values(e: Event, now: datetime) -> dict[str, Any]:
    status = {
        ev.RUN_COMPLETED: RunStatus.COMPLETED,
        ev.RUN_FAILED: RunStatus.FAILED,
        ev.RUN_CANCELLED: RunStatus.CANCELLED,
    }[e.type]
    values: dict[str, Any] = dict(
        status=status,
        version=e.version,
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )
    if e.type == ev.RUN_FAILED:
        values.update(error=e.payload.get("error"), reason=e.payload.get("reason"))
    elif e.type == ev.RUN_CANCELLED and e.payload.get("reason"):
        values["reason"] = str(e.payload["reason"])[:100]  # e.g. cancelled_by_event
    if e.type != ev.RUN_COMPLETED and "stepIndex" in e.payload:
        values["step_index"] = int(e.payload["stepIndex"])
    return values
