"""What the workflow engine asks of the process it runs in: the host interface.

The engine is a library inside the application. It never imports the
process packages (`worker`), the metrics or the health checks; what it needs
of them comes through one small object given at start-up (`install`, done by
`create_app`, so every web, worker and `flask` process has it):

- `on_step(kind, seconds)`: one step ran (its kind as a label: `compute`,
  `send_mail`, ...), how long it took;
- `on_resume(workflow, cause, seconds)`: a claim resumed a waiting step,
  after its commit; `cause` is `"event"` (its awaited event arrived: seconds
  since that event's append) or `"timer"` (its time came: seconds late);
- `on_loop_turn(loop)`: one turn of a worker's dispatch loop (`"timer"`,
  `"resume"`), for a health check that notices a loop that hangs.

Until a host is installed each hook does nothing. The database, the clock and
the job queue are the application's infrastructure (`webapp.core.db`,
`webapp.core.clock`, `webapp.jobs`), used directly; the RQ jobs the engine
enqueues are its own (`webapp.workflows.dispatch.jobs`).

This module imports nothing of the engine, so every layer of it can call it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def _nothing(*_args: object) -> None:
    return None


@dataclass(frozen=True)
class Host:
    on_step: Callable[[str, float], None] = _nothing
    on_resume: Callable[[str, str, float], None] = _nothing
    on_loop_turn: Callable[[str], None] = _nothing


# The installed host: the engine calls `host.hooks.on_step(...)` and so on.
hooks = Host()


def install(host: Host) -> None:
    """Give the engine its host (the app factory does it, once per app)."""
    global hooks
    hooks = host


def current() -> Host:
    return hooks
