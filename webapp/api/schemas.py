"""The API's request and response bodies (pydantic models). The same models
validate every request and make the OpenAPI document (webapp/api/spec.py):
what the document says is what the server checks.

Requests are strict: unknown fields, wrong JSON types (a number for a
string, `1.0` or `true` for an integer) and over-long strings are refused
with the field's JSON pointer. Names are camelCase, as JSON APIs use."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from webapp.publish import MAX_ID, MAX_NAME
from webapp.workflows.definition.messages import MAX_NAME as MAX_MESSAGE_NAME
from webapp.workflows.store.run_events import RunStatus

MAX_BATCH = 100
MAX_REASON = 200
MAX_WORKFLOW = 200
MAX_UPDATE_WAIT_S = 30  # an update's caller holds a web thread while it waits
# A name: no control characters, no spaces at either end (publish's rules).
NAME_PATTERN = r"^[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?$"
CURSOR_PATTERN = r"^[0-9]{1,17}\.[0-9a-f]{32}$"
RUN_ID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def _title(name: str, _info: Any) -> str:
    return to_camel(name)


class Body(BaseModel):
    """A request body: strict, no unknown fields, camelCase only."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        field_title_generator=_title,
    )


class Query(BaseModel):
    """Query parameters: no unknown ones; values are text, read as their type."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        field_title_generator=_title,
    )


class Out(BaseModel):
    """A response body."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,  # built in Python by field name, read back from JSON by alias
        serialize_by_alias=True,
        field_title_generator=_title,
    )


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=NAME_PATTERN)]


def _integral(value: Any) -> Any:
    """JSON Schema's integer: 7.0 is one (a JSON number with no fraction), 7.5,
    "7" and true are not."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# 0, 1, 2, ... up to what the database's integer columns hold
Index = Annotated[int, Field(ge=0, le=2**31 - 1), BeforeValidator(_integral)]


# -- errors ------------------------------------------------------------------------


class FieldError(Out):
    """What is wrong with one part of the request."""

    detail: str
    pointer: str | None = Field(None, description="JSON pointer into the body, e.g. /events/0/type")
    parameter: str | None = Field(None, description="the query parameter or header")


class Problem(Out):
    """RFC 9457 problem details."""

    type: str = Field(description="a URI naming the kind of problem (docs/api.md lists them)")
    title: str
    status: int
    detail: str | None = None
    instance: str | None = Field(None, description="the request's path")
    errors: list[FieldError] | None = Field(None, description="400: every field error at once")


# -- events ------------------------------------------------------------------------


class EventIn(Body):
    """An event to publish on the stream `aggregateType/aggregateId` of the token's tenant."""

    type: Name = Field(description="the event type, e.g. order.placed")
    aggregate_type: Name = Field(description="the stream's type, e.g. order")
    aggregate_id: Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=NAME_PATTERN)]
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    expected_version: Index | None = Field(
        None,
        description="append only if the stream is at this version (0: a new stream); else 409",
    )


class BatchIn(Body):
    """Up to 100 events, appended in one transaction: all or none."""

    events: list[EventIn] = Field(min_length=1, max_length=MAX_BATCH)


class EventOut(Out):
    id: str
    type: str
    aggregate_type: str
    aggregate_id: str
    version: int = Field(description="the event's version in its stream")
    position: int = Field(description="the event's position in the whole log")
    recorded_at: datetime


class BatchOut(Out):
    events: list[EventOut]


# -- runs --------------------------------------------------------------------------


def _date_time_text(value: Any) -> Any:
    """A date-time in a query is RFC 3339 text; never a number, which pydantic
    would otherwise read as seconds since 1970."""
    if not isinstance(value, str) or not re.match(r"\d{4}-\d{2}-\d{2}[Tt ]", value):
        raise ValueError("an RFC 3339 date-time, such as 2026-12-05T10:00:00Z")
    return value


QueryDateTime = Annotated[AwareDatetime, BeforeValidator(_date_time_text)]


class RunListQuery(Query):
    status: RunStatus | None = None
    workflow: str | None = Field(None, min_length=1, max_length=MAX_WORKFLOW)
    started_after: QueryDateTime | None = Field(None, description="runs started at or after")
    started_before: QueryDateTime | None = Field(None, description="runs started before")
    cursor: str | None = Field(
        None, pattern=CURSOR_PATTERN, description="the previous page's `nextCursor`"
    )
    limit: int = Field(50, ge=1, le=100)


class RunSummary(Out):
    run_id: str
    workflow: str
    version: int
    status: RunStatus
    step_index: int
    started_at: datetime
    updated_at: datetime
    concurrency_key: str | None
    priority: int | None
    paused: bool


class RunList(Out):
    runs: list[RunSummary] = Field(description="newest first")
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class QueuePlace(Out):
    key: str | None
    position: int | None
    priority: int | None
    rate_key: str | None
    start_at: str | None


class ChildRun(Out):
    run_id: str
    workflow: str
    status: RunStatus


class PendingWait(Out):
    step_index: int
    kind: str = Field(description="step.waiting (a timer or an awaited event), deadline, cancel-on")
    wake_at: str
    awaits: str | None = Field(description="the event type awaited, if any")


class RunDetail(Out):
    run_id: str
    workflow: str
    version: int
    status: RunStatus
    paused: bool
    step_index: int
    attempt: int | None
    error: str | None
    reason: str | None
    results: dict[str, JsonValue] = Field(description="each step's result; `return` when completed")
    concurrency_key: str | None
    rate_key: str | None
    queue: QueuePlace | None
    parent: str | None = Field(description="the parent run (run_workflow), if any")
    children: list[ChildRun]
    pending: list[PendingWait] = Field(description="what the run waits for")


class CancelIn(Body):
    reason: str | None = Field(None, min_length=1, max_length=MAX_REASON)


class EmptyIn(Body):
    """No fields (an empty body is fine)."""


class RerunIn(Body):
    from_step: Index = Field(description="the step index the new run starts at")


MessageKey = Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_NAME)]
MessageName = Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_NAME, pattern=NAME_PATTERN)]


class SignalIn(Body):
    """A signal: kept in order until the run's next `wait_for_signal` of its name takes it."""

    name: MessageName = Field(description="the signal's name, e.g. approve")
    payload: JsonValue = Field(None, description="any JSON, at most 64 KiB")
    key: MessageKey | None = Field(
        None, description="exactly once per key: a second signal of the key is the first one"
    )


class SignalOut(Out):
    signal_id: str = Field(description="the same id for every signal sent with one key")


class UpdateIn(Body):
    """An update: the run's handler at its `wait_for_update` of this name
    accepts it (with a value) or rejects it (with a reason)."""

    name: MessageName = Field(description="the update's name, e.g. amount")
    payload: JsonValue = Field(None, description="any JSON, at most 64 KiB")
    key: MessageKey | None = Field(
        None, description="ask again with the same key: the first update's answer, never a second"
    )
    timeout: Annotated[float, Field(ge=0, le=MAX_UPDATE_WAIT_S)] = Field(
        10.0, description="seconds to wait for the answer (0-30)"
    )


class UpdateOut(Out):
    outcome: Literal["accepted", "rejected", "not-accepting", "timed-out"] = Field(
        description="not-accepting: the run does not wait for this update (nothing was "
        "stored); timed-out: no answer yet, ask again with the same key"
    )
    value: JsonValue = Field(None, description="accepted: what the handler returned")
    reason: str | None = Field(None, description="rejected: why")
    update_id: str | None = Field(description="null when not accepting")


# -- workflows ---------------------------------------------------------------------


class Trigger(Out):
    kind: Literal["event", "cron", "webhook", "child"]
    event_type: str | None = None
    schedule: str | None = None
    path: str | None = None


class WorkflowVersion(Out):
    version: int
    starts: bool = Field(description="new triggers start this version")


class WorkflowOut(Out):
    name: str
    paused: bool
    trigger: Trigger
    versions: list[WorkflowVersion]


class WorkflowList(Out):
    workflows: list[WorkflowOut]


class WorkflowPaused(Out):
    name: str
    paused: bool
    runs: int = Field(description="open runs paused (or resumed) by this request, every tenant")


# -- the token ---------------------------------------------------------------------


class TokenOut(Out):
    id: str
    name: str
    tenant: str
    scopes: list[str]
    created_at: datetime
