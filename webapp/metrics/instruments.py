"""Every counter and histogram the processes write (docs/operations.md,
"Monitoring", has the table). Only prometheus_client is imported here, so any
layer may count without depending on the features that read the numbers.

Labels are bounded: a workflow's name, a status, a step kind, a route
template, a limit's name; never a run id, a tenant id or an address. Gauges
read from the database and Redis are not here: they are computed at scrape
time (`webapp.metrics.gauges`).
"""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram

# Seconds, from a fast request to a slow scrape of the whole world.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Seconds, from a prompt resume to one the minute sweep found after Redis lost it.
DELAY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

HTTP_REQUESTS = Histogram(
    "webapp_http_request_duration_seconds",
    "Web requests by method, route template and status, with their latency",
    ["method", "route", "status"],
    buckets=LATENCY_BUCKETS,
)

DATABASE_WRITES_REFUSED = Counter(
    "webapp_database_writes_refused_total",
    "Writes the database refused: its disk was full or it was read-only",
    ["condition"],
)

RUNS_STARTED = Counter("webapp_workflow_runs_started_total", "Workflow runs started", ["workflow"])
RUNS_COMPLETED = Counter(
    "webapp_workflow_runs_completed_total", "Workflow runs completed", ["workflow"]
)
RUNS_FAILED = Counter("webapp_workflow_runs_failed_total", "Workflow runs failed", ["workflow"])
RUNS_CANCELLED = Counter(
    "webapp_workflow_runs_cancelled_total", "Workflow runs cancelled", ["workflow"]
)
RUNS_SKIPPED = Counter(
    "webapp_workflow_runs_skipped_total",
    "Workflow runs skipped, never started (a cron overlap, a rate limit)",
    ["workflow"],
)
RUNS_RETRIED = Counter(
    "webapp_workflow_runs_retried_total",
    "Failed workflow runs retried by an operator",
    ["workflow"],
)
STEP_RETRIES = Counter(
    "webapp_workflow_step_retries_total",
    "Step attempts that failed and were scheduled again (retry steps)",
    ["workflow"],
)
STEP_DURATION = Histogram(
    "webapp_workflow_step_duration_seconds",
    "Time to run one step, by step kind (suspending steps are not run, so not here)",
    ["kind"],
    buckets=LATENCY_BUCKETS,
)
EVENT_RESUME_LATENCY = Histogram(
    "webapp_workflow_event_resume_latency_seconds",
    "From an awaited event's append to the claim that resumed its run",
    ["workflow"],
    buckets=DELAY_BUCKETS,
)
TIMER_LATENESS = Histogram(
    "webapp_workflow_timer_lateness_seconds",
    "From a wait's (or retry's, or timeout's) due time to the claim that resumed it",
    ["workflow"],
    buckets=DELAY_BUCKETS,
)

SIGNINS = Counter(
    "webapp_signins_total",
    "Sign-in attempts with a valid form: succeeded, refused (wrong credentials or a "
    "restricted account) or rate_limited",
    ["outcome"],
)
RATE_LIMIT_HITS = Counter(
    "webapp_rate_limit_hits_total", "Requests refused by a rate limit, by limit name", ["limit"]
)

# The newest tick of each loop of each process type, across the host's processes.
HEARTBEAT = Gauge(
    "webapp_heartbeat_timestamp_seconds",
    "Unix time of the last tick of a process type's loop",
    ["process", "loop"],
    multiprocess_mode="max",
)


def heartbeat(process: str, loop: str) -> None:
    HEARTBEAT.labels(process, loop).set(time.time())
