"""Named background jobs: a cron schedule, per-tenant fan-out, concurrency `skip`."""

from webapp.jobs.queue import enqueue, get_queue, has_sink, request_dispatch
from webapp.jobs.registry import JobSpec, get_job, job, registered_jobs

__all__ = [
    "JobSpec",
    "enqueue",
    "get_job",
    "get_queue",
    "has_sink",
    "job",
    "registered_jobs",
    "request_dispatch",
]
