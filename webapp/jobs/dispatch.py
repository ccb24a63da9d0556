"""Running one projection dispatch: what a dispatch request asks for, whether
it came as the RQ job (`worker.tasks.dispatch`) or along the workers' fast
lane (`webapp.workflows.dispatch.resume_loop`)."""

from __future__ import annotations

from typing import Any

from flask import current_app

from webapp.eventstore import projections
from webapp.jobs import queue
from webapp.redis_conn import get_redis


def run() -> dict[str, Any]:
    """Run every async projection to the safe head of the log (in an app context)."""
    # Clear the flag first: a commit after this point queues a fresh dispatch.
    get_redis().delete(queue.DISPATCH_PENDING_KEY)
    cfg = current_app.config["APP_CONFIG"]
    result = projections.run_all(max_attempts=cfg.projection_max_attempts)
    if result.retry_at is not None:
        queue.enqueue(queue.DISPATCH_FUNC, at=result.retry_at)
    return {"applied": result.applied, "parked": result.parked}
