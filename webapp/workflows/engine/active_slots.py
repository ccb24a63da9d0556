"""`slot="active"` limits at the claim: a run whose workflow gives the slot
back while it waits must take one again to resume. The claim asks here,
under the key's lock (`slots.admit_many`, whoever is queued); a run with no
free slot keeps its row, held and not due (`pending.hold`), until a refill of
its key (a run of the key settled or suspended) releases it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.workflows.definition.model import Workflow
from webapp.workflows.engine.resume_rules import Decision, ResumeResult
from webapp.workflows.store import pending, slots


def admit_resumes(
    conn: Connection,
    tenant_id: str,
    pairs: list[Any],
    decided: list[tuple[Workflow | None, Decision]],
) -> list[tuple[Workflow | None, Decision]]:
    """A run of a `slot="active"` workflow resumes only into a free slot of
    its key (taken here, under the key's lock); without one its row is held
    (`pending.hold`) until a refill of the key releases it."""
    asked = [
        i
        for i, ((_, row), (wf, d)) in enumerate(zip(pairs, decided, strict=True))
        if d.result == ResumeResult.RESUMED
        and wf is not None
        and wf.concurrency is not None
        and wf.concurrency.slot == "active"
        and row.concurrency_key is not None
    ]
    if not asked:
        return decided
    wanted = []
    for i in asked:
        row, wf = pairs[i][1], decided[i][0]
        assert wf is not None and wf.concurrency is not None
        wanted.append(((tenant_id, wf.name, row.concurrency_key), wf.concurrency))
    admitted = slots.admit_many(conn, wanted, behind_queue=False)
    out = list(decided)
    for i, ok in zip(asked, admitted, strict=True):
        if not ok:
            p = pairs[i][0]
            pending.hold(conn, tenant_id, p.run_id, p.step_index)
            out[i] = (out[i][0], Decision(ResumeResult.NO_SLOT))
    return out
