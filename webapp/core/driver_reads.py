"""A hot read sent on the driver's cursor: compiled once per dialect, its
parameters and columns converted by the columns' own types, and nothing else
of SQLAlchemy's per-statement work (execution context, compiled-cache lookup,
result set-up), which costs about twice what the driver and the database do
for a one-row read (bench.profile_web; docs/performance.md, "Web pages").

Made for the session check that every signed-in request runs. The statement
and its rows are the same as `conn.execute(stmt)` would give; what differs is
who sends it:

- when anything listens to the engine's cursor events (statement spans with
  tracing on, a test counting statements), the SQL goes through
  `conn.exec_driver_sql`, so every listener sees it, as before;
- when the driver raises, the statement is sent once more through
  `exec_driver_sql`, so SQLAlchemy's error handling applies as for any other
  statement: the error is SQLAlchemy's (the app's 503 page), and a dropped
  connection invalidates the pool. A read sent twice changes nothing.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import CompoundSelect, Connection, Dialect, Engine, Select

from webapp.core import db

Processor = Callable[[Any], Any] | None


class _Plan:
    """The statement compiled for one dialect, with its converters."""

    def __init__(self, stmt: Select[Any] | CompoundSelect[Any], dialect: Dialect) -> None:
        compiled = stmt.compile(dialect=dialect)
        self.sql = compiled.string
        binds = compiled.binds
        self.names: Sequence[str] = (
            list(compiled.positiontup or ()) if compiled.positional else list(binds)
        )
        self.positional = bool(compiled.positional)
        self.defaults = {name: bp.effective_value for name, bp in binds.items() if not bp.required}
        self.into: dict[str, Processor] = {
            name: bp.type.dialect_impl(dialect).bind_processor(dialect)
            for name, bp in binds.items()
        }
        columns = list(stmt.selected_columns)
        keys = list(stmt.selected_columns.keys())
        self.out: list[Processor] = [
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        ]
        self.row = namedtuple("Row", keys)  # type: ignore[misc]

    def parameters(self, given: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        values = {}
        for name in self.names:
            value = given[name] if name in given else self.defaults[name]
            convert = self.into[name]
            values[name] = convert(value) if convert is not None else value
        return tuple(values[n] for n in self.names) if self.positional else values

    def convert(self, raw: Sequence[Any]) -> Any:
        return self.row(*(v if f is None else f(v) for f, v in zip(self.out, raw, strict=True)))


T = TypeVar("T")


class PerDialect(Generic[T]):
    """What `build` makes of a dialect, made once per dialect (any thread)."""

    def __init__(self, build: Callable[[Dialect], T]) -> None:
        self._build = build
        self._made: dict[str, T] = {}
        self._lock = threading.Lock()

    def __call__(self, dialect: Dialect) -> T:
        made = self._made.get(dialect.name)
        if made is None:
            with self._lock:
                made = self._made.setdefault(dialect.name, self._build(dialect))
        return made


class DriverRead:
    """`stmt` (a select, or a union of selects, whose parameters are named
    `bindparam`s), run on the driver's cursor of a pooled connection; rows as
    named tuples with the select's column keys."""

    def __init__(self, stmt: Select[Any] | CompoundSelect[Any]) -> None:
        self.stmt = stmt
        self._plan = PerDialect(lambda dialect: _Plan(stmt, dialect))

    def sql(self, dialect: Dialect) -> str:
        """The SQL sent on `dialect`'s driver."""
        return self._plan(dialect).sql

    def all(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        plan = self._plan(conn.dialect)
        args = plan.parameters(params)
        if observed(conn):
            return [plan.convert(r) for r in conn.exec_driver_sql(plan.sql, args)]
        try:
            cursor = conn.connection.cursor()
            try:
                cursor.execute(plan.sql, args)
                raw = cursor.fetchall()
            finally:
                cursor.close()
        except conn.dialect.loaded_dbapi.Error:
            # Once more through SQLAlchemy: its error, its disconnect handling.
            raw = list(conn.exec_driver_sql(plan.sql, args))
        return [plan.convert(r) for r in raw]

    def read(self, params: Mapping[str, Any]) -> list[Any]:
        """`all()` on a connection of `db.reading()`'s pool, checked out and
        returned without a SQLAlchemy `Connection` around it (the pool's own
        checks on checkout still apply)."""
        engine = db.readers()
        if observed(engine):
            with db.reading() as conn:
                return self.all(conn, params)
        plan = self._plan(engine.dialect)
        args = plan.parameters(params)
        try:
            pooled = engine.raw_connection()
            try:
                cursor = pooled.driver_connection.cursor()  # type: ignore[union-attr]
                try:
                    cursor.execute(plan.sql, args)
                    raw = cursor.fetchall()
                finally:
                    cursor.close()
            finally:
                pooled.close()
        except engine.dialect.loaded_dbapi.Error:
            with db.reading() as conn:  # once more through SQLAlchemy, as in `all()`
                raw = list(conn.exec_driver_sql(plan.sql, args))
        return [plan.convert(r) for r in raw]


def observed(conn: Connection | Engine) -> bool:
    """Whether anything listens to the cursor events of this connection (or engine)."""
    dispatch = conn.dispatch
    return bool(dispatch.before_cursor_execute) or bool(dispatch.after_cursor_execute)
