"""The resume rules as a pure function: every rule of resume-run (and of
taking a running run's lease again) decided from plain rows, with no
database, no Redis and no app. One table row per rule and outcome."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

import webapp.workflows as wf
from webapp.eventstore import Event
from webapp.workflows.engine.resume import (
    ResumeResult,
    decide,
    decide_lease,
    validate,
)
from webapp.workflows.store import run_events as ev

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
RUN = "9b7e6c1a-0d8f-4c52-8a59-3f1f0c2b7d10"

DEFINITION = wf.workflow(
    "rules",
    on="thing.happened",
    awaits={"answer": "thing.answered"},
    steps=[
        wf.wait("pause", "PT1M"),
        wf.wait_for_event("answer", event="answer", timeout="PT1H"),
        wf.retry("flaky", times=3, do=[wf.compute("x", lambda ctx: 1)]),
        wf.ret(None),
    ],
)


def event(event_id: str, position: int, payload: dict[str, Any] | None = None) -> Event:
    return Event(
        event_id, "default", "thing", "a1", 1, "thing.answered", payload or {}, {}, NOW, position
    )


TRIGGER = event("trigger-1", 10)
ANSWER = event("answer-1", 42, {"ok": True})


def row(**over: Any) -> SimpleNamespace:
    values: dict[str, Any] = dict(
        run_id=RUN,
        workflow_name="rules",
        status="suspended",
        step_index=0,
        attempt=1,
        fingerprint=DEFINITION.fingerprint,
        trigger_event_ref={"eventId": TRIGGER.id},
        results={"earlier": 1},
        version=3,
        lease_token=None,
        lease_until=None,
        definition_version=1,
        paused_by=None,
    )
    values.update(over)
    return SimpleNamespace(**values)


def pending(**over: Any) -> SimpleNamespace:
    values: dict[str, Any] = dict(
        run_id=RUN,
        step_index=0,
        suspension_event_type=ev.STEP_WAITING,
        retry_attempt=None,
        definition_fingerprint=DEFINITION.fingerprint,
        trigger_event_ref=None,
    )
    values.update(over)
    return SimpleNamespace(**values)


FOUND = {TRIGGER.id: TRIGGER, ANSWER.id: ANSWER}
WAITING_FOR_ANSWER = dict(
    step_index=1,
    suspension_event_type=ev.STEP_WAITING_FOR_EVENT,
    trigger_event_ref={"eventId": ANSWER.id},
)
RETRYING = dict(step_index=2, suspension_event_type=ev.RETRY_SCHEDULED, retry_attempt=2)

CASES = [
    # rule, pending row, runs row, definition, events found -> result, claim, reason
    ("2: no runs row", pending(), None, DEFINITION, FOUND, ResumeResult.ALREADY, False, None),
    (
        "3: settled",
        pending(),
        row(status="completed"),
        DEFINITION,
        FOUND,
        ResumeResult.ALREADY,
        False,
        None,
    ),
    (
        "3: running again (another resume won)",
        pending(),
        row(status="running"),
        DEFINITION,
        FOUND,
        ResumeResult.ALREADY,
        False,
        None,
    ),
    (
        "3: suspended at another step",
        pending(),
        row(step_index=1),
        DEFINITION,
        FOUND,
        ResumeResult.ALREADY,
        False,
        None,
    ),
    (
        "3: a retry of another attempt",
        pending(**RETRYING),
        row(step_index=2, attempt=3),
        DEFINITION,
        FOUND,
        ResumeResult.ALREADY,
        False,
        None,
    ),
    (
        "4: not registered",
        pending(),
        row(),
        None,
        FOUND,
        ResumeResult.FAILED,
        False,
        ev.REASON_DEFINITION_CHANGED,
    ),
    (
        "4: definition changed",
        pending(definition_fingerprint="older"),
        row(),
        DEFINITION,
        FOUND,
        ResumeResult.FAILED,
        False,
        ev.REASON_DEFINITION_CHANGED,
    ),
    (
        "6: trigger event gone",
        pending(),
        row(),
        DEFINITION,
        {ANSWER.id: ANSWER},
        ResumeResult.FAILED,
        True,
        ev.REASON_TRIGGER_UNAVAILABLE,
    ),
    (
        "6: awaited event gone",
        pending(**WAITING_FOR_ANSWER),
        row(step_index=1),
        DEFINITION,
        {TRIGGER.id: TRIGGER},
        ResumeResult.FAILED,
        True,
        ev.REASON_AWAITED_UNAVAILABLE,
    ),
    (
        "6: step index past the definition",
        pending(step_index=9),
        row(step_index=9),
        DEFINITION,
        FOUND,
        ResumeResult.FAILED,
        True,
        ev.REASON_DEFINITION_CHANGED,
    ),
    ("7: a wait", pending(), row(), DEFINITION, FOUND, ResumeResult.RESUMED, True, None),
]


@pytest.mark.parametrize(
    ("pend", "run_row", "definition", "found", "result", "claim", "reason"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_each_rule_decides_from_the_rows_alone(
    pend: Any, run_row: Any, definition: Any, found: Any, result: Any, claim: Any, reason: Any
) -> None:
    d = decide(pend, run_row, definition, found)
    assert (d.result, d.claim, d.reason) == (result, claim, reason)


def test_rule_7_a_wait_goes_on_at_the_next_step_with_an_empty_result() -> None:
    d = decide(pending(), row(), DEFINITION, FOUND)
    assert (d.step_index, d.attempt) == (1, 1)
    assert d.results == {"earlier": 1, "pause": None}


def test_rule_7_a_woken_wait_for_event_gets_the_payload_and_remembers_its_position() -> None:
    d = decide(pending(**WAITING_FOR_ANSWER), row(step_index=1), DEFINITION, FOUND)
    assert d.result == ResumeResult.RESUMED
    assert d.step_index == 2
    assert d.results["answer"] == {"ok": True}
    assert d.results[ev.CONSUMED] == ANSWER.position


def test_rule_7_a_timed_out_wait_for_event_gets_none() -> None:
    timed_out = pending(**{**WAITING_FOR_ANSWER, "trigger_event_ref": None})
    d = decide(timed_out, row(step_index=1), DEFINITION, {TRIGGER.id: TRIGGER})
    assert (d.result, d.step_index, d.results["answer"]) == (ResumeResult.RESUMED, 2, None)


def test_rule_7_a_retry_stays_at_its_step_as_the_next_attempt() -> None:
    d = decide(pending(**RETRYING), row(step_index=2, attempt=2), DEFINITION, FOUND)
    assert (d.result, d.step_index, d.attempt) == (ResumeResult.RESUMED, 2, 2)


def test_the_runs_row_fingerprint_counts_when_the_pending_row_has_none() -> None:
    d = decide(pending(definition_fingerprint=None), row(fingerprint="other"), DEFINITION, FOUND)
    assert d.reason == ev.REASON_DEFINITION_CHANGED


# Rule 4 with a changed definition: the run goes on (adopts it) when nothing
# changed up to and including where it waits, else it fails.
CHANGED_AFTER = wf.workflow(
    "rules",
    on="thing.happened",
    awaits={"answer": "thing.answered"},
    steps=[*DEFINITION.steps[:3], wf.compute("audit", lambda ctx: 2), wf.ret(None)],
)
CHANGED_BEFORE = wf.workflow(
    "rules",
    on="thing.happened",
    awaits={"answer": "thing.answered"},
    steps=[wf.wait("pause", "PT2M"), *DEFINITION.steps[1:]],
)


def test_rule_4_a_change_after_the_waiting_step_is_adopted() -> None:
    d = decide(pending(), row(), CHANGED_AFTER, FOUND, DEFINITION.shape)
    assert (d.result, d.claim, d.adopt, d.step_index) == (ResumeResult.RESUMED, True, True, 1)


def test_rule_4_a_change_at_the_waiting_step_fails_the_run() -> None:
    d = decide(pending(), row(), CHANGED_BEFORE, FOUND, DEFINITION.shape)
    assert (d.result, d.claim, d.reason) == (
        ResumeResult.FAILED,
        False,
        ev.REASON_DEFINITION_CHANGED,
    )


def test_rule_4_without_the_old_shape_any_change_fails_the_run() -> None:
    d = decide(pending(), row(), CHANGED_AFTER, FOUND, None)
    assert d.reason == ev.REASON_DEFINITION_CHANGED


def test_a_paused_run_is_not_claimed_and_keeps_its_row() -> None:
    d = decide(pending(), row(paused_by="run"), DEFINITION, FOUND)
    assert (d.result, d.claim, d.reason) == (ResumeResult.PAUSED, False, None)
    lease = decide_lease(row(status="running", paused_by="workflow"), DEFINITION, TRIGGER, NOW)
    assert lease.result == ResumeResult.PAUSED


@pytest.mark.parametrize(
    ("run_id", "step"), [("not-a-uuid", 0), (RUN, -1), (RUN, True), (RUN, "0"), (None, 0)]
)
def test_rule_1_refuses_a_malformed_request(run_id: Any, step: Any) -> None:
    with pytest.raises(ValueError, match="resume-run"):
        validate(run_id, step)


def test_rule_1_normalises_the_run_id() -> None:
    assert validate(RUN.upper(), 3) == (RUN, 3)


LEASE_CASES = [
    ("no row", None, DEFINITION, TRIGGER, ResumeResult.NOT_RUNNING, None),
    ("not running", row(status="suspended"), DEFINITION, TRIGGER, ResumeResult.NOT_RUNNING, None),
    (
        "a live lease",
        row(status="running", lease_token="t", lease_until=NOW + timedelta(seconds=1)),
        DEFINITION,
        TRIGGER,
        ResumeResult.LEASED,
        None,
    ),
    (
        "definition changed",
        row(status="running", fingerprint="older"),
        DEFINITION,
        TRIGGER,
        ResumeResult.FAILED,
        ev.REASON_DEFINITION_CHANGED,
    ),
    (
        "trigger gone",
        row(status="running"),
        DEFINITION,
        None,
        ResumeResult.FAILED,
        ev.REASON_TRIGGER_UNAVAILABLE,
    ),
    (
        "an expired lease",
        row(status="running", lease_token="t", lease_until=NOW - timedelta(seconds=1)),
        DEFINITION,
        TRIGGER,
        ResumeResult.ADVANCED,
        None,
    ),
]


@pytest.mark.parametrize(
    ("run_row", "definition", "trigger", "result", "reason"),
    [c[1:] for c in LEASE_CASES],
    ids=[c[0] for c in LEASE_CASES],
)
def test_a_running_run_is_leased_again_only_when_nobody_holds_it(
    run_row: Any, definition: Any, trigger: Any, result: Any, reason: Any
) -> None:
    d = decide_lease(run_row, definition, trigger, NOW)
    assert (d.result, d.reason, d.claim) == (result, reason, False)
