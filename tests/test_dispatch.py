"""After-commit dispatch, its de-duplication, and the sweep that catches up when
Redis was unreachable at commit time."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint
from rq import Queue
from rq_scheduler import Scheduler
from sqlalchemy import func, select

from tests.helpers import append_one, applied_table, projection
from tests.support.burst import BurstWorker
from webapp import create_app
from webapp.core import db, embedded_redis
from webapp.core.redis_conn import redis_for
from webapp.jobs.queue import DISPATCH_FUNC
from webapp.jobs.schedule import sync_schedule


def _recorder(table):  # type: ignore[no-untyped-def]
    def apply(conn, event):  # type: ignore[no-untyped-def]
        conn.execute(table.insert().values(projection="p", event_id=event.id))

    return apply


def _count(table) -> int:  # type: ignore[no-untyped-def]
    with db.reading() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_a_burst_of_commits_queues_one_dispatch_which_applies_everything(app, redis, work):
    with applied_table() as t, projection("p.burst", ["thing.happened"], _recorder(t)):
        for _ in range(10):
            append_one()
        q = Queue("default", connection=redis)
        assert [j.func_name for j in q.jobs] == [DISPATCH_FUNC]
        work()
        assert _count(t) == 10
        assert q.count == 0
        # The flag was cleared when the job started: the next commit queues again.
        append_one()
        assert q.count == 1
        work()
        assert _count(t) == 11


def test_redis_down_at_commit_the_request_succeeds_and_the_sweep_delivers_once(
    app, make_config, tmp_path: Path
):
    sock = tmp_path / "own-redis.sock"
    proc = embedded_redis.start(sock)
    url = embedded_redis.url_for(sock)
    own = create_app(make_config(redis_url=url))
    bp = Blueprint("test_append", __name__)

    @bp.post("/test-append")
    def do_append():  # type: ignore[no-untyped-def]
        return {"id": append_one()}

    own.register_blueprint(bp)
    own.config["WTF_CSRF_ENABLED"] = False
    with own.app_context(), applied_table() as t:
        with projection("p.sweep", ["thing.happened"], _recorder(t)):
            embedded_redis.stop(proc)  # Redis goes away
            resp = own.test_client().post("/test-append")
            assert resp.status_code == 200
            event_id = resp.get_json()["id"]
            assert _count(t) == 0  # nothing dispatched: Redis was down

            proc = embedded_redis.start(sock)  # Redis is back, empty
            r = redis_for(url)
            assert Queue("default", connection=r).count == 0
            scheduler = Scheduler(queue_name="default", connection=r)
            sync_schedule(scheduler)
            scheduler.enqueue_jobs()  # the periodic sweep falls due
            BurstWorker(["default"], connection=r).work(burst=True)
            with db.reading() as conn:
                rows = list(conn.execute(select(t)))
            assert [row.event_id for row in rows] == [event_id]
            # Another sweep changes nothing: delivered exactly once.
            Queue("default", connection=r).enqueue(DISPATCH_FUNC)
            BurstWorker(["default"], connection=r).work(burst=True)
            assert _count(t) == 1
    embedded_redis.stop(proc)
