"""Who sends the verification mail.

When the email-verification workflow (verification_workflow.py) is registered
with the workflow engine, it reacts to `user.registered` / `user.email-changed`
itself (retry, wait for `user.email-verified`, one reminder). Until then, or if
the engine is absent, the request queues a worker job after commit.
"""

from __future__ import annotations

from typing import Any

from webapp import jobs

_by_workflow = False


def set_handled_by_workflow(value: bool) -> None:
    global _by_workflow
    _by_workflow = value


def handled_by_workflow() -> bool:
    return _by_workflow


def resend(user: Any) -> bool:
    """An explicit "resend" is always a direct worker job."""
    return jobs.enqueue("worker.account_tasks.send_verification", user.tenant_id, user.id)
