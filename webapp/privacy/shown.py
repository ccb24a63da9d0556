"""What the privacy page shows from the database, in one statement: the newest
export job and the first page of Your activity (events and mails), read on
the driver's cursor (webapp/core/driver_reads.py) with a statement built once.

The page at `/privacy` (no cursor) is made of these rows, the user's row and
the language, so the rows themselves are part of the kept page's key
(webapp/privacy/views/center.py): whatever changes in them renders the page afresh.
The same filters as `activity.page` and `exports.latest` (one definition of
each), in the same order; `tests/privacy/test_kept_page.py` compares both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, String, bindparam, cast, literal_column, null, select, union_all

from webapp.accounts.users import User
from webapp.core.driver_reads import DriverRead
from webapp.eventstore.tables import events
from webapp.mail.outbox.tables import mail_outbox
from webapp.privacy import activity
from webapp.privacy.exports import Job
from webapp.privacy.tables import export_jobs

JOB = 2  # the row source of the export job (activity.EVENT 0, activity.MAIL 1)
_JOB_ONLY = [
    c for c in export_jobs.c if c.name not in ("tenant_id", "user_id", "status", "requested_at")
]


def _statement() -> Any:
    tenant, user = bindparam("tenant_id", type_=String), bindparam("user_id", type_=String)
    j, e, m = export_jobs.c, events.c, mail_outbox.c
    job = (
        select(
            literal_column(str(JOB), Integer).label("src"),
            literal_column("0", Integer).label("n"),
            j.status.label("kind"),
            j.requested_at.label("at"),
            *_JOB_ONLY,
        )
        .where(j.tenant_id == tenant, j.user_id == user)
        .order_by(j.requested_at.desc(), j.id.desc())
        .limit(1)
    )

    def listed(src: int, n: Any, kind: Any, at: Any, where: tuple[Any, ...], order: Any) -> Any:
        return (
            select(
                literal_column(str(src), Integer).label("src"),
                n.label("n"),
                kind.label("kind"),
                at.label("at"),
                *(cast(null(), c.type).label(c.name) for c in _JOB_ONLY),
            )
            .where(*where)
            .order_by(at.desc(), order.desc())
            .limit(activity.PAGE + 1)
        )

    parts = [
        job,
        listed(
            activity.EVENT,
            e.version,
            e.type,
            e.recorded_at,
            activity.events_where(tenant, user),
            e.version,
        ),
        listed(activity.MAIL, m.id, m.kind, m.created_at, activity.mails_where(tenant, user), m.id),
    ]
    # Each part keeps its own ORDER BY and LIMIT (SQLite wants them in a subquery).
    return union_all(*(select(*p.subquery().c) for p in parts))


_SHOWN = DriverRead(_statement())


@dataclass(frozen=True)
class Shown:
    user: User
    rows: tuple[Any, ...]  # as read: the kept page's key holds them

    @property
    def job(self) -> Job | None:
        for r in self.rows:
            if r.src == JOB:
                fields = {c.name: getattr(r, c.name) for c in _JOB_ONLY}
                fields["requested_at"] = r.at
                return Job(
                    tenant_id=self.user.tenant_id, user_id=self.user.id, status=r.kind, **fields
                )
        return None

    @property
    def activity(self) -> activity.Page:
        return activity.merged(
            activity.event_entry(r.n, r.kind, r.at)
            if r.src == activity.EVENT
            else activity.mail_entry(r.n, r.kind, r.at)
            for r in self.rows
            if r.src != JOB
        )


def read(user: User) -> Shown:
    return Shown(user, tuple(_SHOWN.read({"tenant_id": user.tenant_id, "user_id": user.id})))
