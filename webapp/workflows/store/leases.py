"""The lease columns of `workflow_runs`: the renewal the heartbeat writes
(`webapp.workflows.engine.heartbeat` owns the thread and what is held)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update

from webapp.core import db
from webapp.workflows.store.run_events import RunStatus
from webapp.workflows.store.runs import locked
from webapp.workflows.store.tables import workflow_runs


def renew(
    tenant_id: str, held: Sequence[tuple[str, str]], until: datetime, holder: str | None = None
) -> int:
    """Move the expiry of the leases held ((run_id, token) pairs) to `until`
    and name `holder` (the renewing process) their holder, in one transaction. A lease that moved on (another token) or a run that is
    no longer running is left alone. On PostgreSQL a runs row another
    transaction holds is skipped, not waited for: its holder is writing the
    run (a progress commit renews the lease itself, a finish settles it), and
    waiting could deadlock with a finish that locks many rows in run id order.
    Returns the number of leases renewed."""
    if not held:
        return 0
    with db.transaction() as conn:
        mine = select(workflow_runs.c.run_id).where(
            workflow_runs.c.tenant_id == tenant_id,
            workflow_runs.c.run_id.in_(sorted({r for r, _ in held})),
            workflow_runs.c.lease_token.in_(sorted({t for _, t in held})),
            workflow_runs.c.status == RunStatus.RUNNING,
        )
        free = locked(conn, mine, workflow_runs.c.run_id, skip_locked=True)
        return int(
            conn.execute(
                update(workflow_runs)
                .where(
                    workflow_runs.c.tenant_id == tenant_id,
                    workflow_runs.c.run_id.in_(free.scalar_subquery()),
                )
                .values(lease_until=until, lease_holder=holder)
            ).rowcount
        )
