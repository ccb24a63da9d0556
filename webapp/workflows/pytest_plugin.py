"""The pytest plugin `webapp-workflows` (entry point in pyproject.toml): the
`workflow_test` fixture, a factory of started `WorkflowTest`s that are closed
after the test.

    def test_order_follow_up(workflow_test):
        t = workflow_test(order_follow_up)
        t.publish("order.placed", "order/42", {"total": 1200})
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from webapp.workflows.definition.model import Workflow
from webapp.workflows.testing import WorkflowTest


@pytest.fixture
def workflow_test() -> Iterator[Callable[..., WorkflowTest]]:
    """`workflow_test(*workflows, **options)`: a started WorkflowTest (the
    options are WorkflowTest's), closed at teardown, the last started first."""
    started: list[WorkflowTest] = []

    def make(*workflows: Workflow, **options: Any) -> WorkflowTest:
        t = WorkflowTest(*workflows, **options).start()
        started.append(t)
        return t

    yield make
    while started:
        started.pop().close()
