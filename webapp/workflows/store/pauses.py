"""Paused workflows (`workflow_pauses`): whether new triggers of a workflow
start as Queued. Read once per transaction (a trigger batch asks for every
run it starts)."""

from __future__ import annotations

from sqlalchemy import Connection, delete, select

from webapp.core import clock, db
from webapp.workflows.store import sql
from webapp.workflows.store.tables import workflow_pauses


def paused_workflows(conn: Connection) -> set[str]:
    """The paused workflows' names (cached for the rest of a write transaction;
    a read connection's scope outlives its read, so it always asks)."""
    if db.current_transaction() is not conn:
        return set(conn.execute(select(workflow_pauses.c.workflow_name)).scalars())
    scope = db.tx_scope(conn)
    names = scope.get("workflows.paused")
    if names is None:
        names = scope["workflows.paused"] = set(
            conn.execute(select(workflow_pauses.c.workflow_name)).scalars()
        )
    return set(names)


def is_paused(conn: Connection, workflow_name: str) -> bool:
    return workflow_name in paused_workflows(conn)


def set_paused(conn: Connection, workflow_name: str, actor: str | None) -> bool:
    """Pause the workflow; False when it already was."""
    if is_paused(conn, workflow_name):
        return False
    values = dict(workflow_name=workflow_name, paused_at=clock.now(), actor=actor)
    sql.insert_ignore(conn, workflow_pauses, values, ["workflow_name"])
    db.tx_scope(conn).pop("workflows.paused", None)
    return True


def clear_paused(conn: Connection, workflow_name: str) -> bool:
    """Resume the workflow; False when it was not paused."""
    gone = conn.execute(
        delete(workflow_pauses).where(workflow_pauses.c.workflow_name == workflow_name)
    ).rowcount
    db.tx_scope(conn).pop("workflows.paused", None)
    return bool(gone)
