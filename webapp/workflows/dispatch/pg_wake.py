"""Waking a worker in-process on PostgreSQL: LISTEN/NOTIFY, no Redis hop
(`WORKFLOW_WAKE=notify`; by default wake-ups go through Redis, `signals`).

The transaction that makes a step due now (an awaited event, a signal or an
update, a child settling: every `wake_signal.signal` whose time has come)
sends one `NOTIFY webapp_wf_resume` with its "tenant|run|step" requests just
before it commits (`on_wake_in_transaction`). PostgreSQL delivers it with the
commit, and only if it commits. The after-commit push onto the Redis resume
list is then skipped.

A thread in every worker (`start_thread`) LISTENs on a connection of its own
(`Config.listen_url`: `DATABASE_DIRECT_URL` when `DATABASE_URL` goes through
a transaction-pooling PgBouncer, which cannot carry a LISTEN) and hands the
requests to the claim the Redis resume loop uses (`resume_loop.handle`).
Every listener receives every notification; each handles the runs it owns:
the listeners' sessions (application_name `webapp-wf-listen`, looked up once
a second) in backend pid order, a run owned by crc32(run id) modulo their
number.

Nothing here is the truth. A publisher sends no NOTIFY while it sees no
listener (no worker runs, `WORKFLOW_WAKE=redis`, SQLite), and the Redis path
runs as before. A notification lost (its listener died, or the set of
listeners changed, between a publisher's look and the commit) leaves a due
row: a listener that connects, or that sees the set of listeners change,
drains every tenant's due rows, and the minute sweep remains the net.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from datetime import datetime
from typing import Any

import psycopg
from flask import Flask
from sqlalchemy import Connection, text

from webapp.core import clock, db
from webapp.jobs import has_sink
from webapp.workflows import host
from webapp.workflows.dispatch import resume_loop, signals
from webapp.workflows.engine import transient
from webapp.workflows.store import wake_signal

log = logging.getLogger("webapp.workflows")

CHANNEL = "webapp_wf_resume"
APP_NAME = "webapp-wf-listen"
LOOK_EVERY_S = 1.0  # how often a publisher looks for listeners, a listener for the others
BLOCK_S = 1.0  # longest wait for a notification
PAYLOAD_MAX = 7000  # bytes of one NOTIFY payload (PostgreSQL's limit is 8000)

# The listeners' sessions, oldest pid first (our own constant, never input).
LISTENERS_SQL = (
    f"SELECT pid FROM pg_stat_activity WHERE application_name = '{APP_NAME}'"
    " AND datname = current_database() ORDER BY pid"
)
_LISTENERS = text(LISTENERS_SQL)
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")

_listen_url: str | None = None
_seen = {"until": 0.0, "alive": False}  # a publisher's last look for listeners


def configure(listen_url: str | None) -> None:
    """The database a worker's listener connects to, as a SQLAlchemy URL
    (None: no in-process wake-up in this process)."""
    global _listen_url
    _listen_url = None if listen_url is None else libpq_url(listen_url)
    _seen["until"] = 0.0


def libpq_url(url: str) -> str:
    """`postgresql+psycopg://...` as the driver's own `postgresql://...`."""
    scheme, rest = url.split("://", 1)
    return f"{scheme.split('+', 1)[0]}://{rest}"


def install() -> None:
    """Send the wake-ups of a transaction with its commit (the app factory does it)."""
    wake_signal.listen_in_transaction(on_wake_in_transaction)


def on_wake_in_transaction(
    conn: Connection, tenant_id: str, run_id: str, step_index: int, at: datetime
) -> bool:
    """A step of `conn`'s transaction is due at `at`: True when its commit
    will wake a listener (the caller then signals nothing after commit)."""
    if (
        _listen_url is None
        or step_index < 0  # a run's control: a drain job claims it
        or at > clock.now()  # later: the timer's
        or db.current_transaction() is not conn  # NOTIFY needs the commit to carry it
        or has_sink()  # the test harness runs the jobs itself
        or not _listener_seen(conn)
    ):
        return False
    requests: list[str] = db.tx_scope(conn).setdefault("pg_wake", [])
    if not requests:
        db.before_commit(conn, lambda: _notify(conn, requests))
    requests.append(signals.member(tenant_id, run_id, step_index))
    return True


def _listener_seen(conn: Connection) -> bool:
    now = time.monotonic()
    if now >= _seen["until"]:
        _seen["alive"] = conn.execute(_LISTENERS).first() is not None
        _seen["until"] = now + LOOK_EVERY_S
    return bool(_seen["alive"])


def _notify(conn: Connection, requests: list[str]) -> None:
    """One NOTIFY per payload of up to PAYLOAD_MAX bytes, lines of requests."""
    chunk: list[str] = []
    size = 0
    for r in requests:
        if chunk and size + len(r) + 1 > PAYLOAD_MAX:
            conn.execute(_NOTIFY, {"channel": CHANNEL, "payload": "\n".join(chunk)})
            chunk, size = [], 0
        chunk.append(r)
        size += len(r) + 1
    conn.execute(_NOTIFY, {"channel": CHANNEL, "payload": "\n".join(chunk)})


def owner(run_id: str, listeners: list[int]) -> int:
    """The pid of the listener that handles this run's requests."""
    return listeners[zlib.crc32(run_id.encode()) % len(listeners)]


def mine(payloads: list[str], me: int, listeners: list[int]) -> list[str]:
    """The requests of these payloads that this listener (`me`) handles."""
    requests = [line for p in payloads for line in p.split("\n") if line]
    if me not in listeners:  # not seen yet: take them all (a claim happens once)
        return requests
    return [r for r in requests if owner(r.rsplit("|", 2)[1], listeners) == me]


def _drain_all() -> None:
    """Every tenant with due rows gets a drain (what a lost notification left)."""
    with db.reading() as conn:
        tenants = conn.execute(
            text("SELECT DISTINCT tenant_id FROM workflow_run_pending WHERE wake_at <= :now"),
            {"now": clock.now()},
        ).scalars()
        for tenant_id in list(tenants):
            signals.request_drain(tenant_id)


def listen(stop: threading.Event, url: str) -> None:
    """Connect, LISTEN, catch up, and handle notifications until `stop` or
    the connection fails (the caller connects again)."""
    with psycopg.connect(url, autocommit=True, application_name=APP_NAME) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        me = conn.info.backend_pid
        listeners: list[int] = []
        look_at = 0.0
        while not stop.is_set():
            host.hooks.on_loop_turn("listen")
            if time.monotonic() >= look_at:
                found = [int(r[0]) for r in conn.execute(LISTENERS_SQL)]
                if found != listeners:  # joined, or one left: its requests may be lost
                    listeners = found
                    _drain_all()
                look_at = time.monotonic() + LOOK_EVERY_S
            payloads = [n.payload for n in conn.notifies(timeout=BLOCK_S, stop_after=1)]
            requests = mine(payloads, me, listeners)
            if requests:
                _handle(requests)


def _handle(requests: list[str]) -> None:
    """Claim and continue; a batch that fails for another reason than an
    outage is logged and left to the sweep (an outage: connect again)."""
    try:
        resume_loop.handle(requests)
    except Exception as exc:
        if transient.is_infrastructure(exc):
            raise
        log.exception("workflow listener: batch failed; the sweep will retry its rows")


def loop(stop: threading.Event, url: str) -> None:
    """`listen` until `stop`, connecting again after a failure (waiting up to
    5 s); a request lost meanwhile is a due row that a drain finds."""
    wait_s = 0.5
    while not stop.is_set():
        try:
            listen(stop, url)
        except Exception as exc:  # never die of an outage (or of one bad batch)
            log.warning(
                "workflow listener: connection lost", extra={"error_class": type(exc).__name__}
            )
            stop.wait(wait_s)
            wait_s = min(wait_s * 2, 5.0)
        else:
            wait_s = 0.5


def start_thread(app: Flask, stop: threading.Event) -> threading.Thread | None:
    """The listener of this worker, in a daemon thread with an app context
    (None when this process wakes nothing in-process)."""
    url = _listen_url
    if url is None:
        return None

    def run() -> Any:
        with app.app_context():
            loop(stop, url)

    thread = threading.Thread(target=run, name="workflow-listener", daemon=True)
    thread.start()
    return thread
