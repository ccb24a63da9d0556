"""Mail jobs the RQ worker runs: deliver one outbox row (by id: Redis holds no
address and no link)."""

from __future__ import annotations

from webapp.mail.outbox import delivery
from worker.tasks import in_app


@in_app
def deliver(outbox_id: int) -> str:
    return delivery.deliver(outbox_id)
