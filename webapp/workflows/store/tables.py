"""Tables of the workflow runner (schema: migrations/versions/0002_workflows.py,
0004, 0007, 0009_workflow_versions, 0010_flow_control, 0014_cron_policies and
0015_run_controls, 0023_pending_lookback)."""

from datetime import UTC, datetime

from sqlalchemy import JSON, BigInteger, Boolean, Column, Index, Integer, String, Table, false, text

from webapp.core.db import UTCDateTime, metadata

# The pending set: one row per suspended step, until it is resumed or its run settles.
workflow_run_pending = Table(
    "workflow_run_pending",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("run_id", String(36), primary_key=True),
    Column("step_index", Integer, primary_key=True, autoincrement=False),
    Column("workflow_name", String(200), nullable=False),
    Column("suspension_event_type", String(150), nullable=False),
    Column("wake_at", UTCDateTime(), nullable=False),
    Column("retry_attempt", Integer, nullable=True),
    Column("definition_fingerprint", String(64), nullable=True),
    Column("wait_event_type", String(150), nullable=True),
    Column("match_expr", JSON(none_as_null=True), nullable=True),
    Column("trigger_event_type", String(150), nullable=True),
    Column("trigger_event_ref", JSON(none_as_null=True), nullable=True),
    # Its run is paused (0010): kept, but no drain takes it until the run resumes.
    Column("paused", Boolean, nullable=False, server_default=false()),
    # A row waiting for an event (a wait, 0023; a cancel-on, 0015): only events
    # after this position wake it (the trigger's, or the last one the run consumed).
    Column("after_position", BigInteger, nullable=True),
    # Its look-back is owed (0023): set when the wait registers, cleared by the
    # look-back that is complete for it; the minute sweep does the owed ones.
    Column("lookback_due", Boolean, nullable=True),
    Index("ix_workflow_run_pending_tenant_wake", "tenant_id", "wake_at"),
    Index("ix_workflow_run_pending_wait_type", "wait_event_type"),
    Index("ix_workflow_run_pending_tenant_wait_type", "tenant_id", "wait_event_type"),
    Index(
        "ix_workflow_run_pending_lookback_due",
        "tenant_id",
        postgresql_where=text("lookback_due"),
        sqlite_where=text("lookback_due"),
    ),
)

# One row per run: its status for operators (CLI), the lease of the worker
# executing it, and the step results a resumed run needs. Results live here, not
# in events, so erasing a person never has to rewrite the event log.
workflow_runs = Table(
    "workflow_runs",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("run_id", String(36), primary_key=True),
    Column("workflow_name", String(200), nullable=False),
    # queued | running | suspended | completed | failed | cancelled | skipped (run_events.RunStatus)
    Column("status", String(20), nullable=False),
    Column("step_index", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("version", Integer, nullable=False),
    Column("fingerprint", String(64), nullable=False),
    # The workflow version the run started with (and is resumed with); 0009.
    Column("definition_version", Integer, nullable=False, server_default="1"),
    Column("idempotency_key", String(500), nullable=True),
    Column("trigger_event_type", String(150), nullable=True),
    Column("trigger_event_ref", JSON(none_as_null=True), nullable=True),
    Column("started_position", Integer, nullable=False),
    Column("results", JSON, nullable=False),
    Column("error", String(300), nullable=True),
    Column("reason", String(100), nullable=True),
    Column("lease_token", String(36), nullable=True),
    Column("lease_until", UTCDateTime(), nullable=True),
    # The process holding the lease (its liveness key in Redis, 0017); NULL:
    # one without a key, whose lease only expires.
    Column("lease_holder", String(40), nullable=True),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    # The trigger event's aggregate id: whose run this is. Erasing that person
    # (`user.erased`) erases the run's results (`erasure`).
    Column("subject_id", String(200), nullable=True),  # the trigger's aggregate id
    # Flow control (0010): the concurrency key of a limited workflow's run
    # ("" for a workflow-wide limit; NULL: no limit) and its priority (1-5).
    Column("concurrency_key", String(200), nullable=True),
    Column("priority", Integer, nullable=True),
    # Paused (0010): "run" (by an operator) or "workflow" (its workflow is); NULL: not.
    Column("paused_by", String(10), nullable=True),
    # Run controls (0015): the key of a throttled, rate-limited or debounced
    # run (or of a batched or singleton run: a workflow has at most one such
    # key), and a child run's parent.
    Column("rate_key", String(200), nullable=True),
    Column("parent_run_id", String(36), nullable=True),
    Index("ix_workflow_runs_subject", "tenant_id", "subject_id"),
    Index(
        "ix_workflow_runs_slots",
        "tenant_id",
        "workflow_name",
        "concurrency_key",
        "status",
    ),
    Index("ix_workflow_runs_status_lease", "tenant_id", "status", "lease_until"),
    Index("ix_workflow_runs_name", "workflow_name"),
    Index("ix_workflow_runs_rate", "tenant_id", "workflow_name", "rate_key", "started_at"),
    Index("ix_workflow_runs_parent", "tenant_id", "parent_run_id"),
    # The operations console's runs list, newest first (migration 0007_admin).
    Index("ix_workflow_runs_tenant_started", "tenant_id", "started_at", "run_id"),
    Index("ix_workflow_runs_tenant_status_started", "tenant_id", "status", "started_at", "run_id"),
    Index(
        "ix_workflow_runs_tenant_workflow_status",
        "tenant_id",
        "workflow_name",
        "status",
        "started_at",
        "run_id",
    ),
)

# The shape (`definition.fingerprint.shape`) of every definition a run has
# started or gone on with, by fingerprint: what the deploy check diffs an open
# run against once the code has changed (0009). Written once per fingerprint.
workflow_definitions = Table(
    "workflow_definitions",
    metadata,
    Column("fingerprint", String(64), primary_key=True),
    Column("workflow_name", String(200), nullable=False),
    Column("version", Integer, nullable=False),
    Column("shape", JSON, nullable=False),
    Column("recorded_at", UTCDateTime(), nullable=False),
)

# One row per (tenant, workflow, concurrency key): what every admission to
# that key locks, so at no instant do more than `max` runs hold a slot (0010).
workflow_slot_keys = Table(
    "workflow_slot_keys",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("workflow_name", String(200), primary_key=True),
    Column("concurrency_key", String(200), primary_key=True),
)

# Paused workflows (0010): new triggers start as Queued, open runs take no step.
workflow_pauses = Table(
    "workflow_pauses",
    metadata,
    Column("workflow_name", String(200), primary_key=True),
    Column("paused_at", UTCDateTime(), nullable=False),
    Column("actor", String(200), nullable=True),
)

# The last tick of each cron workflow that fired, per tenant (0014): where a
# catch-up after downtime starts. Kept inline from `workflow.cron-ticked`.
workflow_cron_ticks = Table(
    "workflow_cron_ticks",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("workflow_name", String(200), primary_key=True),
    Column("last_tick", UTCDateTime(), nullable=False),
)


# Signals and updates sent to one run (0019): each also an event on the run's
# stream, written in the same transaction; the payload lives here only, so
# erasing the run's subject erases it. `seq` orders a run's messages.
workflow_run_messages = Table(
    "workflow_run_messages",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("run_id", String(36), primary_key=True),
    Column("message_id", String(36), primary_key=True),
    Column("seq", Integer, nullable=False),
    Column("kind", String(10), nullable=False),  # signal | update
    Column("name", String(200), nullable=False),
    Column("payload", JSON(none_as_null=True), nullable=True),
    Column("idempotency_key", String(200), nullable=True),
    # signal: sent | taken; update: requested | accepted | rejected | not-accepting
    Column("status", String(20), nullable=False),
    Column("answer", JSON(none_as_null=True), nullable=True),  # value or reason
    Column("step_index", Integer, nullable=True),  # the wait that took or answered it
    Column("sent_at", UTCDateTime(), nullable=False),
    Column("settled_at", UTCDateTime(), nullable=True),
    Index("ix_workflow_run_messages_open", "tenant_id", "run_id", "kind", "name", "status", "seq"),
    Index(
        "ux_workflow_run_messages_key",
        "tenant_id",
        "run_id",
        "kind",
        "idempotency_key",
        unique=True,
    ),
)

# A run's progress entries (`ctx.emit`, 0019): each also a `workflow.progress`
# event on the run's stream (its `seq`); the data lives here only, so erasing
# the run's subject erases it.
workflow_run_progress = Table(
    "workflow_run_progress",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("run_id", String(36), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("name", String(200), nullable=False),
    Column("data", JSON(none_as_null=True), nullable=True),
    Column("size", Integer, nullable=False),
    Column("version", Integer, nullable=False),  # its event's version on the run's stream
    Column("emitted_at", UTCDateTime(), nullable=False),
)


# -- wake_at sentinels and the start grace ---------------------------------------

# The wake time of a cancel-on row until its event comes: never due.
NEVER = datetime(9999, 1, 1, tzinfo=UTC)
# The wake time of a due row whose run (`slot="active"`) waits for a free
# slot to resume: never due until a refill makes it due again.
SLOT_WAIT = datetime(9998, 1, 1, tzinfo=UTC)


def timed(at: datetime) -> bool:
    """A real wake time (not a row that waits for its event or a slot)."""
    return at < SLOT_WAIT
