"""Talking to one run from application code: send it a signal, read its
state, send it an update and get its answer, or start it by key and send the
update in one call. The facade exports these (`wf.signal`, `wf.state`,
`wf.update`, `wf.update_with_start`); the CLI and an HTTP API call them.
What is stored and decided lives in `store.messages`; what a live page
reads of a run's stream (`run_head`, `stream_after`, `stream_versions`) is here too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from webapp.core import db
from webapp.eventstore import ANY, NewEvent, StreamId, append, read_stream
from webapp.workflows.definition import catalog
from webapp.workflows.definition.model import STATE
from webapp.workflows.store import messages, progress, queries, runs
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.messages import NOT_ACCEPTING, UpdateResult
from webapp.workflows.store.tables import workflow_runs
from webapp.workflows.triggers.start import start_run

DEFAULT_TIMEOUT = 10.0  # seconds an update's caller waits for its answer
START_REQUESTED = "workflow.start-requested"  # the trigger of a run update-with-start starts
START_AGGREGATE = "workflow-start"


def signal(
    run_id: str, name: str, payload: Any = None, key: str | None = None, tenant: str = "default"
) -> str:
    """Deliver signal `name` with `payload` to the run: kept in order until a
    `wait_for_signal` of that name takes it. Exactly once per `key`: a second
    signal with the same key returns the first one's id and writes nothing.
    Returns the signal's id. Raises RunNotFound, RunNotOpen (the run has
    settled), MessageError (a bad name, payload or key)."""
    return messages.signal(tenant, run_id, name, payload, key)


def state(run_id: str, tenant: str = "default") -> dict[str, Any]:
    """The run's named state as its steps last committed it (`set_state`):
    a dict, empty when none was set (or its subject was erased). RunNotFound."""
    rid = messages.check_run_id(run_id)
    with db.reading() as conn:
        row = runs.read_run(conn, tenant, rid)
    if row is None:
        raise messages.RunNotFound(f"no run {run_id} in tenant {tenant!r}")
    return dict((row.results or {}).get(STATE) or {})


def update(
    run_id: str,
    name: str,
    payload: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    key: str | None = None,
    tenant: str = "default",
) -> UpdateResult:
    """Send update `name` to the run and wait up to `timeout` seconds for its
    answer: accepted (`.value`), rejected (`.reason`), not-accepting (the run
    does not wait for it: nothing was written) or timed-out (the run may
    still answer it; the same `key` asks again without a second update).
    Raises RunNotFound, RunNotOpen, MessageError."""
    update_id = messages.request_update(tenant, run_id, name, payload, key)
    if update_id is None:
        return UpdateResult(NOT_ACCEPTING)
    return messages.await_answer(tenant, str(run_id), update_id, timeout)


def update_with_start(
    workflow: str,
    key: str,
    name: str,
    payload: Any = None,
    input: Any = None,
    subject: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    update_key: str | None = None,
    tenant: str = "default",
) -> tuple[str, UpdateResult]:
    """Start a run of `workflow` by `key` unless one is open, and send it
    update `name` in the same transaction: the run answers it at its
    `wait_for_update`. Two calls racing with one key start one run. The new
    run's trigger is a `workflow.start-requested` event with `input` (its
    aggregate: `subject`, whose erasure erases the run's results). Returns
    (run id, answer); an open run not going to wait for the update answers
    not-accepting. LookupError: no such workflow."""
    wf = catalog.get(workflow)
    if wf is None:
        raise LookupError(f"workflow {workflow!r} is not registered")
    if wf.slot_limit is not None or wf.rates:
        # Their starts are decided just before commit: no run row to deliver to yet.
        raise ValueError(
            f"update_with_start: workflow {workflow!r} has a concurrency or rate control"
        )
    messages.check(name, payload, update_key)
    if not isinstance(key, str) or not key:
        raise messages.MessageError("update_with_start needs a key (text)")
    run_id = ev.run_id_for(wf.name, key)
    for _ in range(3):  # a start lost to a racing one: deliver to the winner's run
        with db.transaction() as conn:
            row = runs.lock_run(conn, tenant, run_id)
            if row is None or row.status not in ev.OPEN:
                with conn.begin_nested() as started_here:
                    trigger = append(
                        conn,
                        StreamId(tenant, START_AGGREGATE, subject or run_id),
                        [NewEvent(START_REQUESTED, {"workflowName": wf.name, "input": input})],
                        ANY,
                    )[0]
                    if start_run(conn, wf, tenant, trigger, key) != run_id:
                        started_here.rollback()
                        continue
                row = runs.lock_run(conn, tenant, run_id)
            update_id = messages.request(conn, row, name, payload, update_key, ahead=True)
        if update_id is None:
            return run_id, UpdateResult(NOT_ACCEPTING)
        return run_id, messages.await_answer(tenant, run_id, update_id, timeout)
    raise RuntimeError(f"update_with_start: the run of key {key!r} kept changing")


# -- following a run (live pages) -----------------------------------------------


@dataclass(frozen=True)
class RunHead:
    """What a live page checks of a run: whose it is and where its stream is."""

    tenant_id: str
    run_id: str
    subject_id: str | None
    status: str
    version: int

    @property
    def settled(self) -> bool:
        return self.status not in ev.OPEN


@dataclass(frozen=True)
class StreamItem:
    """One event of a run's stream, in order (`version`): a progress entry
    (`progress` true, with its name and data) or any other run event."""

    version: int
    type: str
    progress: bool
    name: str | None = None
    data: Any = None


def run_head(run_id: str) -> RunHead | None:
    """The run's head (any tenant), or None: no such run."""
    try:
        rid = messages.check_run_id(run_id)
    except messages.RunNotFound:
        return None
    with db.reading() as conn:
        row = queries.find_run(conn, rid)
    if row is None:
        return None
    return RunHead(row.tenant_id, row.run_id, row.subject_id, str(row.status), int(row.version))


def stream_after(
    tenant_id: str, run_id: str, after_version: int
) -> tuple[RunHead, list[StreamItem]]:
    """The run's head and its stream's events after `after_version`, the
    progress entries with their data, read together."""
    with db.reading() as conn:
        row = runs.read_run(conn, tenant_id, run_id)
        events = read_stream(conn, runs.stream(tenant_id, run_id), after_version)
        data = {p.version: p for p in progress.entries(conn, tenant_id, run_id, after_version)}
    head = RunHead(row.tenant_id, row.run_id, row.subject_id, str(row.status), int(row.version))
    items = []
    for e in events:
        p = data.get(e.version)
        if e.type == progress.PROGRESS:
            items.append(StreamItem(e.version, e.type, True, e.payload.get("name"), p and p.data))
        else:
            items.append(StreamItem(e.version, e.type, False))
    return head, items


def stream_versions(keys: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The stream version of each of these (tenant, run), one query."""
    if not keys:
        return {}
    c = workflow_runs.c
    q = select(c.tenant_id, c.run_id, c.version).where(
        c.run_id.in_(sorted({rid for _, rid in keys}))
    )
    wanted = set(keys)
    with db.reading() as conn:
        return {(t, r): int(v) for t, r, v in conn.execute(q) if (t, r) in wanted}
