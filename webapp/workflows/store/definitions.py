"""The definitions runs have used, by fingerprint (`workflow_definitions`):
each one's shape, written once, so the deploy check can diff an open run
against the code even after its definition has changed or gone."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, select

from webapp.core import clock, db
from webapp.workflows.definition.model import Workflow
from webapp.workflows.store import sql
from webapp.workflows.store.tables import workflow_definitions

# Fingerprints this process knows are committed (a definition never changes
# under its fingerprint, so neither cache needs invalidating).
_recorded: set[str] = set()
_shapes: dict[str, dict[str, Any]] = {}


def forget() -> None:
    """Drop what this process remembers as stored (the tables were emptied)."""
    _recorded.clear()
    _shapes.clear()


def record(conn: Connection, wf: Workflow) -> None:
    """Make sure the definition's shape is stored (in the caller's transaction)."""
    fp = wf.fingerprint
    if fp in _recorded:
        return
    scope = db.tx_scope(conn).setdefault("workflows.recorded_definitions", set())
    if fp in scope:
        return
    scope.add(fp)
    sql.insert_ignore(
        conn,
        workflow_definitions,
        dict(
            fingerprint=fp,
            workflow_name=wf.name,
            version=wf.version,
            shape=wf.shape,
            recorded_at=clock.now(),
        ),
        ["fingerprint"],
    )
    db.after_commit(conn, lambda: _recorded.add(fp))


def shapes(conn: Connection, fingerprints: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored shapes of these fingerprints (unknown ones are left out:
    runs started before versions were recorded)."""
    wanted = {fp for fp in fingerprints if fp}
    missing = sorted(wanted - _shapes.keys())
    if missing:
        rows = conn.execute(
            select(workflow_definitions.c.fingerprint, workflow_definitions.c.shape).where(
                workflow_definitions.c.fingerprint.in_(missing)
            )
        )
        for fp, shape in rows:
            _shapes[fp] = shape
    return {fp: _shapes[fp] for fp in wanted if fp in _shapes}
