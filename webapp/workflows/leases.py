"""Leases: who executes a running run. The claim (or advance) takes a lease
token with an expiry; every progress commit renews it. A worker that dies
stops renewing, and once the lease has expired the sweep (or the next claim)
re-dispatches the run from its last committed step."""

from __future__ import annotations

from datetime import datetime, timedelta

from webapp import clock

LEASE = timedelta(minutes=5)


def lease_until(now: datetime | None = None) -> datetime:
    return (now or clock.now()) + LEASE
