"""Async projections: durable cursors, bounded retries, parking.

Each projection keeps a cursor row. A run locks that row, reads the next events of
its types, applies each in a savepoint and moves the cursor, all in one
transaction: effects and cursor commit together, so a crash neither applies an
event twice nor skips one. An event whose apply keeps failing is retried with
backoff (the cursor row remembers the attempts) and, after the configured number
of attempts, parked so the projection can move on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, func, insert, select, update
from sqlalchemy.exc import DBAPIError, DisconnectionError, IntegrityError, OperationalError

from webapp.core import clock, db, writable
from webapp.eventstore.positions import held_back, safe_position
from webapp.eventstore.reads import head_position, read_all
from webapp.eventstore.store import Event
from webapp.eventstore.tables import events, parked_events, projection_cursors

log = logging.getLogger(__name__)

Apply = Callable[[Connection, Event], None]


@dataclass(frozen=True)
class AsyncProjection:
    name: str
    event_types: frozenset[str]
    apply: Apply
    start: Literal["beginning", "now"] = "beginning"


_registry: dict[str, AsyncProjection] = {}


def register(
    name: str,
    event_types: Iterable[str],
    apply: Apply,
    start: Literal["beginning", "now"] = "beginning",
) -> AsyncProjection:
    p = AsyncProjection(name, frozenset(event_types), apply, start)
    _registry[name] = p
    return p


def unregister(name: str) -> None:
    _registry.pop(name, None)


def registered() -> list[AsyncProjection]:
    return list(_registry.values())


def subscribed(event_types: Iterable[str]) -> bool:
    """Whether any registered projection reads one of these event types."""
    wanted = set(event_types)
    return any(p.event_types & wanted for p in _registry.values())


def get(name: str) -> AsyncProjection:
    try:
        return _registry[name]
    except KeyError:
        raise LookupError(f"no projection named {name!r}") from None


# A cursor with nothing to apply moves up to the safe position once this far behind.
SKIP_AHEAD = 1000
HELD_BACK_RETRY = timedelta(milliseconds=200)


def backoff(attempts: int) -> timedelta:
    """1 s, 2 s, 4 s ... capped at 5 minutes."""
    return timedelta(seconds=min(2 ** max(attempts - 1, 0), 300))


def ensure_cursor(conn: Connection, p: AsyncProjection) -> None:
    exists = conn.execute(
        select(projection_cursors.c.name).where(projection_cursors.c.name == p.name)
    ).first()
    if exists:
        return
    start = head_position(conn) if p.start == "now" else 0
    try:
        with conn.begin_nested():
            conn.execute(
                insert(projection_cursors).values(
                    name=p.name, position=start, attempts=0, updated_at=clock.now()
                )
            )
    except IntegrityError:
        pass  # another process created it first


def ensure_cursors() -> None:
    """Create missing cursors; 'now' projections start at the current head."""
    with db.transaction() as conn:
        for p in registered():
            ensure_cursor(conn, p)


def _lock_cursor(conn: Connection, name: str) -> Any:
    q = select(projection_cursors).where(projection_cursors.c.name == name)
    if not db.is_sqlite(conn):
        q = q.with_for_update()  # SQLite: BEGIN IMMEDIATE already serialises writers
    return conn.execute(q).first()


@dataclass
class RunResult:
    applied: int = 0
    parked: int = 0
    retry_at: datetime | None = None


def current_safe_position() -> int:
    """Read outside any transaction: the one that locks a cursor has a
    transaction id, and holes older than that id would not resolve."""
    with db.reading() as conn:
        return safe_position(conn)


def run_projection(
    p: AsyncProjection, batch: int = 200, max_attempts: int = 5, safe: int | None = None
) -> RunResult:
    """Apply everything pending for one projection up to the safe position
    (`safe`, else read now); stop early on a retryable failure."""
    result = RunResult()
    if safe is None:
        safe = current_safe_position()
    while True:
        with db.transaction() as conn:
            ensure_cursor(conn, p)
            cur = _lock_cursor(conn, p.name)
            now = clock.now()
            if cur.retry_at is not None and cur.retry_at > now:
                result.retry_at = cur.retry_at
                return result
            pending = read_all(conn, cur.position, p.event_types, limit=batch, upto=safe)
            if not pending:
                # Nothing of its types up to `safe`: move on (far enough to be
                # worth a write), so the next read starts there.
                if cur.retry_at is not None or safe - cur.position > SKIP_AHEAD:
                    conn.execute(_cursor_update(p.name, max(cur.position, safe), 0, None, None))
                return result
            position, attempts = cur.position, cur.attempts
            for i, event in enumerate(pending):
                try:
                    with conn.begin_nested():
                        p.apply(conn, event)
                except Exception as exc:
                    if writable.refusal(exc):  # the database, not the event: no attempt counted
                        raise
                    attempts = attempts + 1 if i == 0 else 1
                    error_class = type(exc).__name__
                    log.warning(
                        "projection apply failed",
                        extra={
                            "projection": p.name,
                            "event_id": event.id,
                            "position": event.position,
                            "attempt": attempts,
                            "error_class": error_class,
                        },
                        exc_info=True,
                    )
                    if attempts < max_attempts:
                        retry_at = now + backoff(attempts)
                        conn.execute(
                            _cursor_update(p.name, position, attempts, retry_at, error_class)
                        )
                        result.retry_at = retry_at
                        return result
                    _park(conn, p.name, event, attempts, error_class)
                    result.parked += 1
                    position, attempts = event.position, 0
                    continue
                position, attempts = event.position, 0
                result.applied += 1
            if len(pending) < batch:
                position = max(position, safe)
            conn.execute(_cursor_update(p.name, position, 0, None, None))
            if len(pending) < batch:
                return result


def _cursor_update(
    name: str, position: int, attempts: int, retry_at: datetime | None, error: str | None
) -> Any:
    return (
        update(projection_cursors)
        .where(projection_cursors.c.name == name)
        .values(
            position=position,
            attempts=attempts,
            retry_at=retry_at,
            last_error_class=error,
            updated_at=clock.now(),
        )
    )


def _park(conn: Connection, name: str, event: Event, attempts: int, error_class: str) -> None:
    log.error(
        "projection event parked",
        extra={
            "projection": name,
            "event_id": event.id,
            "attempts": attempts,
            "error_class": error_class,
        },
    )
    conn.execute(
        insert(parked_events).values(
            projection=name,
            event_id=event.id,
            position=event.position,
            attempts=attempts,
            error_class=error_class,
            parked_at=clock.now(),
        )
    )


def run_all(max_attempts: int = 5) -> RunResult:
    """Catch every registered projection up; returns the earliest retry time.
    One read finds the safe position and which projections have anything to
    apply below it (`_with_work`); only those open a transaction."""
    total = RunResult()
    try:
        with db.reading() as conn:  # one walk for every projection of this run
            safe = safe_position(conn)
            todo, waiting = _with_work(conn, safe)
    except Exception as exc:  # the database is away: as a failure of each projection
        _log_failure(exc, "while reading the safe position")
        return total
    for r in [*waiting, *(_run_one(p, safe, max_attempts) for p in todo)]:
        total.applied += r.applied
        total.parked += r.parked
        if r.retry_at and (total.retry_at is None or r.retry_at < total.retry_at):
            total.retry_at = r.retry_at
    if held_back(db.get_engine()):  # an event waits behind a writer in flight: come back
        soon = clock.now() + HELD_BACK_RETRY
        total.retry_at = min(total.retry_at or soon, soon)
    return total


def _run_one(p: AsyncProjection, safe: int, max_attempts: int) -> RunResult:
    try:
        return run_projection(p, max_attempts=max_attempts, safe=safe)
    except Exception as exc:
        # Infrastructure failure (DB down, lock timeout): leave the cursor,
        # the next dispatch or sweep carries on from it.
        _log_failure(exc, projection=p.name)
        return RunResult()


def database_error(exc: BaseException) -> dict[str, str]:
    """What the database said, for a log line: the driver's error class
    (`AdminShutdown`, not SQLAlchemy's wrapper), its SQLSTATE and the first
    line of its message; never the statement or its parameters."""
    cause: BaseException = exc
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        cause = exc.orig
    elif isinstance(exc, DisconnectionError) and exc.__cause__ is not None:
        cause = exc.__cause__  # the pool's failed ping (webapp.core.db)
    fields = {"error_class": type(cause).__name__}
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate:
        fields["sqlstate"] = str(sqlstate)
    lines = str(cause).strip().splitlines()
    if lines:
        fields["error"] = lines[0][:300]
    return fields


def _log_failure(exc: Exception, during: str = "", **extra: str) -> None:
    """A database that went away (shutting down, restarting, unreachable) is
    a warning naming what the database said; anything else is an error with
    its traceback."""
    extra.update(database_error(exc))
    if _unavailable(exc):
        log.warning("projection run failed: database unavailable", extra=extra)
    else:
        log.exception(" ".join(("projection run failed", during)).strip(), extra=extra)


def _unavailable(exc: Exception) -> bool:
    """The connection was lost or could not be made: SQLAlchemy saw a
    disconnect, the server is shutting down or starting (SQLSTATE class 08,
    57P01-57P03), or the driver failed before the server answered (a
    PostgreSQL driver error without a SQLSTATE, e.g. connection refused)."""
    if isinstance(exc, DisconnectionError):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    state = str(getattr(exc.orig, "sqlstate", None) or "")
    if state[:2] == "08" or state in ("57P01", "57P02", "57P03"):
        return True
    if writable.refusal(exc):  # full or read-only: the same wait, no traceback
        return True
    sqlite = hasattr(exc.orig, "sqlite_errorcode")
    return isinstance(exc, OperationalError) and not state and not sqlite


def _with_work(conn: Connection, safe: int) -> tuple[list[AsyncProjection], list[RunResult]]:
    """The projections that have work up to `safe` (in registration order),
    and the retry times of those backing off. A projection has work when its
    cursor is missing or far enough behind to move (`SKIP_AHEAD`), or when an
    event of its types lies between its cursor and `safe`: one grouped read
    of the newest position per type above the lowest such cursor tells. The
    cursors are read without a lock: one a concurrent dispatch moved on only
    has less to do."""
    now = clock.now()
    cols = projection_cursors.c
    cursors = {r.name: r for r in conn.execute(select(cols.name, cols.position, cols.retry_at))}
    busy: set[str] = set()
    waiting: list[RunResult] = []
    idle: list[AsyncProjection] = []
    for p in registered():
        cur = cursors.get(p.name)
        if cur is not None and cur.retry_at is not None and cur.retry_at > now:
            waiting.append(RunResult(retry_at=cur.retry_at))
        elif cur is None or cur.retry_at is not None or safe - cur.position > SKIP_AHEAD:
            busy.add(p.name)
        elif cur.position < safe:
            idle.append(p)
    if idle:
        low = min(cursors[p.name].position for p in idle)
        q = (
            select(events.c.type, func.max(events.c.position))
            .where(events.c.position > low, events.c.position <= safe)
            .where(events.c.type.in_(sorted(set().union(*(p.event_types for p in idle)))))
            .group_by(events.c.type)
        )
        tops = {t: int(top) for t, top in conn.execute(q)}
        at = {p.name: cursors[p.name].position for p in idle}
        busy |= {p.name for p in idle if any(tops.get(t, 0) > at[p.name] for t in p.event_types)}
    return [p for p in registered() if p.name in busy], waiting


def status(conn: Connection) -> list[dict[str, Any]]:
    head = head_position(conn)
    out = []
    cursors = {r.name: r for r in conn.execute(select(projection_cursors))}
    for name in sorted(set(cursors) | set(_registry)):
        cur = cursors.get(name)
        p = _registry.get(name)
        position = cur.position if cur else 0
        lag = 0
        if p is not None:
            lag = int(
                conn.execute(
                    select(func.count())
                    .select_from(events)
                    .where(events.c.position > position, events.c.type.in_(p.event_types))
                ).scalar_one()
            )
        out.append(
            {
                "name": name,
                "position": position,
                "head": head,
                "lag": lag,
                "attempts": cur.attempts if cur else 0,
                "retry_at": cur.retry_at if cur else None,
                "registered": p is not None,
            }
        )
    return out
