"""The lease columns of `workflow_runs`: the renewal the heartbeat writes
(`webapp.workflows.engine.heartbeat` owns the thread and what is held)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import update

from webapp import db
from webapp.workflows.store.tables import workflow_runs


def renew(tenant_id: str, held: Sequence[tuple[str, str]], until: datetime) -> int:
    """Move the expiry of the leases held ((run_id, token) pairs) to `until`,
    in one transaction. A lease that moved on (another token) or a run that is
    no longer running is left alone. Returns the number of leases renewed."""
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
                .values(lease_until=until)
            ).rowcount
        )
