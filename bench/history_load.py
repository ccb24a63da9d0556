"""A production-like history for `bench.history`: N events already in the log.

The log is written in blocks of ten positions, oldest first, spread over the
last 30 days. Each block is:

1. the trigger of a workflow run (`history.order-placed` or
   `history.invoice-sent`, which the runs' trigger projections read);
2-5. that run's stream: run-started, step.waiting, step.resumed and
   run-completed (one in 50 failed: run-failed);
6. an awaited event (`bench.ping`, which `bench-await`'s wake-up projection
   reads; it matches no run of the bench);
7-10. four events of a person's account (`user.registered` first, which the
   e-mail verification workflow's trigger reads, then verifications, password
   and language changes, sign-outs everywhere: five blocks per person).

Every run of the history has its `workflow_runs` row, settled. The loader
writes rows straight into the tables (`INSERT ... SELECT` over
`generate_series` on PostgreSQL, `executemany` in large transactions on
SQLite), never through `publish()`, then moves the position counter (or
sequence) past them and refreshes the planner's statistics; `catch_up` then
moves every projection cursor to the head, as a production log's would be.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, text, update

import webapp.workflows as wf
from webapp.eventstore.tables import event_counter, events, projection_cursors
from webapp.workflows.store.tables import workflow_runs

BLOCK = 10
SPAN = timedelta(days=30)
ORDER = wf.workflow(
    "history-order", on="history.order-placed", steps=[wf.wait("ship", "PT1M"), wf.ret(1)]
)
INVOICE = wf.workflow(
    "history-invoice", on="history.invoice-sent", steps=[wf.wait("remind", "PT1M"), wf.ret(1)]
)
FLOWS = (ORDER, INVOICE)
RUN_TYPES = (
    "workflow.run-started",
    "workflow.step.waiting",
    "workflow.step.resumed",
    "workflow.run-completed",
)
USER_TYPES = (
    "user.email-verified",
    "user.password-changed",
    "user.language-changed",
    "user.sessions-revoked",
)


def register(app: Any) -> None:
    """The WORKFLOW_MODULES hook: every process of the bench knows the
    history's workflows (their trigger projections read the history)."""
    for flow in FLOWS:
        wf.register(flow)


def _uuid(prefix: str, n: int) -> str:
    """As PostgreSQL's md5(prefix || n)::uuid, so both loaders agree."""
    return str(uuid.UUID(hashlib.md5(f"{prefix}{n}".encode()).hexdigest()))


def load(conn: Connection, n_events: int, now: datetime | None = None) -> int:
    """Write the history (n_events rounded down to whole blocks) in the
    caller's transaction; returns the number of events written."""
    blocks = n_events // BLOCK
    if blocks == 0:
        return 0
    now = now or datetime.now(UTC)
    if conn.dialect.name == "postgresql":
        _load_postgresql(conn, blocks, now)
    else:
        _load_sqlite(conn, blocks, now)
    return blocks * BLOCK


_PG_EVENTS = """
INSERT INTO events (position, id, tenant_id, aggregate_type, aggregate_id, version,
                    type, payload, metadata, recorded_at)
SELECT p, md5('hist-' || p)::uuid::text, 'default',
  CASE WHEN k = 1 THEN 'history' WHEN k <= 5 THEN 'workflow-run'
       WHEN k = 6 THEN 'bench' ELSE 'user' END,
  CASE WHEN k = 1 THEN 'order-' || b WHEN k <= 5 THEN md5('run-' || b)::uuid::text
       WHEN k = 6 THEN 'ping-' || b ELSE 'user-' || (b / 5) END,
  CASE WHEN k = 1 OR k = 6 THEN 1 WHEN k <= 5 THEN k - 1 ELSE (b % 5) * 4 + k - 6 END,
  CASE WHEN k = 1 THEN CASE WHEN b % 2 = 0 THEN 'history.order-placed'
                            ELSE 'history.invoice-sent' END
       WHEN k = 5 AND b % 50 = 7 THEN 'workflow.run-failed'
       WHEN k <= 5 THEN (CAST(:run_types AS text[]))[k - 1]
       WHEN k = 6 THEN 'bench.ping'
       WHEN (b % 5) * 4 + k - 6 = 1 THEN 'user.registered'
       ELSE (CAST(:user_types AS text[]))[(k - 7) + 1] END,
  CASE WHEN k = 1 THEN json_build_object('i', b)
       WHEN k <= 5 THEN json_build_object('workflowName', (CAST(:names AS text[]))[b % 2 + 1], 'stepIndex', 0)
       WHEN k = 6 THEN json_build_object('i', -1 - b)
       ELSE json_build_object('userId', 'user-' || (b / 5)) END,
  '{"actor": null, "correlation_id": null, "causation_id": null}'::json,
  CAST(:now AS timestamptz) - CAST(:span AS interval) * (1 - p::float8 / :total)
FROM generate_series(0, :blocks - 1) AS b, generate_series(1, 10) AS k,
     LATERAL (SELECT b * 10 + k AS p) AS pos
"""

_PG_RUNS = """
INSERT INTO workflow_runs (tenant_id, run_id, workflow_name, status, step_index, attempt,
  version, fingerprint, definition_version, trigger_event_type, trigger_event_ref,
  started_position, results, error, started_at, updated_at, subject_id)
SELECT 'default', md5('run-' || b)::uuid::text, (CAST(:names AS text[]))[b % 2 + 1],
  CASE WHEN b % 50 = 7 THEN 'failed' ELSE 'completed' END, 1, 1, 4, (CAST(:fingerprints AS text[]))[b % 2 + 1],
  1, CASE WHEN b % 2 = 0 THEN 'history.order-placed' ELSE 'history.invoice-sent' END,
  json_build_object('eventId', md5('hist-' || (b * 10 + 1))::uuid::text,
                    'aggregateId', 'order-' || b, 'version', 1),
  b * 10 + 2, '{}'::json,
  CASE WHEN b % 50 = 7 THEN 'workflow step failed (RuntimeError)' END,
  CAST(:now AS timestamptz) - CAST(:span AS interval) * (1 - (b * 10 + 2)::float8 / :total),
  CAST(:now AS timestamptz) - CAST(:span AS interval) * (1 - (b * 10 + 5)::float8 / :total), 'order-' || b
FROM generate_series(0, :blocks - 1) AS b
"""


def _load_postgresql(conn: Connection, blocks: int, now: datetime) -> None:
    params = {
        "blocks": blocks,
        "total": blocks * BLOCK,
        "now": now,
        "span": SPAN,
        "run_types": list(RUN_TYPES),
        "user_types": list(USER_TYPES),
        "names": [f.name for f in FLOWS],
        "fingerprints": [f.fingerprint for f in FLOWS],
    }
    conn.execute(text(_PG_EVENTS), params)
    conn.execute(text(_PG_RUNS), params)
    conn.execute(
        text("SELECT setval('events_position_seq', :next, false)"), {"next": blocks * BLOCK + 1}
    )


def block_rows(b: int, total: int, now: datetime) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ten events of block b and its run's row (the SQLite loader)."""
    flow = FLOWS[b % 2]
    run_id = _uuid("run-", b)
    failed = b % 50 == 7
    at = [now - SPAN * (1 - (b * BLOCK + k) / total) for k in range(1, BLOCK + 1)]
    meta = {"actor": None, "correlation_id": None, "causation_id": None}
    out: list[dict[str, Any]] = []

    def add(k: int, aggregate: tuple[str, str], version: int, type_: str, payload: Any) -> None:
        p = b * BLOCK + k
        out.append(
            dict(
                position=p,
                id=_uuid("hist-", p),
                tenant_id="default",
                aggregate_type=aggregate[0],
                aggregate_id=aggregate[1],
                version=version,
                type=type_,
                payload=payload,
                metadata=meta,
                recorded_at=at[k - 1],
            )
        )

    trigger = flow.trigger.event_type  # type: ignore[union-attr]
    add(1, ("history", f"order-{b}"), 1, trigger, {"i": b})
    for k, type_ in enumerate(RUN_TYPES, start=2):
        if k == 5 and failed:
            type_ = "workflow.run-failed"
        add(k, ("workflow-run", run_id), k - 1, type_, {"workflowName": flow.name, "stepIndex": 0})
    add(6, ("bench", f"ping-{b}"), 1, "bench.ping", {"i": -1 - b})
    user = ("user", f"user-{b // 5}")
    for k in range(7, 11):
        version = (b % 5) * 4 + k - 6
        type_ = "user.registered" if version == 1 else USER_TYPES[k - 7]
        add(k, user, version, type_, {"userId": user[1]})
    run = dict(
        tenant_id="default",
        run_id=run_id,
        workflow_name=flow.name,
        status="failed" if failed else "completed",
        step_index=1,
        attempt=1,
        version=4,
        fingerprint=flow.fingerprint,
        definition_version=1,
        trigger_event_type=trigger,
        trigger_event_ref={"eventId": _uuid("hist-", b * BLOCK + 1), "aggregateId": f"order-{b}"}
        | {"version": 1},
        started_position=b * BLOCK + 2,
        results={},
        error="workflow step failed (RuntimeError)" if failed else None,
        started_at=at[1],
        updated_at=at[4],
        subject_id=f"order-{b}",
    )
    return out, run


def _load_sqlite(conn: Connection, blocks: int, now: datetime) -> None:
    total = blocks * BLOCK
    evs: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for b in range(blocks):
        block, run = block_rows(b, total, now)
        evs.extend(block)
        runs.append(run)
        if len(evs) >= 20_000:
            conn.execute(events.insert(), evs)
            conn.execute(workflow_runs.insert(), runs)
            evs, runs = [], []
    if evs:
        conn.execute(events.insert(), evs)
        conn.execute(workflow_runs.insert(), runs)
    conn.execute(update(event_counter).where(event_counter.c.id == 1).values(last_position=total))


def analyze(engine: Any) -> None:
    """PostgreSQL: what autovacuum keeps in a production database, statistics
    and the visibility map, and a checkpoint (history written long ago is on
    disk, not in the WAL the measurement would write out). SQLite: nothing,
    as in production (the product never runs ANALYZE there, so its planner
    goes without statistics)."""
    if engine.dialect.name == "sqlite":
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE events"))
        conn.execute(text("VACUUM ANALYZE workflow_runs"))
        conn.execute(text("CHECKPOINT"))


def catch_up(conn: Connection, head: int) -> None:
    """Every projection cursor at the head: a production log's projections
    have applied its history."""
    c = projection_cursors.c
    conn.execute(update(projection_cursors).where(c.position < head).values(position=head))
