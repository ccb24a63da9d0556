"""The safe position: the highest global position below which no
transaction is still in flight, so a reader that stops there never skips an
event that commits later.

PostgreSQL draws positions from a sequence (`event_position()`, migration
0016), so writers never wait for each other's commits and positions are
drawn in order but may commit out of order. A reader sees a hole where a
number was drawn by a transaction that has not committed yet, or that
rolled back. Which of the two it is, nobody can see; but `event_position()`
gives its transaction an id *before* it draws, so whoever drew a hole below
a visible position P had its id before the snapshot that sees P was taken.
Right after that snapshot the walk takes the next transaction id H (a
statement of its own, on a connection of its own). Once a later snapshot's
`xmin` reaches H, every transaction with an id below H has ended: a hole
still missing then was rolled back and is skipped for good. (A snapshot's
`xmax` is not enough: it is one past the newest *completed* id, and a
transaction that took a newer id and is still running lies above it.) So
a reader never waits on a hole longer than the transactions that were
running when it saw it, and waits not at all when there is none (the
normal case).

The walk is shared by every reader of a process (one state per database),
starts where the last one stopped and reads only the positions committed
since: its cost follows the new events, not the length of the log.

SQLite has one writer at a time, numbered by the `event_counter` row inside
its transaction: everything a reader sees is final.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, select, text

from webapp.core import db
from webapp.eventstore.tables import event_counter

PAGE = 10_000
# How long one call may wait for the writers in flight behind a hole to end
# before it answers with the position below the hole (callers come back).
HOLE_WAIT_S = 0.05

_NEXT_XID = text("SELECT CAST(CAST(pg_current_xact_id() AS text) AS bigint)")
_SCAN = text(
    "SELECT CAST(CAST(pg_snapshot_xmin(s) AS text) AS bigint) AS xmin,"
    " pg_current_xact_id_if_assigned() IS NOT NULL AS in_tx,"
    " (SELECT last_value FROM events_position_seq) AS drawn,"
    " (SELECT max(position) FROM events) AS top,"
    " ARRAY(SELECT position FROM events WHERE position > :after"
    " ORDER BY position LIMIT :limit) AS seen"
    " FROM pg_current_snapshot() AS s"
)


@dataclass
class _State:
    safe: int = 0
    barrier: int | None = None  # everything below it is final once xmin >= horizon
    horizon: int = 0
    top: int = 0  # the highest position the last walk saw
    lock: threading.Lock = field(default_factory=threading.Lock)


_states: dict[str, _State] = {}
_states_lock = threading.Lock()


def _state(engine: Engine) -> _State:
    key = engine.url.render_as_string(hide_password=True)
    with _states_lock:
        return _states.setdefault(key, _State())


def forget() -> None:
    """Drop every remembered walk (a database recreated under the same URL)."""
    with _states_lock:
        _states.clear()


def held_back(engine: Engine) -> bool:
    """Whether the last walk stopped below a committed event (behind a hole
    whose writer had not ended): a reader should come back soon."""
    if engine.dialect.name == "sqlite":
        return False
    st = _state(engine)
    return st.safe < st.top


def safe_position(conn: Connection) -> int:
    """Every event at or below this position that will ever be visible is
    visible now. Best called on a connection outside a transaction
    (`db.reading()`): inside one that has written, the holes of writers that
    started before it stay unresolved until it ends."""
    if conn.dialect.name == "sqlite":
        value = conn.execute(
            select(event_counter.c.last_position).where(event_counter.c.id == 1)
        ).scalar()
        return int(value or 0)
    st = _state(conn.engine)
    with st.lock:
        deadline = time.monotonic() + HOLE_WAIT_S
        pause = 0.0005
        while True:
            behind, may_wait = _walk(conn, st)
            if not behind or not may_wait or time.monotonic() >= deadline:
                return st.safe
            time.sleep(pause)
            pause = min(pause * 2, 0.01)


def _walk(conn: Connection, st: _State) -> tuple[bool, bool]:
    """One step: (still below the highest visible position, waiting can help)."""
    r = conn.execute(_SCAN, {"after": st.safe, "limit": PAGE}).one()
    if r.drawn is not None and int(r.drawn) < st.safe:  # the sequence was recreated
        st.safe, st.barrier = 0, None
        return True, True
    if st.barrier is not None and int(r.xmin) >= st.horizon:
        st.safe, st.barrier = max(st.safe, st.barrier - 1), None
    for p in r.seen or ():
        if p <= st.safe:
            continue
        if p != st.safe + 1:
            break  # a hole: in flight or rolled back
        st.safe = p
    top = st.top = int(r.top or 0)
    behind = st.safe < top
    if behind and st.barrier is None:
        # Whoever drew a number below `top` had its id before this snapshot,
        # so below the next id taken now.
        st.barrier, st.horizon = top + 1, _next_xid(conn.engine)
    return behind, not r.in_tx


def _next_xid(engine: Engine) -> int:
    """The next transaction id: this statement takes it and commits at once
    (a connection outside any transaction, never the caller's)."""
    with engine.connect().execution_options(**{db.BEGIN: None}) as conn:
        return int(conn.execute(_NEXT_XID).scalar_one())
