"""The RQ worker loop blocks on BLPOP through a Redis client of its own
(`webapp.core.redis_conn.worker_client`), so an idle worker neither times out on
connections its threads made earlier nor changes the threads' timeouts.

Found with `make run`: an idle worker logged "could not connect to Redis
instance: Timeout reading from socket" every 15 s. RQ raises the socket
timeout of the pool it is given above its blocking wait, but only for
connections made afterwards; on the app's shared pool the ones the worker's
threads had made kept 5 s, and a BLPOP longer than that on one of them failed."""

from __future__ import annotations

import logging
import threading
import time
import uuid

import pytest
from rq import Queue

from webapp.core.redis_conn import redis_for, worker_client
from worker.run_worker import AppSimpleWorker

WORKER_TTL = 22  # RQ's BLPOP waits worker_ttl - 15 = 7 s: longer than the app's 5 s timeout


def warm(url: str) -> None:
    """What the worker's threads (timer, resume loop, holders) do before RQ's
    loop starts: open connections on the app's shared client."""
    shared = redis_for(url)
    barrier = threading.Barrier(3)

    def use() -> None:
        barrier.wait()
        shared.blpop([f"warm-{uuid.uuid4().hex}"], timeout=0.2)

    threads = [threading.Thread(target=use) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_an_idle_worker_waits_out_its_blocking_pop_without_a_redis_error(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One full wait for a job, then none (RQ's idle limit). On the shared
    client the pop timed out after 5 s, again and again: RQ logged an error
    and slept up to 5 s between pops, so it never returned, and a job
    arriving in a sleep waited for it."""
    warm(redis_url)
    queue = f"idle-{uuid.uuid4().hex}"
    conn = worker_client(redis_url)
    w = AppSimpleWorker([queue], connection=conn, worker_ttl=WORKER_TTL)
    w.stopping = threading.Event()
    assert w.dequeue_timeout == 7
    caplog.set_level(logging.INFO, logger="rq.worker")
    got: list[object] = []

    def wait_for_a_job() -> None:
        got.append(w.dequeue_job_and_maintain_ttl(w.dequeue_timeout, w.dequeue_timeout))

    started = time.monotonic()
    waiting = threading.Thread(target=wait_for_a_job, daemon=True)
    waiting.start()
    waiting.join(w.dequeue_timeout + 20)
    waited = time.monotonic() - started
    if waiting.is_alive():  # still looping: a job ends its wait, so the thread ends too
        Queue(queue, connection=conn).enqueue("builtins.print")
        waiting.join(10)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    assert got == [None]
    assert waited >= w.dequeue_timeout - 0.5  # it waited, it did not give up early


def test_the_worker_leaves_the_shared_clients_timeout_alone(redis_url: str) -> None:
    warm(redis_url)
    shared = redis_for(redis_url)
    AppSimpleWorker([f"idle-{uuid.uuid4().hex}"], connection=worker_client(redis_url))
    assert shared.connection_pool.connection_kwargs["socket_timeout"] == 5
