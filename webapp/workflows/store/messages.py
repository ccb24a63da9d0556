"""Messages to one run: signals and updates, stored and decided here.

A message is a row of `workflow_run_messages` (its payload, its status, an
update's answer) and an event on the run's own stream, written in one
transaction under the run's row lock; Redis only wakes the run. The payload
lives in the row only, so erasing the run's subject erases it (`forget`).

- A **signal** (`signal`) is kept until a `wait_for_signal` of its name takes
  it (`take_signal`), oldest first: one sent before the wait is taken at once,
  one sent during it wakes the run, which takes the step again and takes the
  signal there. With an idempotency key a signal is stored once per run.
- An **update** (`request_update`) is only stored while the run waits for it
  (it stands at a `wait_for_update` of that name; with `update_with_start`,
  while it will reach one): else it is answered "not-accepting" and nothing
  is written. The run judges it there with its handler (`judge`, outside any
  transaction) and records the answer (`answer`): accepted (the wait ends
  with the handler's value; other updates of the name still waiting are
  answered "not-accepting"), or rejected (the run keeps waiting). The caller
  reads the answer from the row (`await_answer`).

A run settled, or none with that id, is refused: `RunNotOpen`, `RunNotFound`.

One concept: a message to one run, from its sending through what a wait
takes to the answer the caller reads and its erasure; kept together because
each step decides on the rows and events the one before it wrote.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select, update

from webapp.core import clock, db
from webapp.eventstore import Event, NewEvent, append, register_inline
from webapp.workflows.definition import catalog
from webapp.workflows.definition.messages import (
    MAX_NAME,
    Rejected,
    UpdateHandler,
    WaitForSignal,
    WaitForUpdate,
)
from webapp.workflows.definition.model import Step
from webapp.workflows.store import pending, runs
from webapp.workflows.store.run_events import OPEN, RunStatus
from webapp.workflows.store.tables import workflow_run_messages, workflow_runs

SIGNAL_RECEIVED = "workflow.signal-received"
UPDATE_REQUESTED = "workflow.update-requested"
UPDATE_ANSWERED = "workflow.update-answered"
EVENTS = (SIGNAL_RECEIVED, UPDATE_REQUESTED, UPDATE_ANSWERED)

SIGNAL, UPDATE = "signal", "update"
SENT, TAKEN = "sent", "taken"
REQUESTED, ACCEPTED, REJECTED = "requested", "accepted", "rejected"
NOT_ACCEPTING, TIMED_OUT = "not-accepting", "timed-out"

MAX_PAYLOAD_BYTES = 64 * 1024
MAX_REASON = 300

_m = workflow_run_messages.c


class RunNotFound(LookupError):
    """No run with this id (in this tenant)."""


class RunNotOpen(Exception):  # noqa: N818 - reads as the state it names
    """The run has settled (completed, failed, cancelled, skipped): it takes no message."""


class MessageError(ValueError):
    """A message's name, payload or key is not acceptable (the text says why)."""


@dataclass(frozen=True)
class UpdateResult:
    """An update's answer: `outcome` is accepted (with `value`), rejected
    (with `reason`), not-accepting (the run does not wait for it; nothing was
    written) or timed-out (no answer within the caller's timeout; the run may
    still answer it: ask again with the same key)."""

    outcome: str
    value: Any = None
    reason: str | None = None
    update_id: str | None = None

    @property
    def accepted(self) -> bool:
        return self.outcome == ACCEPTED


# -- input -------------------------------------------------------------------


def check(name: Any, payload: Any, key: Any) -> None:
    """A message's name (text, 1-200), payload (JSON, at most 64 KiB) and key
    (None or text, 1-200); MessageError says which is wrong."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise MessageError(f"the name must be text of 1 to {MAX_NAME} characters")
    if key is not None and (not isinstance(key, str) or not key or len(key) > MAX_NAME):
        raise MessageError(f"the key must be text of 1 to {MAX_NAME} characters")
    try:
        size = len(json.dumps(payload))
    except (TypeError, ValueError):
        raise MessageError("the payload must be JSON-serialisable") from None
    if size > MAX_PAYLOAD_BYTES:
        raise MessageError(f"the payload must be at most {MAX_PAYLOAD_BYTES} bytes of JSON")


def check_run_id(run_id: Any) -> str:
    try:
        return str(uuid.UUID(str(run_id)))
    except (ValueError, TypeError, AttributeError):
        raise RunNotFound(f"no run {run_id!r}") from None


# -- where a run waits -------------------------------------------------------


def _waits_for(step: Step, kind: str, name: str) -> bool:
    if kind == SIGNAL:
        return isinstance(step, WaitForSignal) and step.signal == name
    return isinstance(step, WaitForUpdate) and step.update == name


def waiting_at(row: Any, kind: str, name: str, ahead: bool = False) -> int | None:
    """The step index where the open run waits for this message now (it is
    suspended there, or running it), else None. `ahead`: also a wait it has
    not reached yet (update-with-start)."""
    if row.status not in OPEN:
        return None
    wf = catalog.get(row.workflow_name, row.definition_version)
    if wf is None or row.step_index >= len(wf.steps):
        return None
    if _waits_for(wf.steps[row.step_index], kind, name):
        return int(row.step_index)
    if ahead and any(_waits_for(s, kind, name) for s in wf.steps[row.step_index :]):
        return int(row.step_index)
    return None


# -- sending -----------------------------------------------------------------


def _locked_run(conn: Connection, tenant_id: str, run_id: str) -> Any:
    row = runs.lock_run(conn, tenant_id, run_id)
    if row is None:
        raise RunNotFound(f"no run {run_id} in tenant {tenant_id!r}")
    return row


def _by_key(conn: Connection, row: Any, kind: str, key: str | None) -> Any:
    if key is None:
        return None
    q = select(workflow_run_messages).where(
        _m.tenant_id == row.tenant_id,
        _m.run_id == row.run_id,
        _m.kind == kind,
        _m.idempotency_key == key,
    )
    return conn.execute(q).first()


def _store(
    conn: Connection, row: Any, kind: str, name: str, payload: Any, key: str | None
) -> tuple[str, Event]:
    """The message's row and its event on the run's stream (at the locked row's version)."""
    mid = str(uuid.uuid4())
    seq = conn.execute(
        select(func.coalesce(func.max(_m.seq), 0)).where(
            _m.tenant_id == row.tenant_id, _m.run_id == row.run_id
        )
    ).scalar_one()
    status = SENT if kind == SIGNAL else REQUESTED
    conn.execute(
        workflow_run_messages.insert().values(
            tenant_id=row.tenant_id,
            run_id=row.run_id,
            message_id=mid,
            seq=int(seq) + 1,
            kind=kind,
            name=name,
            payload=payload,
            idempotency_key=key,
            status=status,
            sent_at=clock.now(),
        )
    )
    body: dict[str, Any] = {"name": name, "messageId": mid}
    if key is not None:
        body["key"] = key
    e = runs.append_run_event(
        conn, row, SIGNAL_RECEIVED if kind == SIGNAL else UPDATE_REQUESTED, body
    )
    return mid, e


def _wake(conn: Connection, row: Any, at: int | None, e: Event) -> None:
    """A run suspended at the wait: its pending row is due now (the claim
    sends it back to the step, which takes the message)."""
    if at is not None and row.status == RunStatus.SUSPENDED:
        pending.wake(conn, row.tenant_id, row.run_id, at, e)


def signal(tenant_id: str, run_id: str, name: str, payload: Any, key: str | None = None) -> str:
    """Store signal `name` for the run (waking it when it waits for it): the
    signal's id. With `key`, a second signal of the key is the first one (its
    id, nothing written). RunNotFound, RunNotOpen, MessageError."""
    check(name, payload, key)
    run_id = check_run_id(run_id)
    with db.transaction() as conn:
        row = _locked_run(conn, tenant_id, run_id)
        known = _by_key(conn, row, SIGNAL, key)
        if known is not None:
            return str(known.message_id)
        if row.status not in OPEN:
            raise RunNotOpen(f"run {run_id} is {row.status}: it takes no signal")
        mid, e = _store(conn, row, SIGNAL, name, payload, key)
        _wake(conn, row, waiting_at(row, SIGNAL, name), e)
    return mid


def request(
    conn: Connection, row: Any, name: str, payload: Any, key: str | None, ahead: bool = False
) -> str | None:
    """Store update `name` for the locked run `row` if it waits for it (see
    `waiting_at`): its id, or the id of the update of the same key; None:
    not accepting (nothing written). RunNotOpen for a settled run."""
    known = _by_key(conn, row, UPDATE, key)
    if known is not None:
        return str(known.message_id)
    if row.status not in OPEN:
        raise RunNotOpen(f"run {row.run_id} is {row.status}: it takes no update")
    at = waiting_at(row, UPDATE, name, ahead)
    if at is None:
        return None
    mid, e = _store(conn, row, UPDATE, name, payload, key)
    _wake(conn, row, at, e)
    return mid


def request_update(
    tenant_id: str, run_id: str, name: str, payload: Any, key: str | None = None
) -> str | None:
    """`request` in a transaction of its own."""
    check(name, payload, key)
    run_id = check_run_id(run_id)
    with db.transaction() as conn:
        return request(conn, _locked_run(conn, tenant_id, run_id), name, payload, key)


def await_answer(tenant_id: str, run_id: str, update_id: str, timeout: float) -> UpdateResult:
    """The update's answer once the run has given it, read from its row
    (every few milliseconds, at most every 100), or timed-out after `timeout`
    seconds."""
    deadline = time.monotonic() + max(0.0, timeout)
    delay = 0.002
    while True:
        with db.reading() as conn:
            msg = conn.execute(
                select(workflow_run_messages).where(
                    _m.tenant_id == tenant_id, _m.run_id == run_id, _m.message_id == update_id
                )
            ).first()
        if msg is not None and msg.status != REQUESTED:
            return _result(msg)
        left = deadline - time.monotonic()
        if left <= 0:
            return UpdateResult(TIMED_OUT, update_id=update_id)
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.1)


def _result(msg: Any) -> UpdateResult:
    answer = msg.answer or {}
    return UpdateResult(
        str(msg.status), answer.get("value"), answer.get("reason"), str(msg.message_id)
    )


# -- at the wait ---------------------------------------------------------------


def take_signal(conn: Connection, row: Any, name: str, step_index: int) -> tuple[bool, Any]:
    """At a `wait_for_signal` (the run's row locked by its lease holder): take
    the oldest signal `name` not taken yet. (found, payload)."""
    msg = conn.execute(_oldest(row.tenant_id, row.run_id, SIGNAL, SENT, name)).first()
    if msg is None:
        return False, None
    conn.execute(
        update(workflow_run_messages)
        .where(_one(msg))
        .values(status=TAKEN, step_index=step_index, settled_at=clock.now())
    )
    return True, msg.payload


def waiting(conn: Connection, row: Any, kind: str, name: str) -> bool:
    """Whether a message `name` of the run waits to be taken or answered."""
    status = SENT if kind == SIGNAL else REQUESTED
    return conn.execute(_oldest(row.tenant_id, row.run_id, kind, status, name)).first() is not None


def next_update(conn: Connection, tenant_id: str, run_id: str, name: str) -> Any:
    """The oldest update `name` of the run still waiting for its answer."""
    return conn.execute(_oldest(tenant_id, run_id, UPDATE, REQUESTED, name)).first()


def judge(handler: UpdateHandler, results: Mapping[str, Any], payload: Any) -> tuple[str, Any]:
    """Run the update's handler: (accepted, its value) or (rejected, the
    reason). A handler that fails, or answers what JSON cannot hold, rejects."""
    try:
        value = handler(dict(results), payload)
        json.dumps(value)
    except Rejected as r:
        return REJECTED, str(r.reason)[:MAX_REASON]
    except (TypeError, ValueError) as exc:
        return REJECTED, f"the update's handler failed ({type(exc).__name__})"
    except Exception as exc:  # the handler's bug rejects the update, never the run
        return REJECTED, f"the update's handler failed ({type(exc).__name__})"
    return ACCEPTED, value


def answer(conn: Connection, row: Any, msg: Any, outcome: str, value: Any, step_index: int) -> bool:
    """Record the run's answer to update `msg` (the run's row locked by its
    lease holder): False when it was answered already. An acceptance ends the
    wait: the other updates of its name still waiting are not accepted."""
    body = {"value": value} if outcome == ACCEPTED else {"reason": value}
    now = clock.now()
    done = conn.execute(
        update(workflow_run_messages)
        .where(_one(msg), _m.status == REQUESTED)
        .values(status=outcome, answer=body, step_index=step_index, settled_at=now)
    ).rowcount
    if not done:
        return False
    answered = [(msg, outcome)]
    if outcome == ACCEPTED:
        for other in conn.execute(
            _oldest(row.tenant_id, row.run_id, UPDATE, REQUESTED, msg.name, None)
        ):
            conn.execute(
                update(workflow_run_messages)
                .where(_one(other))
                .values(status=NOT_ACCEPTING, step_index=step_index, settled_at=now)
            )
            answered.append((other, NOT_ACCEPTING))
    new = [
        NewEvent(
            UPDATE_ANSWERED,
            {"name": m.name, "messageId": m.message_id, "outcome": o, "stepIndex": step_index},
        )
        for m, o in answered
    ]
    append(conn, runs.stream(row.tenant_id, row.run_id), new, row.version)
    return True


def _oldest(
    tenant_id: str, run_id: str, kind: str, status: str, name: str, limit: int | None = 1
) -> Any:
    q = (
        select(workflow_run_messages)
        .where(
            _m.tenant_id == tenant_id,
            _m.run_id == run_id,
            _m.kind == kind,
            _m.name == name,
            _m.status == status,
        )
        .order_by(_m.seq)
    )
    return q.limit(limit) if limit else q


def _one(msg: Any) -> Any:
    return (
        (_m.tenant_id == msg.tenant_id)
        & (_m.run_id == msg.run_id)
        & (_m.message_id == msg.message_id)
    )


def of_run(conn: Connection, tenant_id: str, run_id: str) -> list[Any]:
    """The run's messages in the order they came (`flask workflows show`)."""
    q = select(workflow_run_messages).where(_m.tenant_id == tenant_id, _m.run_id == run_id)
    return list(conn.execute(q.order_by(_m.seq)))


# -- the run's row follows its stream; erasure ------------------------------------


def forget(conn: Connection, tenant_id: str, subject_id: str) -> None:
    """Erase the payloads and answers of the messages of every run of a subject."""
    of_subject = select(workflow_runs.c.run_id).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.subject_id == subject_id
    )
    conn.execute(
        update(workflow_run_messages)
        .where(_m.tenant_id == tenant_id, _m.run_id.in_(of_subject))
        .values(payload=None, answer=None)
    )


def _on_erased(conn: Connection, e: Event) -> None:
    forget(conn, e.tenant_id, e.aggregate_id)


ERASURE_EVENTS = ("user.erased",)


def register() -> None:
    for t in EVENTS:
        register_inline(t, runs.follow_stream)
    for t in ERASURE_EVENTS:
        register_inline(t, _on_erased)
