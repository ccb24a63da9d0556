"""`make bench-history`'s history: the same log on both backends, whole, in
order, and caught up, so the bench compares like with like. (The bench itself
starts workers twice per round: minutes, never part of the tests.)"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import func, select

from bench import history, history_load
from webapp.core import db
from webapp.eventstore import ANY, NewEvent, StreamId, append, projections
from webapp.eventstore.tables import events, projection_cursors
from webapp.workflows.store.tables import workflow_runs


def test_history_is_whole_blocks_of_runs_triggers_awaited_and_account_events(app):
    with db.transaction() as conn:
        assert history_load.load(conn, 2005) == 2000
    with db.reading() as conn:
        positions = list(conn.execute(select(events.c.position).order_by(events.c.position)))
        types = Counter(t for (t,) in conn.execute(select(events.c.type)))
        streams = conn.execute(
            select(func.count(), func.min(events.c.version), func.max(events.c.version)).group_by(
                events.c.tenant_id, events.c.aggregate_type, events.c.aggregate_id
            )
        ).all()
        statuses = Counter(s for (s,) in conn.execute(select(workflow_runs.c.status)))
    assert [p for (p,) in positions] == list(range(1, 2001))
    assert types == {
        "history.order-placed": 100,
        "history.invoice-sent": 100,
        "workflow.run-started": 200,
        "workflow.step.waiting": 200,
        "workflow.step.resumed": 200,
        "workflow.run-completed": 196,
        "workflow.run-failed": 4,
        "bench.ping": 200,
        "user.registered": 40,
        "user.email-verified": 160,
        "user.password-changed": 200,
        "user.language-changed": 200,
        "user.sessions-revoked": 200,
    }
    # every stream's versions run 1..n (runs 4, accounts 20, triggers 1)
    assert all(n == top and low == 1 for n, low, top in streams)
    assert statuses == {"completed": 196, "failed": 4}


def test_history_moves_the_log_head_and_the_cursors_past_it(app):
    projections.register("bench-history-probe", ["bench.ping"], lambda conn, e: None)
    try:
        with db.transaction() as conn:
            history_load.load(conn, 1000)
        projections.ensure_cursors()
        with db.transaction() as conn:
            history_load.catch_up(conn, 1000)
        with db.transaction() as conn:
            (after,) = append(conn, StreamId("default", "probe", "p"), [NewEvent("x", {})], ANY)
            cursors = conn.execute(select(projection_cursors.c.position)).scalars().all()
    finally:
        projections.unregister("bench-history-probe")
    assert after.position > 1000
    assert cursors and all(p == 1000 for p in cursors)


def test_verdict_judges_a_ratio_against_the_floor_and_the_goal():
    assert history.verdict(1.05) == "goal"
    assert history.verdict(1.2) == "floor"
    assert history.verdict(1.21) == "MISSED"
