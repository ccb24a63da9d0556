"""The gauges read at scrape time: from the database (open runs by status, due
wake-ups, projection lag, parked events, the mail outbox) in ONE statement, a
UNION ALL of indexed reads, and from Redis (queue depth, oldest job's age).

Each scrape of a process answers from a reading at most `METRICS_CACHE_SECONDS`
old, so Prometheus (or several of them) polling every few seconds costs the
database one statement per interval per web process. A source that does not
answer is reported as `webapp_metrics_source_up{source=...} 0` and read again
at the next scrape (a failure is never cached).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from redis import Redis
from sqlalchemy import Select, func, literal, select, union_all

from webapp.core import clock, db
from webapp.eventstore import projections
from webapp.eventstore.tables import events, parked_events, projection_cursors, tenants
from webapp.mail.outbox.tables import FAILED, PENDING, mail_outbox
from webapp.workflows.store import queries as run_queries
from webapp.workflows.store.run_events import OPEN

log = logging.getLogger(__name__)

Row = tuple[str, str, int, datetime | None]


def _tenant_ids() -> Any:
    return select(tenants.c.id).scalar_subquery()


def statement(now: datetime) -> Select[Any]:
    """(kind, key, count, oldest) rows: every database gauge in one round trip."""

    def part(kind: str, key: Any, oldest: Any) -> Any:
        return (literal(kind).label("kind"), key.label("key"), func.count().label("n"), oldest)

    mail = (
        select(*part("mail", mail_outbox.c.status, func.min(mail_outbox.c.created_at)))
        .where(mail_outbox.c.status.in_((PENDING, FAILED)))
        .group_by(mail_outbox.c.status)
    )
    runs, due = run_queries.gauge_parts(now, _tenant_ids())
    parked = select(
        *part("parked", parked_events.c.projection, func.min(parked_events.c.parked_at))
    ).group_by(parked_events.c.projection)
    parts: list[Any] = [mail, runs, due, parked]
    for proj in projections.registered():
        cursor = (
            select(projection_cursors.c.position)
            .where(projection_cursors.c.name == proj.name)
            .scalar_subquery()
        )
        parts.append(
            select(*part("lag", literal(proj.name), func.min(events.c.recorded_at))).where(
                events.c.position > cursor, events.c.type.in_(sorted(proj.event_types))
            )
        )
    return union_all(*parts)  # type: ignore[return-value]


def read_database() -> list[Row]:
    now = clock.now()
    with db.reading() as conn:
        return [(r[0], r[1], int(r[2]), r[3]) for r in conn.execute(statement(now))]


def read_redis(r: Redis, queues: Sequence[str]) -> list[tuple[str, int, float | None]]:
    """(queue, depth, enqueue time of its oldest job) per RQ queue: two round trips."""
    pipe = r.pipeline(transaction=False)
    for name in queues:
        pipe.llen(f"rq:queue:{name}")
        pipe.lindex(f"rq:queue:{name}", 0)
    answers = pipe.execute()
    pipe = r.pipeline(transaction=False)
    for head in answers[1::2]:
        pipe.hget(b"rq:job:" + head, "enqueued_at") if head else pipe.echo("")
    stamps = pipe.execute()
    out = []
    for name, depth, stamp in zip(queues, answers[0::2], stamps, strict=True):
        out.append((name, int(depth), _parse_rq_time(stamp)))
    return out


def _parse_rq_time(raw: Any) -> float | None:
    if not raw:
        return None
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Cached:
    """A reading kept `max_age` seconds; a failed reading is never kept."""

    def __init__(self, read: Callable[[], Any], max_age: float, source: str) -> None:
        self.read, self.max_age, self.source = read, max_age, source
        self._value: Any = None
        self._at = float("-inf")
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:  # one reading at a time; concurrent scrapes take its answer
            if time.monotonic() - self._at < self.max_age:
                return self._value
            try:
                self._value = self.read()
            except Exception as exc:  # an outage: report the source down, never fail the scrape
                log.warning(
                    "metrics source unavailable",
                    extra={"source": self.source, "error_class": type(exc).__name__},
                )
                return None
            self._at = time.monotonic()
            return self._value


class ScrapeGauges(Collector):
    """The database and Redis gauges, as a prometheus_client collector."""

    def __init__(self, database: Cached, redis: Cached) -> None:
        self.database, self.redis = database, redis

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "webapp_metrics_source_up",
            "Whether the last reading of a gauge source (database, redis) succeeded",
            labels=["source"],
        )
        rows = self.database.get()
        queues = self.redis.get()
        up.add_metric(["database"], 0 if rows is None else 1)
        up.add_metric(["redis"], 0 if queues is None else 1)
        yield up
        if rows is not None:
            yield from database_families(rows, clock.now())
        if queues is not None:
            yield from queue_families(queues, time.time())


def _age(now: datetime, oldest: datetime | None) -> float:
    return max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0


def database_families(rows: list[Row], now: datetime) -> Iterator[Metric]:
    by: dict[str, dict[str, tuple[int, datetime | None]]] = {}
    for kind, key, n, oldest in rows:
        by.setdefault(kind, {})[key] = (n, oldest)

    def family(name: str, doc: str, label: str | None = None) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=[label] if label else None)

    open_runs = family("webapp_workflow_runs_open", "Runs not settled, by status", "status")
    for status in OPEN:
        open_runs.add_metric([str(status)], by.get("runs", {}).get(status, (0, None))[0])
    yield open_runs
    n, oldest = by.get("due", {}).get("due", (0, None))
    yield GaugeMetricFamily(
        "webapp_workflow_due_wakeups", "Suspended steps due now and not resumed yet", value=n
    )
    yield GaugeMetricFamily(
        "webapp_workflow_oldest_due_wakeup_seconds",
        "How long the oldest due suspended step has been due (0: none)",
        value=_age(now, oldest),
    )
    lag = family(
        "webapp_projection_lag_events",
        "Events an async projection has not applied yet",
        "projection",
    )
    lag_s = family(
        "webapp_projection_lag_seconds",
        "Age of the oldest event an async projection has not applied (0: none)",
        "projection",
    )
    for name, (n, oldest) in sorted(by.get("lag", {}).items()):
        lag.add_metric([name], n)
        lag_s.add_metric([name], _age(now, oldest))
    yield lag
    yield lag_s
    parked = family(
        "webapp_projection_parked_events", "Events an async projection gave up on", "projection"
    )
    for name, (n, _) in sorted(by.get("parked", {}).items()):
        parked.add_metric([name], n)
    yield parked
    mail = by.get("mail", {})
    yield GaugeMetricFamily(
        "webapp_mail_outbox_pending",
        "Mails waiting to be sent",
        value=mail.get(PENDING, (0, None))[0],
    )
    yield GaugeMetricFamily(
        "webapp_mail_outbox_failed",
        "Mails given up on after every attempt",
        value=mail.get(FAILED, (0, None))[0],
    )
    yield GaugeMetricFamily(
        "webapp_mail_outbox_oldest_pending_seconds",
        "Age of the oldest mail waiting to be sent (0: none)",
        value=_age(now, mail.get(PENDING, (0, None))[1]),
    )


def queue_families(queues: list[tuple[str, int, float | None]], now: float) -> Iterator[Metric]:
    depth = GaugeMetricFamily("webapp_queue_jobs", "Jobs waiting in an RQ queue", labels=["queue"])
    age = GaugeMetricFamily(
        "webapp_queue_oldest_job_seconds",
        "Age of the oldest job waiting in an RQ queue (0: none)",
        labels=["queue"],
    )
    for name, n, stamp in queues:
        depth.add_metric([name], n)
        age.add_metric([name], max(0.0, now - stamp) if stamp else 0.0)
    yield depth
    yield age
