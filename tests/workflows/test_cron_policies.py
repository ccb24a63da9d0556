"""Cron policies (issue 18.12): overlap skip | buffer_one | allow for a tick
while the previous run is open, catch-up of missed ticks after downtime,
and backfill; each asserted from the run events and the read model."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from tests.support.workflows import run_events, runs, types
from tests.workflows.cron_defs import T0, finish, instant, scheduler_tick, waiting
from tests.workflows.test_races import parallel
from webapp.core import db
from webapp.eventstore.tables import events as events_table
from webapp.workflows.dispatch import sweep
from webapp.workflows.store import run_events as ev
from webapp.workflows.triggers import cron

MIN = timedelta(minutes=1)


@pytest.fixture(autouse=True)
def at_t0(clock: Any) -> Any:
    clock.set(T0 + timedelta(seconds=2))
    return clock


def by_tick(name: str) -> dict[str, Any]:
    """The workflow's runs by their tick (HH:MM)."""
    out = {}
    for r in runs(name):
        out[r.idempotency_key.removeprefix("cron|")[11:16]] = r
    return out


def statuses(name: str) -> dict[str, str]:
    return {tick: r.status for tick, r in sorted(by_tick(name).items())}


def ticks_fired(name: str) -> list[str]:
    """The tick events of a workflow in log order (HH:MM)."""
    with db.reading() as conn:
        rows = conn.execute(
            select(events_table.c.payload)
            .where(events_table.c.type == ev.CRON_TICKED)
            .order_by(events_table.c.position)
        ).scalars()
        return [p["tick"][11:16] for p in rows if p["workflowName"] == name]


def test_overlap_skip_records_the_tick_as_a_skipped_run_and_starts_nothing(use_workflow, work):
    d = use_workflow(waiting("cron-skip"))  # overlap="skip" is the default
    assert d.overlap == "skip"
    scheduler_tick(d, T0)
    work()
    scheduler_tick(d, T0 + 5 * MIN)
    work()
    assert statuses("cron-skip") == {"10:00": "suspended", "10:05": "skipped"}
    skipped = by_tick("cron-skip")["10:05"]
    (event,) = run_events(skipped.run_id)
    tick_ref = event.payload["trigger"]["ref"]
    assert event.type == ev.RUN_SKIPPED and event.payload == {
        "workflowName": "cron-skip",
        "trigger": {"type": ev.CRON_TICKED, "ref": tick_ref},
        "reason": "overlap",
        "key": "cron|2030-01-01T10:05:00+00:00",
        "version": 1,
    }
    assert tick_ref["aggregateId"] == skipped.run_id
    assert (skipped.reason, skipped.trigger_event_type) == ("overlap", ev.CRON_TICKED)
    assert skipped.status in ev.SETTLED and skipped.status not in ev.OPEN
    finish(T0)
    work()
    scheduler_tick(d, T0 + 10 * MIN)  # nothing open any more: it starts
    work()
    assert statuses("cron-skip") == {"10:00": "completed", "10:05": "skipped", "10:10": "suspended"}
    assert types(by_tick("cron-skip")["10:10"].run_id) == ["run-started", "step.waiting-for-event"]


def test_overlap_buffer_one_queues_one_tick_that_starts_when_the_open_run_settles(
    use_workflow, work
):
    d = use_workflow(waiting("cron-buffer", overlap="buffer_one"))
    for n in range(3):
        scheduler_tick(d, T0 + 5 * n * MIN)
        work()
    assert statuses("cron-buffer") == {"10:00": "suspended", "10:05": "queued", "10:10": "skipped"}
    buffered = by_tick("cron-buffer")["10:05"]
    assert types(buffered.run_id) == ["run-queued"]
    third = run_events(by_tick("cron-buffer")["10:10"].run_id)
    assert [e.type for e in third] == [ev.RUN_SKIPPED] and third[0].payload["reason"] == "overlap"
    finish(T0)  # the open run settles: the buffered one starts in its place
    work()
    assert statuses("cron-buffer") == {
        "10:00": "completed",
        "10:05": "suspended",
        "10:10": "skipped",
    }
    assert types(buffered.run_id) == ["run-queued", "run-started", "step.waiting-for-event"]
    scheduler_tick(d, T0 + 15 * MIN)  # one open again, none queued: buffered
    scheduler_tick(d, T0 + 20 * MIN)
    work()
    assert statuses("cron-buffer")["10:15"] == "queued"
    assert statuses("cron-buffer")["10:20"] == "skipped"
    finish(T0 + 5 * MIN)
    finish(T0 + 15 * MIN)
    work()
    assert statuses("cron-buffer") == {
        "10:00": "completed",
        "10:05": "completed",
        "10:10": "skipped",
        "10:15": "completed",
        "10:20": "skipped",
    }


def test_overlap_allow_starts_every_tick(use_workflow, work):
    d = use_workflow(waiting("cron-allow", overlap="allow"))
    for n in range(3):
        scheduler_tick(d, T0 + 5 * n * MIN)
    work()
    assert statuses("cron-allow") == {
        "10:00": "suspended",
        "10:05": "suspended",
        "10:10": "suspended",
    }
    assert all(types(r.run_id)[0] == "run-started" for r in runs("cron-allow"))


def test_a_late_scheduler_fires_the_schedules_own_tick(use_workflow, work):
    d = use_workflow(instant("cron-late", overlap="allow"))
    scheduler_tick(d, T0 + timedelta(seconds=59))
    scheduler_tick(d, T0 + 13 * MIN + timedelta(seconds=40))  # a busy queue: the 10:10 tick
    scheduler_tick(d, T0 + 19 * MIN)  # the same tick again
    work()
    assert statuses("cron-late") == {"10:00": "completed", "10:10": "completed"}
    assert ticks_fired("cron-late") == ["10:00", "10:10"]


def test_catchup_fires_the_missed_ticks_in_its_window_once_each_oldest_first(
    use_workflow, work, clock
):
    d = use_workflow(instant("cron-catchup", overlap="allow", catchup="PT1H"))
    scheduler_tick(d, T0)  # 10:00 fires; the scheduler is then down until 13:00
    clock.set(T0 + timedelta(hours=3))
    scheduler_tick(d, T0 + timedelta(hours=3))
    work()
    window = ["12:00", "12:10", "12:20", "12:30", "12:40", "12:50"]
    assert ticks_fired("cron-catchup") == ["10:00", *window, "13:00"]  # 10:10..11:50 never
    assert set(statuses("cron-catchup").values()) == {"completed"}
    assert len(runs("cron-catchup")) == 8
    scheduler_tick(d, T0 + timedelta(hours=3, minutes=10))  # no downtime: just the tick
    work()
    assert ticks_fired("cron-catchup")[-2:] == ["13:00", "13:10"]


def test_catchup_ticks_obey_overlap(use_workflow, work, clock):
    d = use_workflow(waiting("cron-catchup-skip", schedule="*/10 * * * *", catchup="PT30M"))
    scheduler_tick(d, T0)
    work()
    finish(T0)
    work()
    clock.set(T0 + timedelta(hours=2))
    scheduler_tick(d, T0 + timedelta(hours=2))
    work()
    assert statuses("cron-catchup-skip") == {
        "10:00": "completed",
        "11:30": "suspended",  # the oldest missed tick of the window starts
        "11:40": "skipped",
        "11:50": "skipped",
        "12:00": "skipped",  # the due tick too: the 11:30 run is open
    }


def test_without_catchup_missed_ticks_are_not_fired(use_workflow, work, clock):
    d = use_workflow(instant("cron-no-catchup", overlap="allow"))
    scheduler_tick(d, T0)
    clock.set(T0 + timedelta(hours=3))
    scheduler_tick(d, T0 + timedelta(hours=3))
    work()
    assert ticks_fired("cron-no-catchup") == ["10:00", "13:00"]


def backfill(cli: Any, *args: str) -> Any:
    return cli.invoke(args=["workflows", "backfill", *args])


def test_backfill_starts_one_run_per_tick_and_a_second_backfill_starts_nothing(
    use_workflow, work, runner, clock
):
    use_workflow(waiting("cron-backfill", schedule="*/10 * * * *"))
    clock.set(T0 + timedelta(hours=2))
    span = ["--from", "2030-01-01T10:00:00Z", "--to", "2030-01-01T11:00:00+00:00"]
    first = backfill(runner, "cron-backfill", *span)
    assert first.exit_code == 0, first.output
    assert "7 ticks, 7 runs started, 0 already existed" in first.output
    work()
    # Overlap skips none of them (each was asked for); limited to one open
    # run, they queue and run one after the other, oldest first.
    assert statuses("cron-backfill") == {
        "10:00": "suspended",
        **{f"10:{m}0": "queued" for m in range(1, 6)},
        "11:00": "queued",
    }
    tick = run_events(by_tick("cron-backfill")["10:00"].run_id)[0]
    assert tick.payload["triggerEventType"] == ev.CRON_TICKED
    again = backfill(runner, "cron-backfill", *span)
    assert again.exit_code == 0 and "7 ticks, 0 runs started, 7 already existed" in again.output
    wider = backfill(
        runner, "cron-backfill", "--from", "2030-01-01T10:50Z", "--to", "2030-01-01T11:20Z"
    )
    assert "4 ticks, 2 runs started, 2 already existed" in wider.output
    assert len(runs("cron-backfill")) == 9
    finish(T0)
    work()
    assert statuses("cron-backfill")["10:00"] == "completed"
    assert statuses("cron-backfill")["10:10"] == "suspended"  # the next one, by age
    assert ticks_fired("cron-backfill")[:2] == ["10:00", "10:10"]


def test_a_backfilled_tick_is_marked_and_the_scheduler_skips_ticks_it_already_fired(
    use_workflow, work, runner, clock
):
    d = use_workflow(instant("cron-backfill-mark", overlap="allow"))
    clock.set(T0 + timedelta(minutes=30))
    out = backfill(
        runner, "cron-backfill-mark", "--from", "2030-01-01T10:00Z", "--to", "2030-01-01T10:30Z"
    )
    assert "4 ticks, 4 runs started" in out.output
    with db.reading() as conn:
        payloads = conn.execute(
            select(events_table.c.payload).where(events_table.c.type == ev.CRON_TICKED)
        ).scalars()
        assert {p.get("backfill") for p in payloads} == {True}
    scheduler_tick(d, T0 + 30 * MIN)  # the scheduler's own 10:30: fired already by the backfill
    work()
    assert len(runs("cron-backfill-mark")) == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["nowhere", "--from", "2030-01-01T10:00Z", "--to", "2030-01-01T11:00Z"],
            "no workflow named 'nowhere'",
        ),
        (
            ["cron-plain-event", "--from", "2030-01-01T10:00Z", "--to", "2030-01-01T11:00Z"],
            "is not a cron workflow",
        ),
        (
            ["cron-bad", "--from", "yesterday", "--to", "2030-01-01T11:00Z"],
            "--from: an ISO 8601 time, got 'yesterday'",
        ),
        (
            ["cron-bad", "--from", "2030-01-01T10:00", "--to", "2030-01-01T11:00Z"],
            "--from: give a time zone",
        ),
        (
            ["cron-bad", "--from", "2030-01-01T11:00Z", "--to", "2030-01-01T10:00Z"],
            "is before --from",
        ),
        (
            ["cron-bad", "--from", "2030-01-01T10:00Z", "--to", "2030-01-02T10:00Z"],
            "is in the future",
        ),
        (
            ["cron-bad", "--from", "2029-12-25T00:00Z", "--to", "2030-01-01T11:00Z"],
            "more than 1,000 ticks",
        ),
        (
            [
                "cron-bad",
                "--from",
                "2030-01-01T10:00Z",
                "--to",
                "2030-01-01T11:00Z",
                "--tenant",
                "nobody",
            ],
            "no tenant 'nobody'",
        ),
        (["cron-bad", "--from", "2030-01-01T10:00Z"], "Missing option '--to'"),
    ],
)
def test_backfill_refuses_bad_input_and_starts_nothing(use_workflow, runner, clock, args, message):
    use_workflow(instant("cron-bad", schedule="*/5 * * * *"))
    use_workflow(wf.workflow("cron-plain-event", on="thing.happened", steps=[wf.ret(1)]))
    clock.set(T0 + timedelta(hours=2))
    res = backfill(runner, *args)
    assert res.exit_code != 0
    assert message in res.output
    assert runs("cron-bad") == [] and ticks_fired("cron-bad") == []


def test_cli_and_console_list_and_count_skipped_runs(use_workflow, work, runner):
    d = use_workflow(waiting("cron-counted"))
    for n in range(3):
        scheduler_tick(d, T0 + 5 * n * MIN)
    work()
    out = runner.invoke(args=["workflows", "runs", "--status", "skipped"]).output
    skipped = {r.run_id for r in runs("cron-counted") if r.status == "skipped"}
    assert len(skipped) == 2 and all(rid in out for rid in skipped)
    show = runner.invoke(args=["workflows", "show", sorted(skipped)[0]]).output
    assert "status skipped" in show and "workflow.run-skipped" in show
    cancel = runner.invoke(args=["workflows", "cancel", sorted(skipped)[0]])
    assert cancel.exit_code != 0 and "already skipped" in cancel.output
    assert cron.MAX_TICKS == 1_000


@pytest.mark.parametrize(
    ("overlap", "expected"),
    [
        ("skip", {"running": 1, "skipped": 19}),
        ("buffer_one", {"running": 1, "queued": 1, "skipped": 18}),
    ],
)
def test_twenty_ticks_at_once_never_overlap(app, use_workflow, overlap, expected):
    """Twenty ticks fired at the same instant by twenty schedulers' workers
    (nothing settles meanwhile): one starts, buffer_one queues one more, the
    rest are skipped; the decision is made under the append lock."""
    d = use_workflow(waiting(f"cron-race-{overlap}", overlap=overlap))

    def tick(i: int) -> str | None:
        with app.app_context():
            return cron.start_cron_run(d, "default", T0 + 5 * i * MIN)

    assert None not in parallel(20, tick)
    counts: dict[str, int] = {}
    for r in runs(d.name):
        counts[r.status] = counts.get(r.status, 0) + 1
    assert counts == expected


def test_a_deploy_that_allows_overlap_starts_the_buffered_tick(use_workflow, work):
    d = use_workflow(waiting("cron-redeployed", overlap="buffer_one"))
    scheduler_tick(d, T0)
    scheduler_tick(d, T0 + 5 * MIN)
    work()
    assert statuses("cron-redeployed") == {"10:00": "suspended", "10:05": "queued"}
    use_workflow(waiting("cron-redeployed", overlap="allow"))
    assert sweep.sweep("default")["admitted"] == 1
    work()
    assert statuses("cron-redeployed") == {"10:00": "suspended", "10:05": "suspended"}


def test_a_paused_cron_workflow_queues_one_tick_skips_the_next_and_starts_it_on_resume(
    use_workflow, work, runner
):
    d = use_workflow(waiting("cron-paused"))
    assert runner.invoke(args=["workflows", "pause-workflow", "cron-paused"]).exit_code == 0
    scheduler_tick(d, T0)
    scheduler_tick(d, T0 + 5 * MIN)
    work()
    assert statuses("cron-paused") == {"10:00": "queued", "10:05": "skipped"}
    assert run_events(by_tick("cron-paused")["10:00"].run_id)[0].payload["paused"] is True
    assert runner.invoke(args=["workflows", "resume-workflow", "cron-paused"]).exit_code == 0
    work()
    assert statuses("cron-paused") == {"10:00": "suspended", "10:05": "skipped"}
