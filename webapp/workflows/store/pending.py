"""The pending rows of suspended steps: waking them when their event comes
(`wake_matching`, `wake`: the row is made due now and its wake-up signalled
after commit) and the look-back for an event that came before the wait.

A row waiting for an event (a wait, a cancel-on) is written with its
look-back owed (`lookback_due`). The look-back that cannot miss an event
clears it (`look_back`): on SQLite the one inside the transaction that
registers the wait (one writer at a time: nothing commits between it and the
commit), on PostgreSQL the one after that commit (an event committing
meanwhile is seen by it, or sees the row). Should the process die, or a
backup be taken, in between, the minute sweep does the owed look-back
(`owed`, `look_back_owed`)."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection, select, text, update

from webapp.core import clock, db
from webapp.eventstore import Event, read_all
from webapp.workflows.definition import match as matchmod
from webapp.workflows.store import wake_signal
from webapp.workflows.store.tables import SLOT_WAIT, workflow_run_pending, workflow_runs

log = logging.getLogger("webapp.workflows")

LOOKBACK_PAGE = 500


def lookback(
    conn: Connection, tenant_id: str, event_type: str, after: int, expr: Any
) -> Event | None:
    """The first event of `event_type` after position `after` matching `expr`."""
    while True:
        page = read_all(conn, after, [event_type], limit=LOOKBACK_PAGE, tenant_id=tenant_id)
        for e in page:
            try:
                if matchmod.evaluate(expr, e.payload):
                    return e
            except matchmod.MatchError:
                return None
        if len(page) < LOOKBACK_PAGE:
            return None
        after = page[-1].position


def look_back(
    conn: Connection,
    tenant_id: str,
    run_id: str,
    step_index: int,
    event_type: str,
    after: int,
    expr: Any,
    *,
    complete: bool,
) -> bool:
    """Wake this waiting row with the first event of `event_type` after
    `after` that matches `expr` (True when woken). `complete`: no event this
    look-back misses can miss the row (see the module's docstring), so the
    row's look-back is no longer owed (nor is a woken row's: `wake`)."""
    found = lookback(conn, tenant_id, event_type, after, expr)
    woken = found is not None and wake(conn, tenant_id, run_id, step_index, found)
    if complete:
        conn.execute(
            update(workflow_run_pending)
            .where(_row(tenant_id, run_id, step_index))
            .where(workflow_run_pending.c.lookback_due.is_(True))
            .values(lookback_due=None)
        )
    return woken


def look_back_committed(
    tenant_id: str, run_id: str, step_index: int, event_type: str, after: int, expr: Any
) -> bool:
    """The look-back once the wait has committed (PostgreSQL), in a
    transaction of its own. Its commit need not wait for the disk: lost in a
    crash, it only leaves the look-back owed, and the sweep does it again."""
    with db.transaction() as conn:
        if not db.is_sqlite(conn):
            conn.execute(text("SET LOCAL synchronous_commit TO OFF"))
        return look_back(
            conn, tenant_id, run_id, step_index, event_type, after, expr, complete=True
        )


def owed(conn: Connection, tenant_id: str, limit: int = LOOKBACK_PAGE) -> list[Any]:
    """Waiting rows of a tenant whose look-back is still owed."""
    c = workflow_run_pending.c
    return list(
        conn.execute(
            select(c.run_id, c.step_index, c.wait_event_type, c.after_position, c.match_expr)
            .where(c.tenant_id == tenant_id, c.lookback_due.is_(True))
            .limit(limit)
        )
    )


def look_back_owed(tenant_id: str) -> int:
    """The sweep's net: the look-back of every row of the tenant that still
    owes one (its process died, or a backup was taken, before it ran); each
    row in a transaction of its own. Returns the rows woken."""
    with db.reading() as conn:
        rows = owed(conn, tenant_id)
    woken = 0
    for r in rows:
        with db.transaction() as conn:
            woken += look_back(
                conn,
                tenant_id,
                r.run_id,
                r.step_index,
                r.wait_event_type,
                int(r.after_position or 0),
                r.match_expr,
                complete=True,
            )
    if woken:
        log.warning("owed look-backs woke waiting runs", extra={"count": woken})
    return woken


def _row(tenant_id: str, run_id: str, step_index: int) -> Any:
    """The pending row of this run's step (or control, below step 0)."""
    c = workflow_run_pending.c
    return (c.tenant_id == tenant_id) & (c.run_id == run_id) & (c.step_index == step_index)


def wake(conn: Connection, tenant_id: str, run_id: str, step_index: int, e: Event) -> bool:
    """Point a waiting pending row at the event it awaited and make it due now
    (signalled after commit). The first matching event wins; False when the
    row was gone or already woken."""
    now = clock.now()
    woken = bool(
        conn.execute(
            update(workflow_run_pending)
            .where(_row(tenant_id, run_id, step_index))
            .where(workflow_run_pending.c.trigger_event_ref.is_(None))
            .values(
                trigger_event_type=e.type, trigger_event_ref=e.ref, wake_at=now, lookback_due=None
            )
        ).rowcount
    )
    if woken:
        wake_signal.signal(conn, tenant_id, run_id, step_index, now)
    return woken


def wake_matching(conn: Connection, event: Event, workflow_name: str | None = None) -> int:
    """Wake the rows waiting (not yet woken) for this event's type in its
    tenant, of one workflow or of all, whose match expression it meets.
    A row whose expression cannot be evaluated is logged and skipped; it never
    blocks the others. Returns the rows woken."""
    q = select(workflow_run_pending).where(
        workflow_run_pending.c.tenant_id == event.tenant_id,
        workflow_run_pending.c.wait_event_type == event.type,
        workflow_run_pending.c.trigger_event_ref.is_(None),
    )
    if workflow_name is not None:
        q = q.where(workflow_run_pending.c.workflow_name == workflow_name)
    return sum(
        wake(conn, row.tenant_id, row.run_id, row.step_index, event)
        for row in conn.execute(q).all()
        if _matches(row, event)
    )


def _matches(row: Any, event: Event) -> bool:
    if row.after_position is not None and event.position <= row.after_position:
        return False  # from before the run's trigger, or one the run consumed already
    try:
        return matchmod.evaluate(row.match_expr, event.payload)
    except Exception as exc:
        log.error(
            "workflow wake-up skipped a pending row with an unevaluable match expression",
            extra={
                "run_id": row.run_id,
                "step_index": row.step_index,
                "event_type": event.type,
                "error_class": type(exc).__name__,
            },
        )
        return False


def hold(conn: Connection, tenant_id: str, run_id: str, step_index: int) -> None:
    """A due row whose run (`slot="active"`) found no free slot to resume:
    kept, not due, until a refill of its key releases it."""
    conn.execute(
        update(workflow_run_pending)
        .where(_row(tenant_id, run_id, step_index))
        .values(wake_at=SLOT_WAIT)
    )


def _held_of(key: tuple[str, str, str]) -> Any:
    p, r = workflow_run_pending.c, workflow_runs.c
    return (
        select(p.tenant_id, p.run_id, p.step_index)
        .join(workflow_runs, (r.tenant_id == p.tenant_id) & (r.run_id == p.run_id))
        .where(
            p.tenant_id == key[0],
            p.wake_at == SLOT_WAIT,
            r.workflow_name == key[1],
            r.concurrency_key == key[2],
        )
    )


def release_held(conn: Connection, key: tuple[str, str, str], n: int) -> int:
    """Make up to `n` rows of the key that wait for a slot due now, oldest
    run first (their resume takes the slot, or waits again): how many."""
    q = _held_of(key).order_by(workflow_runs.c.started_position).limit(n)
    now = clock.now()
    found = conn.execute(q).all()
    for tenant_id, run_id, step_index in found:
        conn.execute(
            update(workflow_run_pending)
            .where(_row(tenant_id, run_id, step_index))
            .values(wake_at=now)
        )
        wake_signal.signal(conn, tenant_id, run_id, step_index, now)
    return len(found)


def held_keys(conn: Connection, tenant_id: str) -> set[tuple[str, str, str]]:
    """Keys with runs waiting for a slot to resume (the sweep refills them)."""
    p, r = workflow_run_pending.c, workflow_runs.c
    q = (
        select(r.tenant_id, r.workflow_name, r.concurrency_key)
        .select_from(workflow_run_pending)
        .join(workflow_runs, (r.tenant_id == p.tenant_id) & (r.run_id == p.run_id))
        .where(p.tenant_id == tenant_id, p.wake_at == SLOT_WAIT)
        .distinct()
    )
    return {(t, w, k) for t, w, k in conn.execute(q)}
