"""The minute sweep: finds every due outbox row, whether its after-commit kick
was lost (Redis down at commit), its retry time has come, or its worker died."""

from __future__ import annotations

import logging
from datetime import datetime

from webapp.core import clock
from webapp.jobs import job
from webapp.mail.outbox.delivery import sweep
from webapp.mail.outbox.store import kick

log = logging.getLogger(__name__)


def queue_due() -> int:
    """Queue a delivery for every due row; how many were due."""
    due = sweep(clock.now())
    for outbox_id in due:
        kick(outbox_id)
    if due:
        log.info("mail outbox: deliveries queued", extra={"count": len(due)})
    return len(due)


@job("mail-outbox", cron="* * * * *", per_tenant=False, concurrency="skip")
def sweep_outbox(tenant_id: str | None, tick: datetime) -> None:
    queue_due()
