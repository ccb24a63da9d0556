"""Singleton runs (`singleton=one(key, mode)`): at most one open run per
key; a trigger while one is open is skipped (reason "singleton"), or
replaces it (the open run cancelled with reason "replaced" and the new run's
id, in the new run's transaction). With the real RQ worker, on the suite's
database (SQLite or PostgreSQL)."""

from __future__ import annotations

import json
import re

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, run_events, runs
from webapp.workflows.store import run_events as ev


def account(event):
    return event.payload["accountId"]


def sync(mode: str, keyed: bool = True) -> wf.Workflow:
    return wf.workflow(
        "account-sync",
        on="sync.requested",
        singleton=wf.one(key=account if keyed else None, mode=mode),
        awaits={"done": "sync.finished"},
        steps=[
            wf.wait_for_event("done", event="done", timeout="PT1H"),
            wf.ret(lambda ctx: ctx.trigger.payload["n"]),
        ],
    )


def request(n: int, account_id: str = "a1") -> object:
    return emit("sync.requested", {"n": n, "accountId": account_id}, aggregate_id=f"s{n}")


def by_trigger(n: int):
    return next(r for r in runs("account-sync") if r.trigger_event_ref["aggregateId"] == f"s{n}")


def test_skip_records_the_trigger_as_skipped_while_a_run_of_its_key_is_open(
    use_workflow, work, runner
):
    use_workflow(sync("skip"))
    request(1)
    request(2)
    request(3, "a2")  # another key: starts
    work()
    first, second, other = by_trigger(1), by_trigger(2), by_trigger(3)
    assert (first.status, other.status) == ("suspended", "suspended")
    assert (second.status, second.reason) == ("skipped", "singleton")
    (skipped,) = run_events(second.run_id)
    assert skipped.type == ev.RUN_SKIPPED
    assert skipped.payload["reason"] == "singleton" and skipped.payload["openRun"] == first.run_id
    info = json.loads(runner.invoke(args=["workflows", "show", second.run_id, "--json"]).output)
    assert info["singleton"] == {
        "key": "a1",
        "replaces": [],
        "replacedBy": None,
        "skippedFor": first.run_id,
    }
    text = runner.invoke(args=["workflows", "show", second.run_id]).output
    assert f"  skipped: run {first.run_id} of the key was open" in text
    emit("sync.finished", {}, aggregate_id="f1")  # every open run settles
    work()
    request(4)  # nothing of a1 open now: it starts
    work()
    assert by_trigger(4).status == "suspended"


def test_replace_cancels_the_open_run_and_starts_the_new_one_in_one_transaction(
    use_workflow, work, runner
):
    use_workflow(sync("replace"))
    request(1)
    work()
    request(2)
    work()
    old, new = by_trigger(1), by_trigger(2)
    assert (old.status, old.reason) == ("cancelled", "replaced")
    assert new.status == "suspended"
    cancelled = run_events(old.run_id)[-1]
    assert cancelled.type == ev.RUN_CANCELLED
    assert cancelled.payload["replacedBy"] == new.run_id
    started = run_events(new.run_id)[0]
    assert started.payload["replaces"] == [old.run_id]
    assert started.payload["singletonKey"] == "a1"
    # one transaction: the cancel directly precedes the start in the log
    assert started.position == cancelled.position + 1
    assert old.rate_key == new.rate_key == "a1"
    text = runner.invoke(args=["workflows", "show", old.run_id]).output
    assert "  singleton: key 'a1'" in text and f"  replaced by: run {new.run_id}" in text
    text = runner.invoke(args=["workflows", "show", new.run_id]).output
    assert f"  replaced: run {old.run_id}" in text


def test_a_burst_of_triggers_in_one_batch_leaves_only_the_last_open(use_workflow, work):
    use_workflow(sync("replace", keyed=False))
    for n in range(5):
        request(n, f"a{n}")  # no key function: one run for the whole workflow
    work()
    assert [r.status for r in sorted(runs("account-sync"), key=lambda r: r.started_position)] == [
        "cancelled"
    ] * 4 + ["suspended"]
    assert by_trigger(4).status == "suspended"


@pytest.mark.parametrize(
    ("controls", "message"),
    [
        (dict(singleton=wf.one(), concurrency=wf.limit(1)), "singleton= and concurrency="),
        (dict(singleton=wf.one(), key=lambda e: e.id), "singleton= and key="),
        (dict(singleton=wf.one(), debounce=wf.quiet("PT1M")), "singleton= and debounce="),
        (dict(singleton=wf.one(), throttle=wf.rate(1)), "singleton= and throttle="),
        (dict(singleton="skip"), "singleton= takes one(key=..., mode='skip'|'replace')"),
    ],
)
def test_contradictory_combinations_are_refused_naming_the_fields(controls, message):
    with pytest.raises(wf.DefinitionError, match=re.escape(message)):
        wf.workflow("x", on="a.b", steps=[wf.ret(1)], **controls)


def test_one_refuses_bad_values_and_cron_workflows():
    with pytest.raises(wf.DefinitionError, match="one\\(mode=...\\) must be 'skip' or 'replace'"):
        wf.one(mode="cancel")
    with pytest.raises(wf.DefinitionError, match="one\\(key=...\\) must be a function"):
        wf.one(key="accountId")
    with pytest.raises(wf.DefinitionError, match="singleton= and cron="):
        wf.workflow("x", cron="* * * * *", singleton=wf.one(), steps=[wf.ret(1)])
