"""Cron policies are checked when the workflow is defined (DefinitionError
naming the field) and are not part of its fingerprint."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import webapp.workflows as wf
from webapp.workflows.definition.model import DefinitionError


def nightly(**policies: Any) -> wf.Workflow:
    return wf.workflow("nightly-policy", cron="0 3 * * *", steps=[wf.ret(1)], **policies)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: nightly(overlap="sometimes"), "overlap= must be 'skip', 'buffer_one' or 'allow'"),
        (lambda: nightly(overlap=None, catchup="soon"), "catchup= must be a positive ISO-8601"),
        (lambda: nightly(catchup="PT0S"), "catchup= must be a positive ISO-8601"),
        (lambda: nightly(catchup=3600), "catchup= must be a positive ISO-8601"),
        (lambda: nightly(catchup=timedelta(0)), "catchup= must be a positive ISO-8601"),
        (
            lambda: wf.workflow("ev", on="x.y", overlap="skip", steps=[wf.ret(1)]),
            "overlap= only applies to cron workflows",
        ),
        (
            lambda: wf.workflow("hook", webhook="in", catchup="PT1H", steps=[wf.ret(1)]),
            "catchup= only applies to cron workflows",
        ),
        (
            lambda: nightly(overlap="buffer_one", concurrency=wf.limit(max=2)),
            "overlap='buffer_one' already allows one open run at a time",
        ),
    ],
)
def test_a_wrong_cron_policy_is_refused_naming_the_field(build: Any, message: str) -> None:
    with pytest.raises(DefinitionError, match="workflow '(nightly-policy|ev|hook)': ") as err:
        build()
    assert message in str(err.value)


def test_the_defaults_and_what_is_declared() -> None:
    assert (nightly().overlap, nightly().catchup) == ("skip", None)
    declared = nightly(overlap="buffer_one", catchup="PT1H")
    assert (declared.overlap, declared.catchup) == ("buffer_one", timedelta(hours=1))
    assert declared.slot_limit is not None and declared.slot_limit.max == 1
    assert nightly(overlap="allow").slot_limit is None
    # A cron workflow with a concurrency limit and no overlap= keeps its limit.
    limited = nightly(concurrency=wf.limit(max=2))
    assert (limited.overlap, limited.slot_limit) == ("allow", limited.concurrency)


def test_cron_policies_are_not_part_of_the_fingerprint() -> None:
    plain = nightly()
    for policies in ({"overlap": "allow"}, {"overlap": "buffer_one", "catchup": "PT1H"}):
        changed = nightly(**policies)
        assert changed.fingerprint == plain.fingerprint and changed.shape == plain.shape
