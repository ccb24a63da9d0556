"""Health beyond `/healthz`: the web's readiness (`/readyz`: database and Redis
answer, migrations at head) and the liveness of the worker's and the
scheduler's own loops (`liveness`), served on a tiny HTTP port of their own
(`WORKER_HEALTH_PORT`, `SCHEDULER_HEALTH_PORT`)."""
