"""The last tick each cron workflow fired, per tenant (`workflow_cron_ticks`):
an inline read model of `workflow.cron-ticked`, so it commits with the tick.
A catch-up after downtime fires the schedule's ticks after it; a backfill of
old ticks never moves it back. Every tick takes the event store's append
lock first (`triggers.cron`), so two ticks of one workflow never write it at
once."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, insert, select, update

from webapp.eventstore import Event, register_inline
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import workflow_cron_ticks

_c = workflow_cron_ticks.c


def last_tick(conn: Connection, tenant_id: str, workflow_name: str) -> datetime | None:
    """The newest tick that fired (None: none yet, e.g. before this table existed)."""
    q = select(_c.last_tick).where(_c.tenant_id == tenant_id, _c.workflow_name == workflow_name)
    value = conn.execute(q).scalar()
    return value if isinstance(value, datetime) else None


def _on_tick(conn: Connection, e: Event) -> None:
    tick = datetime.fromisoformat(str(e.payload["tick"]))
    name = str(e.payload["workflowName"])
    known = last_tick(conn, e.tenant_id, name)
    if known is None:
        values = dict(tenant_id=e.tenant_id, workflow_name=name, last_tick=tick)
        conn.execute(insert(workflow_cron_ticks).values(**values))
    elif tick > known:
        conn.execute(
            update(workflow_cron_ticks)
            .where(_c.tenant_id == e.tenant_id, _c.workflow_name == name)
            .values(last_tick=tick)
        )


def register() -> None:
    register_inline(ev.CRON_TICKED, _on_tick)
