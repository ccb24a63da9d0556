"""Throttle, rate limit and debounce are checked when the workflow is
defined: a wrong value, or a combination that contradicts itself, is
refused with a message naming the field."""

from __future__ import annotations

import pytest

import webapp.workflows as wf
from webapp.workflows.definition.controls import ControlError


def define(**controls: object) -> wf.Workflow:
    return wf.workflow(
        "rated",
        on="thing.happened",
        steps=[wf.compute("a", lambda ctx: 1)],
        **controls,  # type: ignore[arg-type]
    )


def user(event: object) -> str:
    return event.payload["userId"]  # type: ignore[attr-defined,no-any-return]


def other(event: object) -> str:
    return event.payload["teamId"]  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: wf.rate(0, per="PT1M"), "rate(count"),
        (lambda: wf.rate(True, per="PT1M"), "rate(count"),
        (lambda: wf.rate(1, per="PT0S"), "rate(per=...) must be above zero"),
        (lambda: wf.rate(1, per="every minute"), "rate(per=...) takes an ISO-8601 duration"),
        (lambda: wf.rate(1, per="PT1M", key="userId"), "rate(key=...) must be a function"),
        (lambda: wf.quiet("PT0S"), "quiet(period) must be above zero"),
        (lambda: wf.quiet("PT30S", max_wait="PT10S"), "quiet(max_wait=...) must be at least"),
        (lambda: wf.quiet("soon"), "quiet(period) takes an ISO-8601 duration"),
    ],
)
def test_a_wrong_rate_or_quiet_is_refused(build, says):
    with pytest.raises(ControlError, match=says.replace("(", r"\(").replace(")", r"\)")):
        build()


@pytest.mark.parametrize(
    ("controls", "says"),
    [
        (
            dict(debounce=wf.quiet("PT30S", key=user), rate_limit=wf.rate(1, "PT1H", key=other)),
            "debounce= and rate_limit= must use the same key function",
        ),
        (
            dict(throttle=wf.rate(5, "PT1M", key=user), rate_limit=wf.rate(1, "PT1H", key=other)),
            "throttle= and rate_limit= must use the same key function",
        ),
        (
            dict(throttle=wf.rate(5, "PT1M"), debounce=wf.quiet("PT30S")),
            "throttle= and debounce= cannot be combined",
        ),
        (
            dict(throttle=wf.rate(5, "PT1M"), concurrency=wf.limit(max=2)),
            "throttle= and concurrency= cannot be combined",
        ),
        (
            dict(debounce=wf.quiet("PT30S"), concurrency=wf.limit(max=2)),
            "debounce= and concurrency= cannot be combined",
        ),
        (dict(throttle=wf.limit(max=2)), "throttle= takes rate(count"),
        (dict(debounce=wf.rate(1, "PT1M")), "debounce= takes quiet(period"),
        (dict(rate_limit="1/h"), "rate_limit= takes rate(count"),
    ],
)
def test_a_contradictory_combination_is_refused_naming_the_fields(controls, says):
    with pytest.raises(ControlError, match=says.replace("(", r"\(")) as caught:
        define(**controls)
    assert "'rated'" in str(caught.value)


def test_the_same_key_written_twice_is_the_same_key():
    made = define(
        debounce=wf.quiet("PT30S", key=lambda e: e.payload["userId"]),
        rate_limit=wf.rate(1, "PT1H", key=lambda e: e.payload["userId"]),
    )
    assert made.debounce is not None and made.rate_limit is not None
    both = define(rate_limit=wf.rate(1, "PT1H", key=user), concurrency=wf.limit(max=1, key=user))
    assert both.rates and both.concurrency is not None


def test_the_builders_are_importable_from_the_facade():
    throttle = wf.rate(10, per="PT1M", key=user)
    assert (throttle.count, throttle.per.total_seconds()) == (10, 60)
    debounce = wf.quiet("PT30S", key=user, max_wait="PT5M")
    assert (debounce.period.total_seconds(), debounce.max_wait.total_seconds()) == (30, 300)
    assert not define().rates


def test_a_throttle_on_a_cron_workflow_is_refused():
    with pytest.raises(ControlError, match="throttle= does not apply to a cron workflow"):
        wf.workflow(
            "nightly",
            cron="0 3 * * *",
            throttle=wf.rate(1, "PT1H"),
            steps=[wf.compute("a", lambda ctx: 1)],
        )


def test_a_rate_limit_on_a_child_workflow_is_refused():
    with pytest.raises(ControlError, match="rate_limit= does not apply to a child workflow"):
        wf.workflow(
            "child-report",
            child=True,
            rate_limit=wf.rate(1, "PT1H"),
            steps=[wf.compute("a", lambda ctx: 1)],
        )
