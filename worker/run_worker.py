"""The RQ worker for the app's queues: `python -m worker.run_worker`.

SimpleWorker runs jobs in this process (no fork per job): the app, its engine
and its connection pool are built once. Crash safety does not come from process
isolation but from the database: every job commits its effects with its cursor
or claim, so a killed worker loses nothing that a sweep will not redo.
"""

from __future__ import annotations

import os
import socket

from rq import SimpleWorker, Worker

from webapp.jobs.queue import QUEUES
from webapp.logs import setup
from webapp.redis_conn import redis_for
from webapp.workflows import timer
from worker.tasks import _worker_app


def main() -> None:
    app = _worker_app()
    cfg = app.config["APP_CONFIG"]
    setup(cfg.log_level, process="worker")
    worker_class: type = SimpleWorker
    if os.environ.get("WORKER_CLASS") == "fork":
        worker_class = Worker
    conn = redis_for(cfg.redis_url)
    w = worker_class(
        list(QUEUES),
        connection=conn,
        name=f"{socket.gethostname()}-{os.getpid()}",
    )
    # The precise workflow timer and the expired-lease check run beside the
    # jobs in every worker: a run whose worker died continues once any worker lives.
    timer.start_thread(app)
    with app.app_context():
        w.work(with_scheduler=False, logging_level=cfg.log_level)


if __name__ == "__main__":
    main()
