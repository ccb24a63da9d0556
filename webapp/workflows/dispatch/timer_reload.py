"""Rebuilding the timer's sorted set from the database when Redis lost it.

Redis only carries "there is work": the pending rows are the truth. A marker
key (`LOADED_KEY`, with an expiry of half `HORIZON`) says the set holds every
pending row due within `HORIZON`. When it is gone (Redis flushed, restarted
empty, or the marker expired), the first timer to notice (SET NX: exactly one)
loads the rows due within `HORIZON` again, at once, instead of leaving them to
the minute sweep. Loading a member twice is harmless: ZADD keeps one member
(scored by the database's wake-up), and a second resume of a step answers
already-resumed."""

from __future__ import annotations

from datetime import timedelta

from redis import Redis
from sqlalchemy import select

from webapp.core import clock, db
from webapp.workflows.dispatch import signals
from webapp.workflows.store.tables import workflow_run_pending

LOADED_KEY = "webapp:wf:timers:loaded"
HORIZON = timedelta(hours=1)
CAP = 20_000  # rows loaded at most; later ones are the sweep's, as before
CHUNK = 1_000


def reload_if_lost(r: Redis) -> int:
    """Load the pending rows due within HORIZON into the timer set when the
    marker is gone; returns the rows loaded (0: the set was intact, or another
    timer loads it)."""
    if not r.set(LOADED_KEY, "1", nx=True, ex=int(HORIZON.total_seconds() // 2)):
        return 0
    p = workflow_run_pending.c
    with db.reading() as conn:
        rows = conn.execute(
            select(p.tenant_id, p.run_id, p.step_index, p.wake_at)
            .where(p.paused.is_(False), p.wake_at <= clock.now() + HORIZON)
            .order_by(p.wake_at)
            .limit(CAP)
        ).all()
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        pipe = r.pipeline(transaction=False)
        pipe.zadd(
            signals.TIMER_KEY,
            {
                signals.member(x.tenant_id, x.run_id, x.step_index): signals.to_ms(x.wake_at)
                for x in chunk
            },
        )
        pipe.execute()
    return len(rows)
