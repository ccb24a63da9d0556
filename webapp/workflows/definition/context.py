"""What a step's functions see: the run context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webapp.eventstore.records import Event


@dataclass
class RunContext:
    """The trigger event, the results so far (by step name), the attempt."""

    tenant_id: str
    run_id: str
    workflow_name: str
    trigger: Event
    results: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1
    step_index: int = 0

    def __getitem__(self, name: str) -> Any:
        return self.results[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.results.get(name, default)
