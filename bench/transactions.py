"""Transactions and statements per run: `python -m bench.transactions`.

Counts what the engine sends to the database for a run, in-process, with the
real RQ worker code (`SimpleWorker`, burst, counting) on a temporary SQLite database
(or BENCH_DATABASE_URL: a scratch PostgreSQL database, its public schema is
dropped) and an embedded Redis (or BENCH_REDIS_URL, flushed):

- three_step_batch / three_step_one: `bench.workflows`' 3-step workflow
  (compute -> wait 0 s -> return), from its trigger event committed to the
  run completed (the trigger projection, the start, the steps and the
  settle): RUNS triggers committed together, then one trigger at a time,
  each run completed before the next trigger;
- resumed: a run waiting for an event, from the awaited event committed to the
  run completed (the claim and the continuation, as a resume loop runs them).

Publishing the events themselves is not counted. "transactions" counts the
write transactions (the BEGINs sent, but for SQLite's read transactions,
BEGIN DEFERRED; a PostgreSQL read sends none); "statements" every statement
sent, BEGINs included, plus every COMMIT.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, select

from bench.common import services, write_result
from bench.workflows import AWAIT, THREE_STEP

RUNS = int(os.environ.get("BENCH_TX_RUNS", "100"))
TRACE = os.environ.get("BENCH_TX_TRACE") == "1"  # print every statement counted


class Counting:
    """Counts BEGINs, statements and COMMITs on the product's engines."""

    def __init__(self, engines: list[Any]) -> None:
        self.n: Counter[str] = Counter()
        self.paused = False  # the bench's own reads are not counted
        for engine in engines:
            event.listen(engine, "before_cursor_execute", self._statement)
            event.listen(engine, "commit", self._commit)

    def _statement(self, _c: Any, _cur: Any, statement: str, *_a: Any) -> None:
        if self.paused:
            return
        self.n["statements"] += 1
        if TRACE:
            print("   ", " ".join(statement.split())[:160])
        begin = statement.lstrip().upper()
        if begin.startswith("BEGIN") and not begin.startswith("BEGIN DEFERRED"):
            self.n["transactions"] += 1  # a write transaction (SQLite reads are DEFERRED)

    def _commit(self, _conn: Any) -> None:
        if not self.paused:
            self.n["statements"] += 1

    def per_run(self, runs: int) -> dict[str, float]:
        return {k: round(self.n[k] / runs, 2) for k in ("transactions", "statements")}


def _count(name: str, status: str) -> int:
    from sqlalchemy import func

    from webapp.core import db
    from webapp.workflows.store.tables import workflow_runs

    with db.reading() as conn:
        q = select(func.count()).select_from(workflow_runs)
        q = q.where(workflow_runs.c.workflow_name == name, workflow_runs.c.status == status)
        return int(conn.execute(q).scalar_one())


def _until(done: Callable[[], bool], work: Callable[[], None], counting: Counting) -> None:
    deadline = time.monotonic() + 300
    while True:
        counting.paused = True
        try:
            if done():
                return
        finally:
            counting.paused = False
        if time.monotonic() > deadline:
            raise TimeoutError("bench step did not finish in time")
        work()


def _emit(type_: str, payloads: list[dict[str, Any]]) -> None:
    from webapp.core import db
    from webapp.eventstore import ANY, NewEvent, StreamId, append

    with db.transaction() as conn:
        for i, p in enumerate(payloads):
            stream = StreamId("default", "bench", f"{type_}-{i}-{time.time_ns()}")
            append(conn, stream, [NewEvent(type_, p)], ANY)


def _due_awaits() -> list[tuple[str, str, int]]:
    from webapp.core import clock, db
    from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

    p, r = workflow_run_pending, workflow_runs
    q = (
        select(p.c.tenant_id, p.c.run_id, p.c.step_index)
        .join(r, (r.c.tenant_id == p.c.tenant_id) & (r.c.run_id == p.c.run_id))
        .where(r.c.workflow_name == AWAIT.name, p.c.step_index >= 0, p.c.wake_at <= clock.now())
    )
    with db.reading() as conn:
        return [tuple(row) for row in conn.execute(q)]  # type: ignore[misc]


@contextmanager
def in_process(
    db_url: str, redis_url: str, instance: Path, *flows: Any
) -> Iterator[Callable[[], None]]:
    """The app in this process with `flows` registered and their triggers
    reading from now on; yields a function that runs the real RQ worker
    (`SimpleWorker`, burst) here until the queues are empty."""
    from redis import Redis
    from rq import SimpleWorker

    import webapp.workflows as wf
    from webapp import create_app
    from webapp.core.config import Config
    from webapp.eventstore import projections
    from webapp.jobs.queue import QUEUES

    env = {
        "DATABASE_URL": db_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": str(instance),
        "SECRET_KEY": "bench-secret-key-0123456789abcdef",
        "LOG_LEVEL": "WARNING",
    }
    app = create_app(Config.from_env(env))
    with app.app_context():
        for flow in flows:
            wf.register(flow)
        projections.ensure_cursors()  # the triggers read from now on
        redis = Redis.from_url(redis_url)

        def burst() -> None:
            SimpleWorker(list(QUEUES), connection=redis).work(burst=True, logging_level="ERROR")

        yield burst


def measure(db_url: str, redis_url: str, instance: Path) -> dict[str, Any]:
    from webapp.core import db
    from webapp.workflows.engine import resume

    with in_process(db_url, redis_url, instance, THREE_STEP, AWAIT) as burst:
        counting = Counting([db.get_engine()])  # the readers share its pool and events
        out: dict[str, Any] = {}

        _emit("bench.go", [{"i": i} for i in range(RUNS)])  # one transaction of triggers
        counting.n.clear()
        _until(lambda: _count(THREE_STEP.name, "completed") >= RUNS, burst, counting)
        out["three_step_batch"] = counting.per_run(RUNS)

        counting.n.clear()
        for i in range(RUNS):  # one trigger at a time, each run done before the next
            counting.paused = True
            _emit("bench.go", [{"i": i}])
            counting.paused = False
            _until(
                lambda i=i: _count(THREE_STEP.name, "completed") >= RUNS + i + 1, burst, counting
            )
        out["three_step_one"] = counting.per_run(RUNS)

        _emit("bench.await", [{"i": i} for i in range(RUNS)])
        _until(lambda: _count(AWAIT.name, "suspended") >= RUNS, burst, counting)
        for i in range(RUNS):  # each awaited event in its own transaction
            _emit("bench.ping", [{"i": i}])
        due = _due_awaits()
        assert len(due) == RUNS, f"{len(due)} of {RUNS} waits woke"
        counting.n.clear()
        for request in due:  # as a resume loop takes them, one by one
            resume.resume_requests([request])
        _until(lambda: _count(AWAIT.name, "completed") >= RUNS, burst, counting)
        out["resumed"] = counting.per_run(RUNS)
    return out


def main() -> dict[str, Any]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-tx-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        figures = measure(db_url, redis_url, tmp / "instance")
    backend = "postgresql" if db_url.startswith("postgres") else "sqlite"
    result = {
        "backend": backend,
        "python": platform.python_version(),
        "runs": RUNS,
        **figures,
    }
    print(f"per run ({backend}, {RUNS} runs)     transactions  statements")
    for case in ("three_step_batch", "three_step_one", "resumed"):
        f = figures[case]
        print(f"  {case:<28} {f['transactions']:>12} {f['statements']:>11}")
    write_result(Path(__file__).parent / "results" / "transactions.json", result)
    return result


if __name__ == "__main__":
    main()
