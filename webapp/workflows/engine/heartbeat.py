"""Leases: who executes a running run. The claim (or advance) takes a lease
token with a short expiry; while the worker executes the run a heartbeat
thread renews it, and every progress commit renews it too. A worker that dies
stops renewing: within `LEASE` the lease has expired and the timer
(`webapp.workflows.dispatch.timer_loop`, in every worker) re-dispatches the run from its
last committed step.

`heartbeat(...)` blocks nest: a drain holds the leases of its whole batch
while each run's own loop (`run_loop`) holds its lease again. Blocks are
counted per (tenant, run, token), so a lease stays renewed until the last block
holding it has exited, not only until the innermost one has.

One daemon thread per process renews every lease held here; `stop()` ends and
joins it (the next `heartbeat` block starts a fresh one), `beat_now()` has it
renew at once and waits for that renewal. The SQL is `store.leases.renew`.

A lease also names its holder: the process that took or last renewed it
(`holder()`, set by the dispatch layer while this process keeps a liveness
key in Redis, `webapp.workflows.dispatch.holders`; None in a process without
one). A lease that missed its renewals (`unrenewed_before`) and whose holder's
key is gone may be taken over before it expires (`resume.decide_lease`);
the takeover writes a new token, so the old holder's commits and renewals,
which all check the token, do nothing."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta

from webapp.core import clock
from webapp.workflows.store import leases as store_leases

log = logging.getLogger("webapp.workflows")

LEASE = timedelta(seconds=6)
RENEW = timedelta(seconds=1.5)  # how often a held lease is renewed (at most a third of LEASE)
SLACK = timedelta(seconds=0.5)  # a renewal's own time, and clock skew between workers

Key = tuple[str, str, str]  # (tenant, run, token)

_held: Counter[Key] = Counter()  # open heartbeat blocks per lease, in this process
_cond = threading.Condition()  # guards _held and _beater, and signals beats


_holder: str | None = None  # this process's liveness key name, while it keeps one


def lease_until(now: datetime | None = None) -> datetime:
    return (now or clock.now()) + LEASE


def renew_every() -> float:
    """Seconds between two renewals of a held lease."""
    return min(RENEW, LEASE / 3).total_seconds()


def missed_after() -> timedelta:
    """A lease not renewed for this long missed a renewal: its holder is dead
    or stalled (2 s with the 6 s lease)."""
    return timedelta(seconds=renew_every()) + SLACK


def unrenewed_before(now: datetime | None = None) -> datetime:
    """A lease running out before this instant missed its last renewal (it was
    taken or renewed more than `missed_after()` ago)."""
    return (now or clock.now()) + LEASE - missed_after()


def set_holder(name: str | None) -> None:
    """The name the leases this process takes or renews record as their holder
    (None: no liveness key, the lease only expires)."""
    global _holder
    _holder = name


def holder() -> str | None:
    return _holder


class _Beater:
    """The renewing thread, with its own bookkeeping (a stopped one is dropped
    whole, so a fresh one never sees its predecessor's state)."""

    def __init__(self) -> None:
        self.stopping = False
        self.asked = 0  # the beat `beat_now` waits for
        self.begun = 0  # beats whose snapshot of _held was taken
        self.done = 0  # beats whose renewal has finished
        self.thread = threading.Thread(
            target=self._run, name="workflow-lease-heartbeat", daemon=True
        )

    def _run(self) -> None:
        while True:
            with _cond:
                _cond.wait_for(
                    lambda: self.stopping or self.asked > self.begun,
                    timeout=renew_every(),
                )
                if self.stopping:
                    return
                self.begun += 1
                number = self.begun
                by_tenant: dict[str, list[tuple[str, str]]] = {}
                for tenant_id, run_id, token in _held:
                    by_tenant.setdefault(tenant_id, []).append((run_id, token))
            _renew(by_tenant)
            with _cond:
                self.done = number
                _cond.notify_all()


_beater: _Beater | None = None


def _renew(by_tenant: dict[str, list[tuple[str, str]]]) -> None:
    for tenant_id, held in by_tenant.items():
        try:
            store_leases.renew(tenant_id, held, lease_until(), _holder)
        except Exception as exc:  # an outage: the engine's retries handle the run
            log.warning("lease heartbeat failed", extra={"error_class": type(exc).__name__})


@contextmanager
def heartbeat(tenant_id: str, held: Sequence[tuple[str, str]]) -> Iterator[None]:
    """Keep the leases ((run_id, token) pairs) renewed while the block runs,
    every `renew_every()` seconds, and while any other block holding them runs."""
    keys = [(tenant_id, run_id, token) for run_id, token in held]
    with _cond:
        _held.update(keys)
        if keys:
            _start()
    try:
        yield
    finally:
        with _cond:
            _held.subtract(keys)
            for key in set(keys):
                if _held[key] <= 0:
                    del _held[key]


def held_leases() -> frozenset[Key]:
    """The leases this process renews now."""
    with _cond:
        return frozenset(_held)


def _start() -> None:
    global _beater
    if _beater is None:
        _beater = _Beater()
        _beater.thread.start()


def beat_now(timeout: float = 10.0) -> bool:
    """Renew every lease held now, on the heartbeat thread, and wait until that
    renewal has finished. False when no thread runs (nothing was ever held, or
    it was stopped) or it did not finish within `timeout` seconds."""
    with _cond:
        beater = _beater
        if beater is None:
            return False
        target = beater.asked = beater.begun + 1  # the next beat to take a snapshot
        _cond.notify_all()
        return _cond.wait_for(lambda: beater.done >= target or beater.stopping, timeout) and (
            beater.done >= target
        )


def stop(timeout: float = 10.0) -> bool:
    """Stop the heartbeat thread and join it: a renewal in flight finishes
    first, none starts after. Leases still held are no longer renewed until
    the next `heartbeat` block starts a fresh thread. False if the thread did
    not end within `timeout` seconds."""
    global _beater
    with _cond:
        beater, _beater = _beater, None
        if beater is None:
            return True
        beater.stopping = True
        _cond.notify_all()
    beater.thread.join(timeout)
    return not beater.thread.is_alive()
