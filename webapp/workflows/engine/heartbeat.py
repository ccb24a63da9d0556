"""Leases: who executes a running run. The claim (or advance) takes a lease
token with a short expiry; while the worker executes the run a heartbeat
thread renews it, and every progress commit renews it too. A worker that dies
stops renewing: within `LEASE` the lease has expired and the timer
(`webapp.workflows.dispatch.timer_loop`, in every worker) re-dispatches the run from its
last committed step."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import update

from webapp import clock, db
from webapp.workflows.store.tables import workflow_runs

log = logging.getLogger("webapp.workflows")

LEASE = timedelta(seconds=6)


def lease_until(now: datetime | None = None) -> datetime:
    return (now or clock.now()) + LEASE


def renew(tenant_id: str, held: Sequence[tuple[str, str]]) -> int:
    """Push the expiry of leases we hold ((run_id, token) pairs) one LEASE on."""
    if not held:
        return 0
    with db.transaction() as conn:
        return int(
            conn.execute(
                update(workflow_runs)
                .where(
                    workflow_runs.c.tenant_id == tenant_id,
                    workflow_runs.c.run_id.in_(sorted({r for r, _ in held})),
                    workflow_runs.c.lease_token.in_(sorted({t for _, t in held})),
                    workflow_runs.c.status == "running",
                )
                .values(lease_until=lease_until())
            ).rowcount
        )


_held: dict[tuple[str, str], str] = {}  # (tenant, run) -> token, in this process
_lock = threading.Lock()
_beating = False


@contextmanager
def heartbeat(tenant_id: str, held: Sequence[tuple[str, str]]) -> Iterator[None]:
    """Keep the leases renewed while the block runs: one daemon thread per
    process renews every lease held here each third of LEASE."""
    keys = [((tenant_id, run_id), token) for run_id, token in held]
    with _lock:
        _held.update(keys)
        _start()
    try:
        yield
    finally:
        with _lock:
            for key, token in keys:
                if _held.get(key) == token:
                    del _held[key]


def _start() -> None:
    global _beating
    if not _beating:
        _beating = True
        threading.Thread(target=_beat, name="workflow-lease-heartbeat", daemon=True).start()


def _beat() -> None:
    while True:
        threading.Event().wait(LEASE.total_seconds() / 3)
        with _lock:
            by_tenant: dict[str, list[tuple[str, str]]] = {}
            for (tenant_id, run_id), token in _held.items():
                by_tenant.setdefault(tenant_id, []).append((run_id, token))
        for tenant_id, held in by_tenant.items():
            try:
                renew(tenant_id, held)
            except Exception as exc:  # an outage: the engine's retries handle the run
                log.warning("lease heartbeat failed", extra={"error_class": type(exc).__name__})
