"""A write that commits by itself, sent on the driver's cursor: compiled once
per dialect, and nothing else of SQLAlchemy's per-statement work (execution
context, compiled-cache lookup, result set-up, autobegin and its reset),
which costs more than the driver and the database do for a one-row INSERT
(bench.writes, CPU per publish; docs/performance.md).

Made for the single-event publish on PostgreSQL (`db.statement_commits()`:
one INSERT .. RETURNING, no BEGIN, no COMMIT). The statement and its rows are
what `conn.execute(stmt)` would give; what differs is who sends it:

- when anything listens to the engine's cursor events (statement spans with
  tracing on, a test counting statements), or the server has a transaction
  open on the connection, it goes through `conn.exec_driver_sql`, as before;
- when the driver raises, the statement is sent once more through
  `exec_driver_sql` on the same connection, so SQLAlchemy's error handling
  applies as for any other statement (its exception, and a dropped
  connection invalidates the pool). That never writes twice: with no
  transaction open, a statement the server rejected had no effect, and on a
  lost connection the driver sends nothing more (psycopg refuses at once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg.pq import TransactionStatus
from sqlalchemy import Connection, Dialect, TextClause

from webapp.core.driver_reads import PerDialect, observed


class DriverWrite:
    """`stmt` (a `text()` whose parameters need no conversion: strings,
    numbers, booleans) run on the driver's cursor of a PostgreSQL connection
    with no transaction open; rows as plain tuples."""

    def __init__(self, stmt: TextClause) -> None:
        self.stmt = stmt
        self._sql = PerDialect(lambda dialect: stmt.compile(dialect=dialect).string)

    def sql(self, dialect: Dialect) -> str:
        """The SQL sent on `dialect`'s driver."""
        return self._sql(dialect)

    def all(self, conn: Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        sql = self.sql(conn.dialect)
        driver = conn.connection.driver_connection
        if observed(conn) or driver.pgconn.transaction_status != TransactionStatus.IDLE:  # type: ignore[union-attr]
            return [tuple(r) for r in conn.exec_driver_sql(sql, dict(params))]
        try:
            cursor = driver.cursor()  # type: ignore[union-attr]
            try:
                cursor.execute(sql, params)
                raw: list[tuple[Any, ...]] = cursor.fetchall()
            finally:
                cursor.close()
        except conn.dialect.loaded_dbapi.Error:
            # Once more through SQLAlchemy: its error, its disconnect handling.
            return [tuple(r) for r in conn.exec_driver_sql(sql, dict(params))]
        return raw
