"""What Redis holds right now: RQ queues, workers, the scheduler's entries.
Redis is a doorbell (the database is the truth), so this page may say
"unreachable" and every other page still works."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from redis.exceptions import RedisError
from rq import Queue, Worker
from rq.registry import FailedJobRegistry, StartedJobRegistry
from rq_scheduler import Scheduler

from webapp.core.redis_conn import get_redis
from webapp.jobs import schedule
from webapp.jobs.queue import QUEUES


@dataclass(frozen=True)
class QueueState:
    name: str
    depth: int
    started: int
    failed: int


@dataclass(frozen=True)
class WorkerState:
    name: str
    state: str
    queues: str
    current_job: str | None
    heartbeat: datetime | None


@dataclass
class RedisState:
    reachable: bool = True
    queues: list[QueueState] = field(default_factory=list)
    workers: list[WorkerState] = field(default_factory=list)
    entries: list[tuple[str, datetime | None]] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        return [job_id for job_id, at in self.entries if at is None]


def read() -> RedisState:
    try:
        conn = get_redis()
        out = RedisState()
        for name in QUEUES:
            q = Queue(name, connection=conn)
            out.queues.append(
                QueueState(
                    name,
                    q.count,
                    StartedJobRegistry(queue=q).count,
                    FailedJobRegistry(queue=q).count,
                )
            )
        for w in Worker.all(connection=conn):
            out.workers.append(
                WorkerState(
                    w.name,
                    str(w.get_state()),
                    ", ".join(w.queue_names()),
                    w.get_current_job_id(),
                    w.last_heartbeat,
                )
            )
        out.entries = schedule.entries(Scheduler(queue_name="default", connection=conn))
        return out
    except RedisError:
        return RedisState(reachable=False)
