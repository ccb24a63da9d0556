"""The daily erase job: accounts whose deletion grace period has run out."""

from __future__ import annotations

import logging
from datetime import datetime

from webapp import clock
from webapp.accounts import erasure, signins
from webapp.jobs import job
from webapp.tenants import DEFAULT_TENANT

log = logging.getLogger(__name__)


@job("erase-accounts", cron="0 3 * * *", per_tenant=True, concurrency="skip")
def erase_accounts(tenant_id: str | None, tick: datetime) -> None:
    # Erase what is due by now (not by the tick), so a late run is never too early.
    now = clock.now()
    erased = erasure.erase_due(tenant_id or DEFAULT_TENANT, now)
    signins.purge_expired(tenant_id or DEFAULT_TENANT, now)
    log.info("accounts erased", extra={"tenant": tenant_id, "count": erased})
