"""The step interpreter: one module per step kind, registered with `core.runs`.

Importing the package registers every kind; `run_step` / `run_steps` run them.
Suspending steps (wait, wait_for_event, retry) are not run here: the run loop
(`webapp.workflows.engine.run_loop`) turns them into suspensions.

Imports `definition`, the event store (the writing steps) and the mail and
HTTP clients; nothing of the store, the engine or the dispatch layer.
"""

from webapp.workflows.interpreter import mail, webhook, writes
from webapp.workflows.interpreter.core import (
    ReturnSignal,
    is_pure,
    json_safe,
    needs_transaction,
    resolve,
    run_step,
    run_steps,
)
from webapp.workflows.interpreter.webhook import WebhookError
from webapp.workflows.interpreter.writes import NoTransaction

__all__ = [
    "NoTransaction",
    "ReturnSignal",
    "WebhookError",
    "is_pure",
    "json_safe",
    "mail",
    "needs_transaction",
    "resolve",
    "run_step",
    "run_steps",
    "webhook",
    "writes",
]
