"""The lease heartbeat: a lease stays renewed while any block holding it is
open, nested ones included (a drain holds its whole batch while each run's own
loop holds its lease again), and the renewing thread stops when told."""

from __future__ import annotations

import threading
from typing import Any

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, types
from webapp.core import db
from webapp.workflows.dispatch import drain as drains
from webapp.workflows.engine import heartbeat
from webapp.workflows.store.tables import workflow_runs


def test_a_quick_run_inside_a_drain_keeps_its_lease_renewed_until_its_finish(
    use_workflow, work, clock
):
    """Two quick runs in one drain batch: "lease-first" runs its steps first,
    then "lease-second"'s step looks at first's lease while the drain still
    holds it (its finish commits after both have run)."""
    seen: dict[str, Any] = {}

    def probe(ctx: Any) -> int:
        first = only_run("lease-first")
        clock.advance(2)
        seen["held"] = (first.tenant_id, first.run_id, first.lease_token) in heartbeat.held_leases()
        seen["beat"] = heartbeat.beat_now()
        seen["lease_until"] = only_run("lease-first").lease_until
        seen["renewed_to"] = heartbeat.lease_until()
        seen["status"] = first.status
        return 2

    use_workflow(
        wf.workflow("lease-first", on="lease.first", steps=[wf.wait("nap", "PT1S"), wf.ret(1)])
    )
    use_workflow(
        wf.workflow(
            "lease-second",
            on="lease.second",
            steps=[
                wf.wait("nap", "PT2S"),
                wf.compute("probe", probe),
                wf.ret(lambda c: c["probe"]),
            ],
        )
    )
    emit("lease.first", {}, aggregate_id="f1")
    emit("lease.second", {}, aggregate_id="s1")
    work()
    clock.advance(3)
    assert drains.drain_batch("default") == 2  # oldest first: lease-first, then lease-second
    assert seen["status"] == "running"  # first had run its steps; its finish was not committed
    assert seen["beat"]
    assert seen["lease_until"] == seen["renewed_to"], "lease-first's lease was not renewed"
    assert seen["held"], "the drain still holds lease-first's lease"
    for name in ("lease-first", "lease-second"):
        run = only_run(name)
        assert run.status == "completed"
        assert types(run.run_id)[-1] == "run-completed"
    assert only_run("lease-second").results["return"] == 2
    assert heartbeat.held_leases() == frozenset()


def test_a_stopped_heartbeat_is_joined_and_the_next_block_starts_a_fresh_one(
    use_workflow, work, clock
):
    use_workflow(
        wf.workflow("lease-held", on="lease.held", steps=[wf.compute("c", lambda c: 1), wf.ret(1)])
    )
    emit("lease.held", {}, aggregate_id="h1")
    work()
    run_id = only_run("lease-held").run_id
    with db.transaction() as conn:  # as a worker mid-step leaves it
        conn.execute(
            workflow_runs.update()
            .where(workflow_runs.c.run_id == run_id)
            .values(status="running", lease_token="t1", lease_until=heartbeat.lease_until())
        )
    taken = only_run("lease-held").lease_until
    assert heartbeat.stop()
    assert not [t for t in threading.enumerate() if t.name == "workflow-lease-heartbeat"]
    assert not heartbeat.beat_now()  # no thread, nothing renews
    with heartbeat.heartbeat("default", [(run_id, "another-token")]):
        clock.advance(1)
        assert heartbeat.beat_now()
        assert only_run("lease-held").lease_until == taken  # not our lease: left alone
        with heartbeat.heartbeat("default", [(run_id, "t1")]):
            assert heartbeat.beat_now()
            assert only_run("lease-held").lease_until == heartbeat.lease_until()
    assert heartbeat.held_leases() == frozenset()
    assert heartbeat.stop()
