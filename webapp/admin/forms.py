"""The console's forms: the runs filter (GET) and the action forms (CSRF only)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask_babel import gettext
from wtforms import StringField
from wtforms.validators import ValidationError

from webapp.admin.queries import STATUSES, RunFilter, valid_run_id
from webapp.ui.forms import Form
from webapp.workflows import bulk

MAX_WORKFLOW = 200


def parse_instant(text: str) -> datetime | None:
    """`2026-12-01`, `2026-12-01T08:30` or with seconds, read as UTC."""
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def parse_cursor(text: str) -> tuple[datetime, str] | None:
    stamp, _, run_id = text.partition("~")
    try:
        at = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if at.tzinfo is None or not valid_run_id(run_id):
        return None
    return at.astimezone(UTC), run_id


def cursor_text(cursor: tuple[datetime, str]) -> str:
    return f"{cursor[0].isoformat()}~{cursor[1]}"


class RunFilterForm(Form):
    """Filters of /admin/runs, in screen order; every value is checked, none trusted."""

    id_prefix = "admin-runs"
    status = StringField()
    workflow = StringField()
    tenant = StringField()
    started_after = StringField()
    started_before = StringField()
    before = StringField()

    def __init__(self, formdata: Any = None, tenants: list[str] | None = None, **kw: Any) -> None:
        self.tenants = tenants or []
        super().__init__(formdata, **kw)

    def validate_status(self, field: Any) -> None:
        if field.data and field.data not in STATUSES:
            raise ValidationError(gettext("admin.errors.status"))

    def validate_workflow(self, field: Any) -> None:
        if field.data and len(field.data) > MAX_WORKFLOW:
            raise ValidationError(gettext("admin.errors.workflowTooLong"))

    def validate_tenant(self, field: Any) -> None:
        if field.data and field.data not in self.tenants:
            raise ValidationError(gettext("admin.errors.tenant"))

    def validate_started_after(self, field: Any) -> None:
        if field.data and parse_instant(field.data) is None:
            raise ValidationError(gettext("admin.errors.startedAfter"))

    def validate_started_before(self, field: Any) -> None:
        if field.data and parse_instant(field.data) is None:
            raise ValidationError(gettext("admin.errors.startedBefore"))

    def validate_before(self, field: Any) -> None:
        if field.data and parse_cursor(field.data) is None:
            raise ValidationError(gettext("admin.errors.cursor"))

    def run_filter(self, default_tenant: str) -> RunFilter:
        """The filter of the valid fields (an invalid one is left out)."""

        def ok(name: str) -> str | None:
            f = self[name]
            return None if f.errors or not f.data else str(f.data).strip() or None

        status, after, before = ok("status"), ok("started_after"), ok("before")
        until = ok("started_before")
        return RunFilter(
            tenant=ok("tenant") or default_tenant,
            status=STATUSES[status] if status else None,
            workflow=ok("workflow"),
            started_after=parse_instant(after) if after else None,
            started_before=parse_instant(until) if until else None,
            before=parse_cursor(before) if before else None,
        )

    def bulk_filter(self, default_tenant: str) -> bulk.Filter:
        """The list's filter (not its page) as the bulk actions take it; only
        for a form without errors (an invalid field left out would widen it)."""
        assert not self.has_errors
        f = self.run_filter(default_tenant)
        return bulk.Filter(f.status, f.workflow, f.tenant, f.started_before, f.started_after)

    def filter_args(self) -> dict[str, str]:
        """The filter's fields as given (no page cursor), for links and hidden inputs."""
        return {n: str(self[n].data) for n in FILTER_FIELDS if self[n].data}


FILTER_FIELDS = ("tenant", "status", "workflow", "started_after", "started_before")


class BulkForm(RunFilterForm):
    """The confirmed bulk action: the filter as asked, and the ids of the runs
    the question counted (comma-separated; at most `most` of them)."""

    id_prefix = "admin-bulk"
    runs = StringField()

    def __init__(self, formdata: Any = None, most: int = 1, **kw: Any) -> None:
        self.most = most
        super().__init__(formdata, **kw)

    def validate_runs(self, field: Any) -> None:
        text = field.data or ""
        ids = text.split(",") if len(text) <= self.most * 37 else []
        if not ids or len(set(ids)) != len(ids) or not all(map(valid_run_id, ids)):
            raise ValidationError(gettext("admin.bulk.badForm"))

    @property
    def run_ids(self) -> list[str]:
        """The counted runs (only for a validated form)."""
        return str(self.runs.data).split(",")
